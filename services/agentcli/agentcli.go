// Package agentcli is the back door to the Cursor Agent CLI (`agent`). Each
// request runs one CLI process in a fresh empty workspace that denies the
// CLI's own tools, so it acts as a text model. It bounds the processes at
// once and kills a process's whole group when its request ends early.
package agentcli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cursor2api/models"
	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// Options configure a CLI.
type Options struct {
	// Bin is the CLI to run, a path or a name looked up in PATH.
	Bin string
	// Env is the child's whole environment (KEY=value): CURSOR_API_KEY
	// and the basics, nothing else of the gateway's.
	Env []string
	// MaxProcs is how many CLI processes may run at once.
	MaxProcs int
	// QueueTimeout is how long a request waits for a free slot before it
	// is refused with 429.
	QueueTimeout time.Duration
	// IdleTimeout ends a process that writes nothing for this long.
	IdleTimeout time.Duration
	// WorkDir holds the per-request workspaces ("": os.TempDir()).
	WorkDir string
	// ModelsTTL is how long a model list from `agent models` is reused.
	ModelsTTL time.Duration
	Logger    *slog.Logger
	// Drift is told of events of a type or subtype the reader does not
	// know; nil makes one that logs to Logger.
	Drift *utils.Drift
}

// CLI runs the Cursor Agent CLI. It implements upstream.Upstream.
type CLI struct {
	opts  Options
	slots chan struct{}
	// apiKey is CURSOR_API_KEY, scrubbed from what the CLI says before
	// it reaches a log or a client.
	apiKey string
	// running counts live child processes (for tests and logs).
	running atomic.Int64

	modelsMu sync.Mutex
	models   []string
	modelsAt time.Time

	readyMu sync.Mutex
	ready   *readyResult
	readyAt time.Time
}

// New returns a CLI; it runs nothing until asked.
func New(opts Options) *CLI {
	if opts.MaxProcs < 1 {
		opts.MaxProcs = 1
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Drift == nil {
		opts.Drift = utils.NewDrift(opts.Logger)
	}
	c := &CLI{opts: opts, slots: make(chan struct{}, opts.MaxProcs)}
	for _, kv := range opts.Env {
		if k, v, _ := strings.Cut(kv, "="); k == "CURSOR_API_KEY" {
			c.apiKey = v
		}
	}
	return c
}

// scrub removes the API key from text the CLI wrote.
func (c *CLI) scrub(s string) string {
	if c.apiKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.apiKey, "[CURSOR_API_KEY]")
}

// Running is the number of CLI processes alive now.
func (c *CLI) Running() int { return int(c.running.Load()) }

// maxStderr bounds the stderr kept from a process, for the error message
// and the log line.
const maxStderr = 8 << 10

// maxLine bounds one NDJSON line; the CLI's longest lines are its
// summary and result events, which repeat the whole answer.
const maxLine = 16 << 20

// exitGrace is how long a CLI may take to exit after its result.
const exitGrace = 5 * time.Second

// waitDelay bounds how long Wait waits for stderr to close after the
// process exits (a grandchild may hold it open).
const waitDelay = 2 * time.Second

// Stream implements upstream.Upstream: it runs one CLI process for the
// conversation and streams its answer.
func (c *CLI) Stream(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error) (*models.Usage, error) {
	release, err := c.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()

	workspace, err := newWorkspace(c.opts.WorkDir)
	if err != nil {
		return nil, models.Upstream(http.StatusBadGateway, "agent_workspace", err, "could not prepare a workspace for the Cursor Agent CLI: %v", err)
	}
	defer func() {
		if err := os.RemoveAll(workspace); err != nil {
			c.opts.Logger.Warn("agent: could not remove a workspace", "dir", workspace, "error", err)
		}
	}()
	return c.run(ctx, req, workspace, fn)
}

// acquire takes a process slot, waiting at most QueueTimeout.
func (c *CLI) acquire(ctx context.Context) (release func(), err error) {
	select {
	case c.slots <- struct{}{}:
		return func() { <-c.slots }, nil
	default:
	}
	timer := time.NewTimer(c.opts.QueueTimeout)
	defer timer.Stop()
	select {
	case c.slots <- struct{}{}:
		return func() { <-c.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		retry := max(1, int(c.opts.QueueTimeout.Round(time.Second)/time.Second))
		return nil, &models.Error{
			Status: http.StatusTooManyRequests, Kind: models.KindRateLimit, Code: "agent_busy", RetryAfter: retry,
			Message: fmt.Sprintf("all %d Cursor Agent CLI processes (AGENT_MAX_PROCS) stayed busy for %s; try again shortly",
				c.opts.MaxProcs, c.opts.QueueTimeout),
		}
	}
}

// args are the CLI's arguments: print mode, streamed JSON with partial
// text, and every confirmation skipped so that nothing waits for a human
// (--force --trust --approve-mcps; --sandbox disabled, or the CLI fails on
// its own sandbox). The prompt goes to stdin, which has no length limit,
// unlike one argument (128 KiB on Linux).
func args(model, workspace string) []string {
	return []string{"-p", "--output-format", "stream-json", "--stream-partial-output",
		"--model", model, "--workspace", workspace,
		"--force", "--trust", "--sandbox", "disabled", "--approve-mcps"}
}

// run runs one process in workspace and reads its answer.
func (c *CLI) run(ctx context.Context, req upstream.Request, workspace string, fn func(upstream.Delta) error) (*models.Usage, error) {
	log := c.opts.Logger.With("request_id", req.RequestID, "model", req.Model)
	procCtx, kill := context.WithCancelCause(ctx)
	defer kill(nil)

	cmd := exec.CommandContext(procCtx, c.opts.Bin, args(req.Model, workspace)...)
	cmd.Dir = workspace
	cmd.Env = c.opts.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // never the gateway's own environment
	}
	ownGroup(cmd)
	cmd.WaitDelay = waitDelay
	cmd.Stdin = strings.NewReader(RenderPrompt(req.Messages))
	stderr := &boundedBuffer{max: maxStderr, scrub: c.scrub}
	cmd.Stderr = stderr
	// Our own pipe rather than StdoutPipe: Wait must come after the last
	// read, and the reading may stop early.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, models.Upstream(http.StatusBadGateway, "agent_start", err, "could not start the Cursor Agent CLI: %v", err)
	}
	cmd.Stdout = stdoutW
	if err := cmd.Start(); err != nil {
		stdoutR.Close()
		stdoutW.Close()
		return nil, startError(c.opts.Bin, err)
	}
	stdoutW.Close()
	c.running.Add(1)
	pid := cmd.Process.Pid
	log.Debug("agent: started", "pid", pid, "workspace", workspace)

	// No output for IdleTimeout ends the process.
	var idle atomic.Bool
	timer := time.AfterFunc(c.opts.IdleTimeout, func() { idle.Store(true); kill(errIdle) })
	defer timer.Stop()

	rd := newReader(log, c.scrub, c.opts.Drift)
	readErr := readLines(stdoutR, func(line []byte) error {
		timer.Reset(c.opts.IdleTimeout)
		return rd.line(line, fn)
	})
	if readErr == nil {
		readErr = rd.flush(fn)
	}
	if readErr != nil {
		kill(readErr) // fn stopped the stream, or the output was unreadable
	} else if rd.result != nil {
		// The answer is complete: a CLI that lingers after it is not
		// waited for past a short grace.
		timer.Reset(min(c.opts.IdleTimeout, exitGrace))
	}
	stdoutR.Close()
	waitErr := cmd.Wait()
	// The leader is reaped; a member of its group that outlived it (a
	// tool the CLI started) still holds the group id, so it is this
	// request's and no one else's.
	_ = killGroup(pid)
	c.running.Add(-1)

	switch {
	case ctx.Err() != nil:
		log.Debug("agent: client gone, process killed", "pid", pid)
		return nil, ctx.Err()
	case readErr != nil && !errors.Is(readErr, errBadOutput):
		log.Debug("agent: stopped by the caller", "pid", pid, "reason", readErr)
		return nil, readErr
	case idle.Load() && rd.result == nil:
		log.Warn("agent: no output, process killed", "pid", pid, "timeout", c.opts.IdleTimeout, "stderr", stderr.clip(500))
		return nil, models.Upstream(http.StatusGatewayTimeout, "upstream_timeout", errIdle,
			"the Cursor Agent CLI wrote nothing for %s (TIMEOUT); try again or raise TIMEOUT", c.opts.IdleTimeout)
	}
	if errors.Is(readErr, errBadOutput) {
		log.Warn("agent: unreadable output, process killed", "pid", pid, "error", readErr)
		return nil, models.Upstream(http.StatusBadGateway, "agent_bad_output", readErr, "the Cursor Agent CLI wrote output the gateway cannot read: %v", readErr)
	}
	if rd.failed() {
		said := c.scrub(rd.result.Result)
		e := c.classify(ctx, req.Model, said+"\n"+stderr.String())
		log.Warn("agent: error result", "pid", pid, "status", e.Status, "result", utils.Clip(said, 500), "stderr", stderr.clip(500))
		return nil, e
	}
	if waitErr != nil && rd.result != nil {
		// The answer is complete; how the process ended does not change it.
		log.Warn("agent: the CLI failed after a complete answer", "pid", pid, "error", waitErr, "stderr", stderr.clip(500))
	}
	if waitErr != nil && rd.result == nil {
		e := c.classify(ctx, req.Model, stderr.String()+"\n"+rd.stray.String())
		if e.Code == "agent_failed" {
			e.Message = fmt.Sprintf("the Cursor Agent CLI failed (%v): %s", waitErr, orNone(stderr.clip(500)))
		}
		log.Warn("agent: process failed", "pid", pid, "error", waitErr, "status", e.Status, "stderr", stderr.clip(500))
		return nil, e
	}
	if rd.result == nil && !rd.wrote {
		log.Warn("agent: ended without an answer", "pid", pid, "stderr", stderr.clip(500))
		return nil, models.Upstream(http.StatusBadGateway, "upstream_incomplete", nil, "the Cursor Agent CLI ended without an answer: %s", orNone(stderr.clip(300)))
	}
	log.Debug("agent: done", "pid", pid)
	return rd.usage(), nil
}

var (
	errIdle      = errors.New("no output within TIMEOUT")
	errBadOutput = errors.New("unreadable output")
)

// startError explains a CLI that could not be started.
func startError(bin string, err error) *models.Error {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return models.Upstream(http.StatusBadGateway, "agent_not_found", err,
			"the Cursor Agent CLI %q was not found: install it (curl https://cursor.com/install -fsS | bash) or set AGENT_BIN to its path", bin)
	}
	return models.Upstream(http.StatusBadGateway, "agent_start", err, "could not start the Cursor Agent CLI %q: %v", bin, err)
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(no message)"
	}
	return s
}

// readLines calls fn with each line of r, whatever the chunks it arrives
// in, the last one even without a newline, until EOF or fn's error.
func readLines(r io.Reader, fn func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: %v", errBadOutput, err)
	}
	return nil
}

// newWorkspace makes an empty directory whose .cursor/cli.json denies the
// CLI every tool: its shell, file reads and writes, web fetches and MCP.
func newWorkspace(parent string) (string, error) {
	dir, err := os.MkdirTemp(parent, "cursor2api-agent-")
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(filepath.Join(dir, ".cursor"), 0o700); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ".cursor", "cli.json"), permissions, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// permissions is the workspace's .cursor/cli.json. Deny rules win over
// any allow rule of the user's global configuration.
var permissions = func() []byte {
	b, err := json.MarshalIndent(map[string]any{"permissions": map[string]any{
		"allow": []string{},
		"deny": []string{"Shell(*)", "Read(**)", "Read(/**)", "Read(~/**)", "Write(**)", "Write(/**)", "Write(~/**)",
			"WebFetch(*)", "Mcp(*:*)"},
	}}, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}()

// Permissions returns the .cursor/cli.json written into every workspace.
func Permissions() []byte { return append([]byte(nil), permissions...) }

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
	// scrub, when set, cleans the text before it is read.
	scrub func(string) string
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.scrub != nil {
		return b.scrub(string(b.buf))
	}
	return string(b.buf)
}

// scrubbed is s cleaned as the buffer's text is.
func (b *boundedBuffer) scrubbed(s string) string {
	if b.scrub != nil {
		return b.scrub(s)
	}
	return s
}

// clip is the kept text on one line, at most n runes.
func (b *boundedBuffer) clip(n int) string {
	return utils.Clip(strings.Join(strings.Fields(stripANSI(b.String())), " "), n)
}
