package handlers

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

func opencodeBinary(t *testing.T) string {
	return agentBinary(t, "OPENCODE_BIN", "opencode", "opencode-ai@1.18.33")
}

// opencodeProviders are opencode's provider setups for the gateway, as
// its docs give them for a custom provider in opencode.json: the
// OpenAI-compatible one (Chat Completions door) and the Anthropic one
// (Messages door). Both SDK packages ship inside opencode's binary, so
// it installs nothing at run time.
var opencodeProviders = []struct {
	name, npm, door string
	// marksErrors: the door's wire says a tool result failed (Messages'
	// is_error); chat completions has no such field.
	marksErrors bool
}{
	{"openai-compatible", "@ai-sdk/openai-compatible", "door=openai", false},
	{"anthropic", "@ai-sdk/anthropic", "door=anthropic", true},
}

// opencodeConfig is the opencode.json of the gateway at url as a custom
// provider with the SDK package npm, its key from CURSOR2API_KEY.
func opencodeConfig(url, npm string) string {
	return `{
  "$schema": "https://opencode.ai/config.json",
  "model": "cursor2api/claude-sonnet-4.6",
  "provider": {
    "cursor2api": {
      "npm": "` + npm + `",
      "name": "cursor2api",
      "options": {"baseURL": "` + url + `/v1", "apiKey": "{env:CURSOR2API_KEY}"},
      "models": {"claude-sonnet-4.6": {"name": "Claude Sonnet 4.6"}}
    }
  }
}`
}

// opencodeModel is the fake model of an opencode session: it names the
// session when asked by opencode's title agent, else answers the agent's
// loop with turns by how many tool results the prompt holds.
func opencodeModel(t *testing.T, turns ...[]string) func(int, cursortest.Request) cursortest.Response {
	return opencodeThinker(t, nil, turns...)
}

// opencodeThinker is opencodeModel thinking reasoning (native reasoning
// deltas) before each turn of the agent's loop.
func opencodeThinker(t *testing.T, reasoning []string, turns ...[]string) func(int, cursortest.Request) cursortest.Response {
	return func(_ int, req cursortest.Request) cursortest.Response {
		p := upstreamText(req)
		if strings.Contains(p, "You are a title generator") {
			return cursortest.Response{Events: cursortest.Frames(&defaultUsage, nil, []string{"Files for opencode"})}
		}
		n := min(strings.Count(p, "<tool_result id="), len(turns)-1)
		trigger := sentTrigger(req)
		deltas := make([]string, len(turns[n]))
		for i, d := range turns[n] {
			if strings.Contains(d, "TRIGGER") && trigger == "" {
				t.Errorf("turn %d: the reply needs the trigger, but the system message has none", n)
			}
			deltas[i] = strings.ReplaceAll(d, "TRIGGER", trigger)
		}
		return cursortest.Response{Events: cursortest.Frames(&defaultUsage, reasoning, deltas)}
	}
}

// agentPrompts are the prompts of the agent's loop among the upstream
// requests (not the title agent's), each its messages as "role: text".
func agentPrompts(reqs []cursortest.Request) []string {
	var prompts []string
	for _, req := range reqs {
		var prompt strings.Builder
		for _, m := range req.Messages {
			prompt.WriteString(m.Role + ": " + m.Text + "\n")
		}
		if !strings.Contains(prompt.String(), "You are a title generator") {
			prompts = append(prompts, prompt.String())
		}
	}
	return prompts
}

// TestOpencodeCLIRunsToolCalls proves the real opencode (opencode run),
// set up by its docs with either SDK package, runs the model's calls of
// its own write and bash tools and ends on the model's last answer: the
// files on disk show the calls ran, the second request of the loop that
// their results came back, opencode's events that it read the stream's
// finish reasons and usage.
func TestOpencodeCLIRunsToolCalls(t *testing.T) {
	bin := opencodeBinary(t)
	for _, p := range opencodeProviders {
		t.Run(p.name, func(t *testing.T) {
			work := t.TempDir()
			notes := filepath.Join(work, "notes.md")
			s := newStack(t, nil, opencodeModel(t,
				[]string{"I'll create both files.\nTRIGGER\n",
					`<invoke name="write">{"filePath": "` + notes + `", "content": "# Notes\n<b>bold</b> & \"done\"\n"}</invoke>` + "\n",
					`<invoke name="bash">{"command": "printf 'made by opencode' > out.txt", "description": "Create out.txt"}</invoke>`},
				[]string{"Created notes.md and out.txt."},
			))
			ev := runOpencode(t, bin, opencodeConfig(s.URL, p.npm), work, "Create notes.md and out.txt.")

			written, err := os.ReadFile(notes)
			require.NoError(t, err, "opencode did not run write:\n%s", ev.raw)
			assert.Equal(t, "# Notes\n<b>bold</b> & \"done\"\n", string(written))
			made, err := os.ReadFile(filepath.Join(work, "out.txt"))
			require.NoError(t, err, "opencode did not run bash:\n%s", ev.raw)
			assert.Equal(t, "made by opencode", string(made))
			assert.Equal(t, []string{"write:completed", "bash:completed"}, ev.tools, "%s", ev.raw)
			assert.Equal(t, "Created notes.md and out.txt.", ev.lastText, "opencode ends on the model's last answer")
			assert.Equal(t, []string{"tool-calls", "stop"}, ev.finishes, "one step a turn, each with its finish reason")
			assert.Equal(t, []string{"321/45", "321/45"}, ev.usage, "the upstream's usage reaches opencode")

			prompts := agentPrompts(s.up.Requests())
			require.Len(t, prompts, 2, "one upstream request a turn:\n%s", ev.raw)
			assert.Contains(t, prompts[0], `<function name="write">`, "opencode's tools are offered")
			assert.Contains(t, prompts[0], `"filePath"`, "with their schemas")
			assert.Contains(t, prompts[1], `<invoke name="write">`, "opencode sends the calls back as history")
			assert.Contains(t, prompts[1], `<invoke name="bash">`)
			assert.Equal(t, 2, strings.Count(prompts[1], "<tool_result id="), "with both results:\n%s", prompts[1])
			assert.Contains(t, prompts[1], "Wrote file successfully.", "write's own result")
			s.Close() // opencode may exit before the last access line is written
			logs := s.logs.String()
			assert.Equal(t, 3, strings.Count(logs, p.door+" "), "two turns and the title: %s", logs)
			assert.NotContains(t, logs, "status=4", logs)
		})
	}
}

// TestOpencodeCLIReadsThenEdits runs a three-turn session: the model reads
// a file, as opencode's tool descriptions ask before a change, then edits
// it, then answers; the read's result (the numbered file) stays in the
// history the last turn sends.
func TestOpencodeCLIReadsThenEdits(t *testing.T) {
	bin := opencodeBinary(t)
	for _, p := range opencodeProviders {
		t.Run(p.name, func(t *testing.T) {
			work := t.TempDir()
			main := filepath.Join(work, "main.go")
			require.NoError(t, os.WriteFile(main, []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644))
			s := newStack(t, nil, opencodeModel(t,
				[]string{"Reading.\nTRIGGER\n", `<invoke name="read">{"filePath": "` + main + `"}</invoke>`},
				[]string{"Now editing.\nTRIGGER\n", `<invoke name="edit">{"filePath": "` + main + `", "oldString": "println(\"hi\")", "newString": "println(\"bye\")"}</invoke>`},
				[]string{"Done: main.go says bye."},
			))
			ev := runOpencode(t, bin, opencodeConfig(s.URL, p.npm), work, "Make main.go say bye.")

			got, err := os.ReadFile(main)
			require.NoError(t, err)
			assert.Equal(t, "package main\n\nfunc main() { println(\"bye\") }\n", string(got), "opencode made the edit:\n%s", ev.raw)
			assert.Equal(t, []string{"read:completed", "edit:completed"}, ev.tools, "%s", ev.raw)
			assert.Equal(t, "Done: main.go says bye.", ev.lastText)
			prompts := agentPrompts(s.up.Requests())
			require.Len(t, prompts, 3, "one upstream request a turn:\n%s", ev.raw)
			assert.Contains(t, prompts[2], `3: func main() { println("hi") }`, "the read's result, the file, stays in the history")
			assert.Contains(t, prompts[2], `name="edit"`, "and the edit's result follows")
			s.Close()
			assert.NotContains(t, s.logs.String(), "status=4")
		})
	}
}

// TestOpencodeCLIFailedEdit has the model call edit with text the file
// does not hold: opencode reports the call failed, its error reaches the
// model (marked failed where the door's wire says so) and the model's
// answer ends the run.
func TestOpencodeCLIFailedEdit(t *testing.T) {
	bin := opencodeBinary(t)
	for _, p := range opencodeProviders {
		t.Run(p.name, func(t *testing.T) {
			work := t.TempDir()
			main := filepath.Join(work, "main.go")
			require.NoError(t, os.WriteFile(main, []byte("package main\n"), 0o644))
			s := newStack(t, nil, opencodeModel(t,
				[]string{"Editing.\nTRIGGER\n", `<invoke name="edit">{"filePath": "` + main + `", "oldString": "package other", "newString": "package x"}</invoke>`},
				[]string{"The edit failed: main.go has no package other."},
			))
			ev := runOpencode(t, bin, opencodeConfig(s.URL, p.npm), work, "Rename package other in main.go.")

			got, err := os.ReadFile(main)
			require.NoError(t, err)
			assert.Equal(t, "package main\n", string(got))
			assert.Equal(t, []string{"edit:error"}, ev.tools, "%s", ev.raw)
			assert.Equal(t, "The edit failed: main.go has no package other.", ev.lastText)
			prompts := agentPrompts(s.up.Requests())
			require.Len(t, prompts, 2, "one upstream request a turn:\n%s", ev.raw)
			result := prompts[1][strings.LastIndex(prompts[1], "<tool_result "):]
			assert.Contains(t, result, "Could not find oldString in the file", "opencode's error reaches the model")
			assert.Equal(t, p.marksErrors, strings.Contains(result, `status="error"`), "%s", result)
			s.Close()
			assert.NotContains(t, s.logs.String(), "status=4")
		})
	}
}

// TestOpencodeCLIThinking runs a -thinking model with EXPOSE_THINKING:
// the model's reasoning reaches opencode on both doors as its reasoning
// parts (signed on the Messages door, as @ai-sdk/anthropic keeps it), and
// the history opencode sends back with them, thinking blocks included, is
// taken as it is.
func TestOpencodeCLIThinking(t *testing.T) {
	bin := opencodeBinary(t)
	for _, p := range opencodeProviders {
		t.Run(p.name, func(t *testing.T) {
			work := t.TempDir()
			s := newStack(t, map[string]string{"EXPOSE_THINKING": "true"}, opencodeThinker(t, []string{"Let me ", "think."},
				[]string{"Writing.\nTRIGGER\n", `<invoke name="bash">{"command": "printf thought > out.txt", "description": "Write out.txt"}</invoke>`},
				[]string{"Done after thinking."},
			))
			config := strings.ReplaceAll(opencodeConfig(s.URL, p.npm), "claude-sonnet-4.6", "claude-sonnet-4.6-thinking")
			config = strings.Replace(config, `"name": "Claude Sonnet 4.6"`, `"name": "Claude Sonnet 4.6 thinking", "reasoning": true`, 1)
			ev := runOpencode(t, bin, config, work, "Write out.txt.", "--thinking")

			made, err := os.ReadFile(filepath.Join(work, "out.txt"))
			require.NoError(t, err, "opencode did not run bash:\n%s", ev.raw)
			assert.Equal(t, "thought", string(made))
			assert.Equal(t, []string{"Let me think.", "Let me think."}, ev.reasoning, "each turn's reasoning:\n%s", ev.raw)
			if p.door == "door=anthropic" {
				assert.Equal(t, 2, ev.signed, "thinking blocks come signed")
			}
			assert.Equal(t, "Done after thinking.", ev.lastText)
			require.Len(t, agentPrompts(s.up.Requests()), 2, "%s", ev.raw)
			s.Close()
			assert.NotContains(t, s.logs.String(), "status=4", "the reasoning opencode sends back is accepted")
		})
	}
}

// TestOpencodeCLIImages attaches a PNG (opencode run -f, which opencode
// sends as a read of the file) and has the model read it with opencode's
// read tool, whose image result the chat completions SDK sends in a user
// message after the tool's and the Anthropic one inside the tool_result.
// Both shapes are taken, and on the web chat each image is the marker the
// README documents, in its place.
func TestOpencodeCLIImages(t *testing.T) {
	bin := opencodeBinary(t)
	for _, p := range opencodeProviders {
		t.Run(p.name, func(t *testing.T) {
			work := t.TempDir()
			pic := filepath.Join(work, "red.png")
			png, err := base64.StdEncoding.DecodeString(e2ePNG)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(pic, png, 0o644))
			s := newStack(t, nil, opencodeModel(t,
				[]string{"Reading.\nTRIGGER\n", `<invoke name="read">{"filePath": "` + pic + `"}</invoke>`},
				[]string{"Both are pictures."},
			))
			// opencode sends images only to a model its config says takes them.
			config := strings.Replace(opencodeConfig(s.URL, p.npm), `"name": "Claude Sonnet 4.6"`,
				`"name": "Claude Sonnet 4.6", "attachment": true, "modalities": {"input": ["text", "image"], "output": ["text"]}`, 1)
			ev := runOpencode(t, bin, config, work, "What is in this picture and in red.png?", "-f", pic)

			assert.Equal(t, []string{"read:completed"}, ev.tools, "%s", ev.raw)
			assert.Equal(t, "Both are pictures.", ev.lastText)
			prompts := agentPrompts(s.up.Requests())
			require.Len(t, prompts, 2, "%s", ev.raw)
			const marker = "[image omitted: this model accepts text only]"
			assert.Equal(t, 1, strings.Count(prompts[0], marker), "the attached picture: %s", prompts[0])
			assert.Equal(t, 2, strings.Count(prompts[1], marker), "and the read's: %s", prompts[1])
			assert.NotContains(t, prompts[1], e2ePNG[:24], "no image data enters the prompt")
			s.Close()
			assert.NotContains(t, s.logs.String(), "status=4")
		})
	}
}

// opencodeEvents is what opencode run --format json reported: its
// events, one JSON object a line.
type opencodeEvents struct {
	raw string
	// tools are the tool parts as "tool:status".
	tools []string
	// reasoning are the texts of the reasoning parts; signed counts those
	// carrying an Anthropic signature, which opencode sends back.
	reasoning []string
	signed    int
	// lastText is the text of the last text part.
	lastText string
	// finishes and usage are each step's finish reason and its
	// "input/output" tokens.
	finishes, usage []string
}

func parseOpencodeEvents(raw string) opencodeEvents {
	ev := opencodeEvents{raw: raw}
	for _, line := range strings.Split(raw, "\n") {
		e := gjson.Parse(line)
		part := e.Get("part")
		switch e.Get("type").String() {
		case "tool_use":
			ev.tools = append(ev.tools, part.Get("tool").String()+":"+part.Get("state.status").String())
		case "text":
			ev.lastText = part.Get("text").String()
		case "reasoning":
			ev.reasoning = append(ev.reasoning, part.Get("text").String())
			if part.Get("metadata.anthropic.signature").String() != "" {
				ev.signed++
			}
		case "step_finish":
			ev.finishes = append(ev.finishes, part.Get("reason").String())
			ev.usage = append(ev.usage, part.Get("tokens.input").String()+"/"+part.Get("tokens.output").String())
		}
	}
	return ev
}

// runOpencode runs opencode run with prompt in work, configured by config
// (its opencode.json in work), and returns its JSON events. HOME and the XDG directories are fresh, so
// nothing of the machine's own opencode setup is read.
func runOpencode(t *testing.T, bin, config, work, prompt string, flags ...string) opencodeEvents {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(work, "opencode.json"), []byte(config), 0o644))
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"run", "--print-logs", "--format", "json", prompt}, flags...)...)
	cmd.Dir = work
	// opencode takes its directory from PWD, not from its working directory.
	cmd.Env = offlineEnv("PWD="+work, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "CURSOR2API_KEY=sk-opencode",
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1")
	cmd.Stdin = strings.NewReader("")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 10 * time.Second // a child left holding its output cannot hold the test
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("opencode's log:\n%s", stderr.String())
		}
	})
	out, err := cmd.Output()
	require.NoError(t, err, "opencode run: %s", out)
	return parseOpencodeEvents(string(out))
}
