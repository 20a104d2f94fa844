// Command fakeagent stands in for the Cursor Agent CLI in tests. It checks
// the arguments, workspace and environment the gateway sets, records them
// under $HOME, and replays the stream-json script named by the prompt's
// last "SCENARIO:<name>", in 7-byte pieces with no final newline.
//
// Files under $HOME: calls/<pid>.json, pids/<pid> (and <pid>-child),
// running/<pid>, peaks/<pid>-<n>, models (`agent models` output), and
// logged-out (`agent status` and chats fail as not logged in).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

const defaultModels = "\x1b[1mAvailable models\x1b[0m\n\nauto - Auto\nsonnet-4.5 - Claude 4.5 Sonnet (current)\nsonnet-4.5-thinking - Claude 4.5 Sonnet Thinking\ngpt-5 - GPT-5 (default)\n\nTip: use --model <id>\n"

func main() {
	home := os.Getenv("HOME")
	args := os.Args[1:]
	if len(args) == 0 {
		fail(64, "fakeagent: no arguments")
	}
	switch args[0] {
	case "--version":
		fmt.Println("2026.11.20-fake")
		return
	case "status":
		if exists(filepath.Join(home, "logged-out")) {
			fmt.Println("Not logged in")
			os.Exit(1)
		}
		fmt.Println("\x1b[32m✓\x1b[0m Logged in as test@example.com")
		return
	case "models":
		appendLine(filepath.Join(home, "models-calls"), strconv.Itoa(os.Getpid()))
		if exists(filepath.Join(home, "logged-out")) {
			fail(1, "Error: Not logged in. Run agent login or set CURSOR_API_KEY.")
		}
		if b, err := os.ReadFile(filepath.Join(home, "models")); err == nil {
			os.Stdout.Write(b)
			return
		}
		fmt.Print(defaultModels)
		return
	case "__sleep":
		time.Sleep(time.Hour)
		return
	}
	chat(home, args)
}

func chat(home string, args []string) {
	opts := map[string]string{}
	flags := map[string]bool{}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "-p", "--stream-partial-output", "--force", "--trust", "--approve-mcps":
			flags[a] = true
		case "--output-format", "--model", "--workspace", "--sandbox":
			if i+1 >= len(args) {
				fail(64, "fakeagent: %s needs a value", a)
			}
			opts[a] = args[i+1]
			i++
		default:
			fail(64, "fakeagent: unexpected argument %q (the prompt must come on stdin)", a)
		}
	}
	for _, f := range []string{"-p", "--stream-partial-output", "--force", "--trust", "--approve-mcps"} {
		if !flags[f] {
			fail(64, "fakeagent: missing %s", f)
		}
	}
	if opts["--output-format"] != "stream-json" || opts["--sandbox"] != "disabled" || opts["--model"] == "" {
		fail(64, "fakeagent: bad options %v", opts)
	}
	workspace := opts["--workspace"]
	cwd, _ := os.Getwd()
	if workspace == "" || cwd != workspace {
		fail(65, "fakeagent: cwd %q is not the workspace %q", cwd, workspace)
	}
	entries, _ := os.ReadDir(workspace)
	if len(entries) != 1 || entries[0].Name() != ".cursor" {
		fail(65, "fakeagent: the workspace is not empty: %v", entries)
	}
	cliJSON, err := os.ReadFile(filepath.Join(workspace, ".cursor", "cli.json"))
	if err != nil {
		fail(65, "fakeagent: no .cursor/cli.json: %v", err)
	}
	var perms struct {
		Permissions struct{ Deny []string } `json:"permissions"`
	}
	if err := json.Unmarshal(cliJSON, &perms); err != nil {
		fail(65, "fakeagent: bad cli.json: %v", err)
	}
	for _, want := range []string{"Shell(*)", "Read(/**)", "Write(**)", "WebFetch(*)", "Mcp(*:*)"} {
		if !slices.Contains(perms.Permissions.Deny, want) {
			fail(65, "fakeagent: cli.json does not deny %s", want)
		}
	}
	promptBytes, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(66, "fakeagent: reading stdin: %v", err)
	}
	prompt := string(promptBytes)

	pid := os.Getpid()
	mkdir(home, "calls", "pids", "running", "peaks")
	write(filepath.Join(home, "pids", strconv.Itoa(pid)), "")
	record, _ := json.Marshal(map[string]any{"args": args, "prompt": prompt, "env": os.Environ(), "cwd": cwd, "cli_json": string(cliJSON)})
	write(filepath.Join(home, "calls", strconv.Itoa(pid)+".json"), string(record))
	running := filepath.Join(home, "running", strconv.Itoa(pid))
	write(running, "")
	defer os.Remove(running)
	n, _ := os.ReadDir(filepath.Join(home, "running"))
	write(filepath.Join(home, "peaks", fmt.Sprintf("%d-%d", pid, len(n))), "")

	model := opts["--model"]
	if exists(filepath.Join(home, "logged-out")) {
		os.Remove(running)
		fail(1, "Error: Authentication required. Please run 'agent login' first, or set CURSOR_API_KEY environment variable.")
	}
	if model == "missing-model" {
		os.Remove(running)
		fail(1, "Cannot use this model: missing-model. Available models: auto, sonnet-4.5, gpt-5")
	}
	scenario := "hello"
	if m := regexp.MustCompile(`SCENARIO:([a-z-]+)`).FindAllStringSubmatch(prompt, -1); m != nil {
		scenario = m[len(m)-1][1]
	}
	trigger := regexp.MustCompile(`<<CALL_[A-Za-z0-9]{8}>>`).FindString(prompt)
	o := &out{}
	o.line(`{"type":"system","subtype":"init","apiKeySource":"env","cwd":%s,"session_id":"s-1","model":%s,"permissionMode":"default"}`, q(cwd), q(model))
	o.line(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":%s}]},"session_id":"s-1"}`, q(prompt))

	switch scenario {
	case "hello":
		o.raw("\x1b[2mwarming up\x1b[0m\n")
		o.deltas("Hello", ", wor", "ld!")
		o.summary("Hello, world!")
		o.result("Hello, world!", 120, 7)
	case "repeat":
		o.deltas("ha", "ha", "!")
		o.summary("haha!")
		o.result("haha!", 10, 3)
	case "segments":
		o.deltas("One.", " Two.")
		o.summary("One. Two.")
		o.line(`{"type":"tool_call","subtype":"started","call_id":"toolu_1","tool_call":{"readToolCall":{"args":{"path":"/etc/passwd"}}},"session_id":"s-1"}`)
		o.line(`{"type":"tool_call","subtype":"completed","call_id":"toolu_1","tool_call":{"readToolCall":{"args":{"path":"/etc/passwd"},"result":{"error":{"errorMessage":"denied"}}}},"session_id":"s-1"}`)
		o.deltas(" Three.")
		o.summary(" Three.")
		o.result("One. Two. Three.", 50, 9)
	case "thinking":
		o.line(`{"type":"thinking","subtype":"delta","text":"Let me ","session_id":"s-1"}`)
		o.line(`{"type":"thinking","subtype":"delta","text":"think.","session_id":"s-1"}`)
		o.line(`{"type":"thinking","subtype":"completed","session_id":"s-1"}`)
		o.deltas("Forty", "-two.")
		o.summary("Forty-two.")
		o.result("Forty-two.", 30, 4)
	case "tool":
		if trigger == "" {
			fail(67, "fakeagent: the tool scenario needs a trigger in the prompt")
		}
		spawnChild(home)
		o.deltas("Checking.\n", trigger+"\n<invoke name=\"get_weather\">", `{"city": "Par`, `is"}</invoke>`, "\nand more that nobody reads")
		o.flush()
		time.Sleep(time.Hour)
	case "auth":
		o.line(`{"type":"result","subtype":"error","is_error":true,"result":"Error: Not logged in. Run agent login or set CURSOR_API_KEY.","session_id":"s-1"}`)
		o.flush()
		os.Exit(1)
	case "ratelimit":
		o.flush()
		fail(1, "Error: You've hit your usage limit for this billing period.")
	case "stdout-error":
		o.raw("Error: Not logged in\n")
		o.flush()
		os.Exit(1)
	case "leaky":
		o.flush()
		fail(5, "Error: request failed for key %s", os.Getenv("CURSOR_API_KEY"))
	case "crash":
		o.flush()
		fail(3, "panic: something broke\n  at frobnicate (index.js:1:1)")
	case "linger":
		o.deltas("bye.")
		o.summary("bye.")
		o.result("bye.", 5, 2)
		o.flush()
		os.Stdout.Close()
		spawnChild(home)
		time.Sleep(time.Hour)
	case "late-crash":
		o.deltas("done.")
		o.summary("done.")
		o.result("done.", 5, 2)
		o.flush()
		fail(4, "Error: telemetry upload failed")
	case "crash-midway":
		o.deltas("partial ", "answer")
		o.flush()
		fail(2, "Error: connection reset by peer")
	case "hang":
		spawnChild(home)
		o.deltas("Thinking about it")
		o.flush()
		time.Sleep(time.Hour)
	case "silent":
		spawnChild(home)
		time.Sleep(time.Hour)
	case "slow":
		for _, d := range []string{"s", "l", "o", "w"} {
			o.deltas(d)
			o.flush()
			time.Sleep(20 * time.Millisecond)
		}
		o.summary("slow")
		o.result("slow", 5, 1)
	default:
		fail(64, "fakeagent: unknown scenario %q", scenario)
	}
	o.flush()
}

// spawnChild starts a grandchild in the process group that sleeps
// until killed, as a tool the real CLI runs would. It is recorded before
// any output, so that a test that stops at the first delta knows of it.
func spawnChild(home string) {
	self, _ := os.Executable()
	child := exec.Command(self, "__sleep")
	if err := child.Start(); err != nil {
		fail(72, "fakeagent: %v", err)
	}
	write(filepath.Join(home, "pids", fmt.Sprintf("%d-child", child.Process.Pid)), "")
}

// out collects the output and writes it in small pieces.
type out struct{ buf strings.Builder }

func (o *out) line(format string, args ...any) {
	o.buf.WriteString(fmt.Sprintf(format, args...))
	o.buf.WriteByte('\n')
}

func (o *out) raw(s string) { o.buf.WriteString(s) }

func (o *out) deltas(texts ...string) {
	for _, t := range texts {
		o.line(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":%s}]},"session_id":"s-1","timestamp_ms":1770823449274}`, q(t))
	}
}

func (o *out) summary(text string) {
	o.line(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":%s}]},"session_id":"s-1"}`, q(text))
}

// result ends the script; its line has no newline, so the reader must
// drain it at exit.
func (o *out) result(text string, in, outTokens int) {
	o.buf.WriteString(fmt.Sprintf(`{"type":"result","subtype":"success","is_error":false,"duration_ms":1234,"result":%s,"session_id":"s-1","usage":{"inputTokens":%d,"outputTokens":%d}}`, q(text), in, outTokens))
}

func (o *out) flush() {
	b := []byte(o.buf.String())
	o.buf.Reset()
	for len(b) > 0 {
		n := min(7, len(b))
		if _, err := os.Stdout.Write(b[:n]); err != nil {
			os.Exit(70)
		}
		b = b[n:]
		time.Sleep(200 * time.Microsecond)
	}
}

func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func mkdir(home string, names ...string) {
	for _, n := range names {
		if err := os.MkdirAll(filepath.Join(home, n), 0o755); err != nil {
			fail(71, "fakeagent: %v", err)
		}
	}
}

func write(path, s string) {
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		fail(71, "fakeagent: %v", err)
	}
}

func appendLine(path, s string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		fmt.Fprintln(f, s)
		f.Close()
	}
}
