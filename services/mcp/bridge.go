package mcp

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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"cursor2api/models"
	"cursor2api/utils"
)

// Options configure a Bridge.
type Options struct {
	Servers map[string]ServerConfig
	// Allowed are globs on the tools' full names (mcp__server__tool);
	// none: every tool.
	Allowed []string
	// CallTimeout bounds one call (0: 60 s).
	CallTimeout time.Duration
	// MaxResultBytes caps the result the model sees (0: 100 000).
	MaxResultBytes int
	// MaxResponseBytes caps what is read of one answer of an HTTP
	// server (initialize, a page of tools/list, a call's result) and of
	// one event of its stream (0: 4 MiB).
	MaxResponseBytes int
	// MaxTools caps the tools one server may offer, after the filter
	// (0: 200).
	MaxTools int
	// ConnectTimeout bounds a connection's handshake and tool listing
	// (0: 30 s).
	ConnectTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a reconnection
	// (0: 1 s and 60 s).
	MinBackoff, MaxBackoff time.Duration
	// HTTPClient reaches URL servers (nil: a client of its own).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Observe, when not nil, is told of every call: its server, tool,
	// outcome (ok, error, failed, timeout, cancelled, unavailable) and
	// how long it took (metrics).
	Observe func(server, tool, outcome string, took time.Duration)
}

// Outcomes of a call, for Observe.
const (
	OutcomeOK          = "ok"
	OutcomeError       = "error"       // the tool reported an error
	OutcomeFailed      = "failed"      // the session failed (crash, protocol)
	OutcomeTimeout     = "timeout"     // CallTimeout passed
	OutcomeCancelled   = "cancelled"   // the client left
	OutcomeUnavailable = "unavailable" // the server is not connected
)

// States of a server, for /ready.
const (
	StateConnecting = "connecting"
	StateReady      = "ready"
	StateDown       = "down"
)

// Bridge keeps the configured MCP servers connected and runs their tools.
type Bridge struct {
	opts Options
	// remote: the servers are a request's, whose client must learn
	// nothing of the network from their failures.
	remote  bool
	servers []*server
	byName  map[string]*server
	logger  *slog.Logger

	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// server is one configured server and its current session.
type server struct {
	name string
	cfg  ServerConfig

	mu      sync.Mutex
	state   string
	lastErr string
	session *sdk.ClientSession
	tools   []*sdk.Tool

	// tooLarge is set when an answer of the server passed
	// MaxResponseBytes (limitTransport).
	tooLarge atomic.Bool
}

// New returns a Bridge for opts.Servers; Start connects them.
func New(opts Options) *Bridge {
	opts.CallTimeout = utils.Default(opts.CallTimeout, 60*time.Second)
	opts.MaxResultBytes = utils.Default(opts.MaxResultBytes, 100_000)
	opts.ConnectTimeout = utils.Default(opts.ConnectTimeout, 30*time.Second)
	opts.MaxResponseBytes = utils.Default(opts.MaxResponseBytes, 4<<20)
	opts.MaxTools = utils.Default(opts.MaxTools, 200)
	opts.MinBackoff = utils.Default(opts.MinBackoff, time.Second)
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(60*time.Second, opts.MinBackoff)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Bridge{opts: opts, byName: map[string]*server{}, logger: opts.Logger}
	for _, name := range sortedNames(opts.Servers) {
		s := &server{name: name, cfg: opts.Servers[name], state: StateConnecting}
		b.servers = append(b.servers, s)
		b.byName[name] = s
	}
	return b
}

// Start connects every server in the background and keeps it connected
// until ctx ends or Close is called. It returns at once: a server that is
// slow or dead never holds up a request, its tools are just absent.
func (b *Bridge) Start(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil {
		return
	}
	ctx, b.cancel = context.WithCancel(ctx)
	for _, s := range b.servers {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.keep(ctx, s)
		}()
	}
}

// Close disconnects every server, ending their child processes, and waits
// for it.
func (b *Bridge) Close() {
	b.mu.Lock()
	if b.cancel != nil {
		b.cancel()
	}
	b.mu.Unlock()
	b.wg.Wait()
	// The sessions Dial opened, which no keep loop owns.
	for _, s := range b.servers {
		if cs, _, _ := s.current(); cs != nil {
			cs.Close()
			s.set(StateDown, "closed", nil, nil)
		}
		if s.cfg.client != nil {
			s.cfg.client.CloseIdleConnections()
		}
	}
}

// keep connects s, waits for its session to end, and connects it again
// after a backoff, until ctx ends.
func (b *Bridge) keep(ctx context.Context, s *server) {
	log := b.logger.With("mcp_server", s.name)
	backoff := b.opts.MinBackoff
	for {
		started := time.Now()
		cs, proc, tools, err := b.connect(ctx, s)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.set(StateDown, scrubErr(err), nil, nil)
			log.Warn("MCP server unavailable; retrying", "error", scrubErr(err), "retry_in", backoff)
		} else {
			s.set(StateReady, "", cs, tools)
			log.Info("MCP server connected", "tools", len(tools))
			ended := make(chan struct{})
			go func() { cs.Wait(); close(ended) }()
			select {
			case <-ctx.Done():
				s.set(StateDown, "gateway stopping", nil, nil)
				cs.Close()
				<-ended
				proc.stop()
				return
			case <-ended:
			}
			cs.Close()
			proc.stop()
			s.set(StateDown, "the session ended", nil, nil)
			log.Warn("MCP server disconnected; reconnecting", "retry_in", backoff)
			if time.Since(started) > b.opts.MaxBackoff {
				backoff = b.opts.MinBackoff
			}
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, b.opts.MaxBackoff)
	}
}

func (s *server) set(state, lastErr string, cs *sdk.ClientSession, tools []*sdk.Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.lastErr, s.session, s.tools = state, lastErr, cs, tools
}

func (s *server) current() (*sdk.ClientSession, []*sdk.Tool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session, s.tools, s.state
}

// connect opens a session to s and lists its tools (those Allowed),
// all within ConnectTimeout.
func (b *Bridge) connect(ctx context.Context, s *server) (*sdk.ClientSession, *process, []*sdk.Tool, error) {
	cctx, cancel := context.WithTimeout(ctx, b.opts.ConnectTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "cursor2api", Version: "1"}, nil)
	var proc *process
	var cs *sdk.ClientSession
	var err error
	s.tooLarge.Store(false)
	switch {
	case s.cfg.stdio():
		var cmd *exec.Cmd
		cmd, proc, err = b.command(s)
		if err != nil {
			return nil, nil, nil, err
		}
		cs, err = client.Connect(cctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
		if err != nil {
			proc.stop()
			return nil, nil, nil, fmt.Errorf("starting %q: %w", s.cfg.Command, err)
		}
	case s.cfg.Type == "sse":
		cs, err = client.Connect(cctx, &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: b.httpClient(s), MaxEventSize: b.opts.MaxResponseBytes}, nil)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("connecting over SSE: %v", b.cause(s, err))
		}
	default:
		cs, err = client.Connect(cctx, &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: b.httpClient(s), DisableStandaloneSSE: true, MaxRetries: -1,
			MaxEventSize: b.opts.MaxResponseBytes}, nil)
		if err != nil && cctx.Err() == nil && !s.tooLarge.Load() {
			// Servers of the older protocol speak SSE only.
			var sseErr error
			cs, sseErr = client.Connect(cctx, &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: b.httpClient(s), MaxEventSize: b.opts.MaxResponseBytes}, nil)
			if sseErr != nil {
				return nil, nil, nil, fmt.Errorf("connecting over streamable HTTP: %v (and over SSE: %v)", b.cause(s, err), sseErr)
			}
			err = nil
		}
		if err != nil {
			// %v: a client learns nothing of why a handshake failed (Dial).
			return nil, nil, nil, fmt.Errorf("connecting over streamable HTTP: %v", b.cause(s, err))
		}
	}
	tools, err := b.listTools(cctx, s, cs)
	if err != nil {
		cs.Close()
		proc.stop()
		return nil, nil, nil, err
	}
	return cs, proc, tools, nil
}

// listTools lists the tools of s that Allowed lets through: at most
// maxPages pages, at most MaxTools tools.
func (b *Bridge) listTools(ctx context.Context, s *server, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	var tools []*sdk.Tool
	params := &sdk.ListToolsParams{}
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, &publicError{fmt.Sprintf("its tools/list goes on past %d pages", maxPages)}
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", b.cause(s, err))
		}
		for _, t := range res.Tools {
			if allowed(b.opts.Allowed, ToolName(s.name, t.Name)) && (!s.cfg.filtered || slices.Contains(s.cfg.only, t.Name)) {
				tools = append(tools, t)
			}
		}
		if len(tools) > b.opts.MaxTools {
			return nil, &publicError{fmt.Sprintf("it offers more than %d tools (the gateway's MCP_MAX_TOOLS); name the ones to offer", b.opts.MaxTools)}
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
}

// cause is err, or the publicError of an answer past MaxResponseBytes
// when that is what broke the session (the SDK's error loses it).
func (b *Bridge) cause(s *server, err error) error {
	if s.tooLarge.Load() {
		return fmt.Errorf("%w (%v)", tooLarge(b.opts.MaxResponseBytes), err)
	}
	return err
}

// command builds the child process of a stdio server, in a process group
// of its own so that stopping it stops what it started (npx runs node).
func (b *Bridge) command(s *server) (*exec.Cmd, *process, error) {
	cmd := exec.Command(os.ExpandEnv(s.cfg.Command), expandAll(s.cfg.Args)...)
	cmd.Dir = s.cfg.Cwd
	cmd.Env = os.Environ()
	for k, v := range s.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+os.ExpandEnv(v))
	}
	setGroup(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("starting %q: %w", s.cfg.Command, err)
	}
	p := &process{cmd: cmd, logged: make(chan struct{})}
	log := b.logger.With("mcp_server", s.name)
	go func() {
		defer close(p.logged)
		logLines(stderr, log)
	}()
	return cmd, p, nil
}

// process is a stdio server's child process.
type process struct {
	cmd    *exec.Cmd
	logged chan struct{} // closed when its stderr is drained
}

// stop kills what is left of the process group (the session's Close
// ended the child itself) and waits for its stderr to close.
func (p *process) stop() {
	if p == nil {
		return
	}
	if p.cmd.Process != nil {
		killGroup(p.cmd.Process.Pid)
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	}
	select {
	case <-p.logged:
	case <-time.After(2 * time.Second):
	}
}

// logLines logs what a server writes to stderr, line by line, clipped.
func logLines(r io.Reader, log *slog.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64*1024)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 500 {
			line = line[:500] + "…"
		}
		log.Debug("MCP server stderr", "line", line)
	}
	io.Copy(io.Discard, r)
}

func expandAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = os.ExpandEnv(a)
	}
	return out
}

// httpClient is the bridge's client with the server's headers added
// and its answers capped (limitTransport).
func (b *Bridge) httpClient(s *server) *http.Client {
	base := b.opts.HTTPClient
	if s.cfg.client != nil {
		base = s.cfg.client
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	rt = limitTransport{base: rt, max: int64(b.opts.MaxResponseBytes), exceeded: &s.tooLarge}
	c.Transport = rt
	if len(s.cfg.Headers) == 0 {
		return &c
	}
	h := make(http.Header, len(s.cfg.Headers))
	for k, v := range s.cfg.Headers {
		if s.cfg.client == nil {
			// Only the operator's configuration reads the environment: a
			// request's headers must not reveal it.
			v = os.ExpandEnv(v)
		}
		h.Set(k, v)
	}
	c.Transport = headerTransport{base: rt, header: h}
	return &c
}

type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// Tools returns the tools of the connected servers, named
// mcp__<server>__<tool>, with their schemas as the servers gave them.
func (b *Bridge) Tools() []models.Tool {
	var out []models.Tool
	for _, s := range b.servers {
		_, tools, _ := s.current()
		for _, t := range tools {
			out = append(out, models.Tool{Name: ToolName(s.name, t.Name), Description: t.Description, Parameters: schema(t.InputSchema),
				Annotations: annotations(t.Annotations)})
		}
	}
	return out
}

// annotations are a tool's annotations as JSON, nil without any.
func annotations(a *sdk.ToolAnnotations) json.RawMessage {
	if a == nil {
		return nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil
	}
	return b
}

func schema(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return data
}

// ToolInfo describes one tool for GET /v1/tools.
type ToolInfo struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Server      string          `json:"server"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Catalog lists the tools of the connected servers.
func (b *Bridge) Catalog() []ToolInfo {
	out := []ToolInfo{}
	for _, s := range b.servers {
		_, tools, _ := s.current()
		for _, t := range tools {
			out = append(out, ToolInfo{ID: ToolName(s.name, t.Name), Name: t.Name, Server: s.name, Description: t.Description, InputSchema: schema(t.InputSchema)})
		}
	}
	return out
}

// ServerState is one server's state, for /ready.
type ServerState struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	State     string `json:"state"`
	Tools     int    `json:"tools"`
	Error     string `json:"error,omitempty"`
}

// States reports every server's state.
func (b *Bridge) States() []ServerState {
	out := make([]ServerState, 0, len(b.servers))
	for _, s := range b.servers {
		s.mu.Lock()
		st := ServerState{Name: s.name, Transport: "http", State: s.state, Tools: len(s.tools), Error: s.lastErr}
		s.mu.Unlock()
		switch {
		case s.cfg.stdio():
			st.Transport = "stdio"
		case s.cfg.Type == "sse":
			st.Transport = "sse"
		}
		out = append(out, st)
	}
	return out
}

// Has reports whether name is a tool of a configured server.
func (b *Bridge) Has(name string) bool {
	server, _, ok := SplitName(name)
	return ok && b.byName[server] != nil
}

// Run calls the tool name with arguments (a JSON object) and returns its
// result as text for the model. Every failure is a result too (isError),
// saying what went wrong, so that the model can go on: a server that is
// down, a call that failed or timed out. The output is clipped at
// MaxResultBytes with a note.
func (b *Bridge) Run(ctx context.Context, name, arguments string) (output string, isError bool) {
	serverName, tool, _ := SplitName(name)
	start := time.Now()
	outcome := OutcomeOK
	defer func() {
		if b.opts.Observe != nil {
			b.opts.Observe(serverName, tool, outcome, time.Since(start))
		}
		b.logger.Info("MCP call", "mcp_server", serverName, "tool", tool, "outcome", outcome, "took", time.Since(start).Round(time.Millisecond))
	}()
	s := b.byName[serverName]
	if s == nil {
		outcome = OutcomeUnavailable
		return fmt.Sprintf("no MCP server %q is configured", serverName), true
	}
	cs, _, state := s.current()
	if cs == nil {
		outcome = OutcomeUnavailable
		return fmt.Sprintf("the MCP server %q is not connected (%s); try again later", serverName, state), true
	}
	var args map[string]any
	if arguments != "" {
		if err := json.Unmarshal([]byte(arguments), &args); err != nil {
			outcome = OutcomeFailed
			return "the arguments are not a JSON object: " + err.Error(), true
		}
	}
	cctx, cancel := context.WithTimeout(ctx, b.opts.CallTimeout)
	defer cancel()
	s.tooLarge.Store(false)
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err == nil {
		// Joining a result of many parts is work of the call too: it
		// stops with the call's time.
		output, err = resultText(cctx, res, b.opts.MaxResultBytes)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		outcome = OutcomeCancelled
		return "the call was cancelled", true
	case err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
		outcome = OutcomeTimeout
		return fmt.Sprintf("the tool did not answer within %s (the gateway's MCP_CALL_TIMEOUT)", b.opts.CallTimeout), true
	case err != nil:
		outcome = OutcomeFailed
		err = b.cause(s, err)
		b.logger.Warn("MCP call failed", "mcp_server", serverName, "tool", tool, "error", scrubErr(err))
		return "the tool failed: " + b.failure(err), true
	}
	if res.IsError {
		outcome = OutcomeError
	}
	return output, res.IsError
}

// failure is what the model (and so the client) is told of a failed
// call: the server's own JSON-RPC error or a limit the gateway set, and
// for the rest, which is the transport's, no detail (it is logged).
func (b *Bridge) failure(err error) string {
	var pe *publicError
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &pe):
		return pe.msg
	case errors.As(err, &we):
		return Scrub(we.Message)
	case b.remote:
		return "the MCP server did not answer as an MCP server"
	}
	return Scrub(err.Error())
}

// resultText renders a call's content as text for the model, at most
// limit bytes of it (with a note when there was more). A result may have
// tens of thousands of parts: the text is built once, stops at the cap,
// and the loop ends with ctx.
func resultText(ctx context.Context, res *sdk.CallToolResult, limit int) (string, error) {
	var b strings.Builder
	total, parts := 0, 0
	add := func(p string) {
		parts++
		if parts > 1 {
			total++
			if b.Len() <= limit {
				b.WriteByte('\n')
			}
		}
		total += len(p)
		if room := limit + 1 - b.Len(); room > 0 {
			b.WriteString(utils.CutRunes(p, room))
		}
	}
	n := 0
	for i, c := range res.Content {
		if i%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		n++
		switch c := c.(type) {
		case *sdk.TextContent:
			add(c.Text)
		case *sdk.ImageContent:
			add(fmt.Sprintf("[image %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			add(fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			add(fmt.Sprintf("[resource %s: %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				add(c.Resource.Text)
			} else if c.Resource != nil {
				add(fmt.Sprintf("[resource %s, %s]", c.Resource.URI, c.Resource.MIMEType))
			} else {
				n--
			}
		default:
			if data, err := json.Marshal(c); err == nil {
				add(string(data))
			} else {
				n--
			}
		}
	}
	if n == 0 && res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			add(string(data))
		}
	}
	out := b.String()
	if total <= limit {
		return out, nil
	}
	cut := utils.CutRunes(out, limit)
	return cut + fmt.Sprintf("\n[the gateway clipped this result: %d of %d bytes shown (MCP_MAX_RESULT_BYTES)]", len(cut), total), nil
}
