package chat

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"cursor2api/models"
	"cursor2api/utils"
)

// ToolRunner runs tools on the gateway's side (the MCP bridge). The core
// offers them beside the client's and, within one answer, runs each call
// and asks again until the model answers or calls a client tool.
type ToolRunner interface {
	// Tools are the tools to offer now.
	Tools() []models.Tool
	// Run runs one call (arguments: a JSON object). A failure is a
	// result too (isError), which the model sees as the tool's answer.
	// Run returns when ctx ends.
	Run(ctx context.Context, name, arguments string) (output string, isError bool)
}

// RunnerMode says when a ToolRunner's tools are offered.
type RunnerMode uint8

const (
	// RunnerAlways offers them with every request that may call tools.
	RunnerAlways RunnerMode = iota
	// RunnerWhenNoClientTools offers them only to requests without tools
	// of their own (chat front ends, scripts), not to coding agents.
	RunnerWhenNoClientTools
	// RunnerOff never offers them.
	RunnerOff
)

// RunSink is a Sink that shows its client the calls the gateway runs
// (Responses' mcp_call items, Messages' mcp_tool_use blocks). A sink that
// does not implement it shows the answer only.
type RunSink interface {
	// ToolRunStart is told of a call before it runs (Output empty);
	// ToolRunEnd of the same call with its result.
	ToolRunStart(run models.ToolRun) error
	ToolRunEnd(run models.ToolRun) error
}

// lastRoundNote tells the model the gateway's tools are spent.
const lastRoundNote = "[Note from the gateway: no more of the gateway's tools can be called in this answer (MCP_MAX_ROUNDS); answer with the results you have.]"

// runner is the part of Prepared that runs the gateway's tools.
type runner struct {
	ToolRunner
	names map[string]bool // the runner's tools offered in this request
	// history is the conversation so far, which each round extends.
	history    []models.Message
	clientTool []models.Tool
	maxRounds  int
	// forced, when set, is what the rounds after the first go back to:
	// the request's tool choice named the gateway's tools for the first
	// round only (models.ToolChoice.Server).
	forced *afterForced
}

// afterForced is a Prepared's tool choice for the rounds after a first
// round that had to call a gateway tool.
type afterForced struct {
	toolNames   []string
	requireCall bool
}

// chooseServerTools makes the first round call the tool (or one of the
// tools) of the MCP server the request's choice names, among those run
// offers; strict is whether the client's own tools would make a call
// required. The rounds after it choose freely (extend).
func (p *Prepared) chooseServerTools(req *models.Request, run *runner, strict bool) error {
	chosen := serverTools(run, req.Choice.Server)
	if req.Choice.Mode == models.ChoiceFunction {
		chosen = slices.DeleteFunc(chosen, func(name string) bool { return name != req.Choice.Name })
	}
	if len(chosen) == 0 {
		return serverChoiceError(req.Choice, run)
	}
	run.forced = &afterForced{toolNames: p.ToolNames, requireCall: strict}
	p.ToolNames, p.RequireCall = chosen, true
	return nil
}

// serverTools lists, sorted, the names of the tools of the MCP server
// labelled server that run offers (none when run is nil).
func serverTools(run *runner, server string) []string {
	var names []string
	if run != nil {
		prefix := models.MCPToolName(server, "")
		for name := range run.names {
			if strings.HasPrefix(name, prefix) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// serverChoiceError refuses a choice of an MCP server's tool the server
// does not offer (run: the gateway's tools offered, nil for none).
func serverChoiceError(choice models.ToolChoice, run *runner) error {
	prefix := models.MCPToolName(choice.Server, "")
	offered := serverTools(run, choice.Server)
	for i, name := range offered {
		offered[i] = strings.TrimPrefix(name, prefix)
	}
	list := "none"
	if len(offered) > 0 {
		list = strings.Join(offered, ", ")
	}
	if choice.Mode == models.ChoiceFunction {
		tool := strings.TrimPrefix(choice.Name, prefix)
		return models.InvalidRequest("tool_choice.name", "tool_choice.name %q is not a tool the MCP server %q offers here (its tools: %s)",
			utils.Clip(tool, utils.QuoteLen), choice.Server, list)
	}
	return models.InvalidRequest("tool_choice.server_label", "the MCP server %q offers no tool here to call (its tools: %s)", choice.Server, list)
}

// offerRunner joins the runner's tools to the request's, when the mode
// and the request's tool choice allow. It returns the tools to offer.
func (s *Service) offerRunner(req *models.Request) ([]models.Tool, *runner) {
	r := s.settings.Runner
	switch {
	case r == nil, s.settings.RunnerMode == RunnerOff,
		s.settings.RunnerMode == RunnerWhenNoClientTools && len(req.Tools) > 0,
		req.Choice.Mode == models.ChoiceNone, req.Choice.Mode == models.ChoiceFunction && req.Choice.Server == "":
		return req.Tools, nil
	}
	tools := slices.Clip(req.Tools)
	run := &runner{ToolRunner: r, names: map[string]bool{}, clientTool: req.Tools, maxRounds: s.settings.MaxRounds}
	for _, t := range r.Tools() {
		if slices.ContainsFunc(req.Tools, func(c models.Tool) bool { return c.Name == t.Name }) {
			continue // the client's own tool of that name wins
		}
		tools = append(tools, t)
		run.names[t.Name] = true
	}
	if len(run.names) == 0 {
		return req.Tools, nil
	}
	if run.maxRounds <= 0 {
		run.maxRounds = 10
	}
	return tools, run
}

// rounds answers like run, running the gateway's tools the model calls
// and asking again with their results, until the model answers, calls a
// tool of the client, or the rounds are spent. show, when not nil, is
// told of each run. The usage sums every round.
func (s *Service) rounds(ctx context.Context, p *Prepared, sink Sink, show RunSink, hold, holdAll bool) (models.Usage, bool, error) {
	if p.runner == nil {
		return s.run(ctx, p, sink, hold, holdAll)
	}
	var total models.Usage
	for round := 1; ; round++ {
		rs := &runnerSink{Sink: sink, names: p.runner.names}
		// A stream holds a round's text only while that round must call
		// (a first round its choice forced need not hold the next ones).
		usage, cut, err := s.run(ctx, p, rs, hold && (holdAll || p.RequireCall), holdAll)
		total = total.Add(usage)
		if err != nil || cut || len(rs.runs) == 0 {
			return total, cut, err
		}
		names := make([]string, len(rs.runs))
		for i, r := range rs.runs {
			names[i] = r.Name
		}
		s.logger.Info("running the gateway's tools", "request_id", p.RequestID, "round", round, "tools", names, "client_calls", rs.clientCalls)
		for i := range rs.runs {
			run := &rs.runs[i]
			if show != nil {
				if err := show.ToolRunStart(*run); err != nil {
					return total, false, err
				}
			}
			run.Output, run.IsError = p.runner.Run(ctx, run.Name, run.Arguments)
			if err := ctx.Err(); err != nil {
				return total, false, err
			}
			if show != nil {
				if err := show.ToolRunEnd(*run); err != nil {
					return total, false, err
				}
			}
		}
		if rs.clientCalls > 0 {
			// The client runs its own calls; the turn ends with them.
			return total, false, nil
		}
		if err := p.extend(s.dialect, rs.text.String(), rs.runs, round >= p.runner.maxRounds); err != nil {
			return total, false, err
		}
	}
}

// extend adds a round's text, calls and results to the conversation and
// has d write the next turn's request. last takes the gateway's tools
// away from the next turn and says so.
func (p *Prepared) extend(d dialect, text string, runs []models.ToolRun, last bool) error {
	r := p.runner
	asst := models.Message{Role: models.RoleAssistant}
	if strings.TrimSpace(text) != "" {
		asst.Blocks = append(asst.Blocks, models.Block{Kind: models.BlockText, Text: text})
	}
	for _, run := range runs {
		asst.Blocks = append(asst.Blocks, models.Block{Kind: models.BlockToolCall, ID: run.ID, Name: run.Name, Arguments: run.Arguments})
	}
	msgs := append(slices.Clip(r.history), asst)
	for i, run := range runs {
		out := run.Output
		if last && i == len(runs)-1 {
			out += "\n\n" + lastRoundNote
		}
		msgs = append(msgs, models.Message{Role: models.RoleTool, ToolCallID: run.ID, ToolName: run.Name, IsError: run.IsError,
			Blocks: []models.Block{{Kind: models.BlockText, Text: out}}})
	}
	r.history = msgs
	if f := r.forced; f != nil {
		// The first round called the tool its choice named: from here the
		// model chooses.
		r.forced = nil
		p.choice = models.ToolChoice{}
		p.ToolNames, p.RequireCall = f.toolNames, f.requireCall
	}
	if last {
		r.names = nil
		p.tools = r.clientTool
		p.ToolNames = p.ToolNames[:0:0]
		for _, t := range r.clientTool {
			p.ToolNames = append(p.ToolNames, t.Name)
		}
	}
	return d.prepare(p, msgs)
}

// runnerSink takes the calls of the gateway's tools out of the answer
// and passes the rest on; it keeps the text, for the conversation.
type runnerSink struct {
	Sink
	names       map[string]bool
	open        *models.ToolRun
	runs        []models.ToolRun
	clientCalls int
	text        strings.Builder
}

func (r *runnerSink) Text(t string) error {
	r.text.WriteString(t)
	return r.Sink.Text(t)
}

func (r *runnerSink) ToolCallStart(id, name string) error {
	if r.names[name] {
		r.open = &models.ToolRun{ID: id, Name: name}
		return nil
	}
	return r.Sink.ToolCallStart(id, name)
}

func (r *runnerSink) ToolCallArguments(fragment string) error {
	if r.open != nil {
		r.open.Arguments += fragment
		return nil
	}
	return r.Sink.ToolCallArguments(fragment)
}

func (r *runnerSink) ToolCallEnd(complete bool) error {
	if r.open != nil {
		if complete {
			r.runs = append(r.runs, *r.open)
		}
		r.open = nil
		return nil
	}
	if complete {
		r.clientCalls++
	}
	return r.Sink.ToolCallEnd(complete)
}

// WithRunner returns a copy of s that offers runner's tools as mode says,
// for at most maxRounds rounds of calls an answer.
func (s *Service) WithRunner(runner ToolRunner, mode RunnerMode, maxRounds int) *Service {
	c := *s
	c.settings.Runner, c.settings.RunnerMode, c.settings.MaxRounds = runner, mode, maxRounds
	return &c
}

// RemoteRunners connect to the MCP servers a request names for itself.
type RemoteRunners interface {
	// Connect connects to servers for one request. It returns a
	// *models.Error for a server the gateway may not or could not
	// reach; close ends the connections.
	Connect(ctx context.Context, servers []models.MCPServer) (runner ToolRunner, close func(), err error)
}

// PrepareContext is Prepare for a request that may name MCP servers of
// its own: it connects to them first (bounded by ctx), offers their tools
// with the gateway's, and closes them when ctx ends.
func (s *Service) PrepareContext(ctx context.Context, req *models.Request, requestID string) (*Prepared, error) {
	if len(req.MCPServers) == 0 {
		return s.Prepare(req, requestID)
	}
	if s.settings.Remote == nil {
		return nil, models.InvalidRequest(req.MCPServers[0].Param, "this gateway connects to no MCP server a request names: its operator allows hosts with MCP_REMOTE_HOSTS")
	}
	remote, closeRemote, err := s.settings.Remote.Connect(ctx, req.MCPServers)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, closeRemote)
	svc := *s
	svc.settings.Runner = remote
	if _, own := s.offerRunner(req); own != nil {
		svc.settings.Runner = runners{s.settings.Runner, remote}
	}
	// The request asked for its servers: they are offered whatever
	// MCP_TOOLS says of the configured ones.
	svc.settings.RunnerMode = RunnerAlways
	p, err := svc.Prepare(req, requestID)
	if err != nil {
		if stop() {
			closeRemote()
		}
		return nil, err
	}
	p.RemoteTools = remote.Tools()
	return p, nil
}

// runners are several ToolRunners as one: a call goes to the one that
// offers its tool.
type runners []ToolRunner

func (rs runners) Tools() []models.Tool {
	var out []models.Tool
	for _, r := range rs {
		out = append(out, r.Tools()...)
	}
	return out
}

func (rs runners) Run(ctx context.Context, name, arguments string) (string, bool) {
	for _, r := range rs {
		for _, t := range r.Tools() {
			if t.Name == name {
				return r.Run(ctx, name, arguments)
			}
		}
	}
	return fmt.Sprintf("no tool %q is connected now", name), true
}

// WithRemote returns a copy of s that connects to the MCP servers a
// request names through remote.
func (s *Service) WithRemote(remote RemoteRunners) *Service {
	c := *s
	c.settings.Remote = remote
	return &c
}
