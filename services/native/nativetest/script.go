package nativetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"cursor2api/services/native/agentv1"
)

// Script is the turn the fake plays for one run: its steps in order, then
// (unless a step failed or cut the stream) the turn's end: the KV set of the
// turn's blob, turn_ended with Usage, and the conversation checkpoint.
// After are played after the turn's end, before the stream ends: a tail
// that lingers (Linger).
type Script struct {
	Steps []Step
	Usage Usage
	After []Step
}

// Usage is what turn_ended reports.
type Usage struct {
	Input, Output, CacheRead, CacheWrite, Reasoning int64
}

// Step is one thing the fake does during a turn. A step returning an error
// ends the run with it (a *connect.Error goes to the client as is).
type Step func(ctx context.Context, t *Turn) error

// Turn is a run being played: steps send server messages through it and
// wait for the client's answers.
type Turn struct {
	s    *Server
	run  *Run
	send func(*agentv1.AgentServerMessage) error

	sendMu  sync.Mutex
	mu      sync.Mutex
	changed chan struct{}
	nextID  uint32
	answers map[uint32]*agentv1.ExecClientMessage
	throws  map[uint32]*agentv1.ExecClientThrow
	closed  map[uint32]bool
	kv      map[uint32]*agentv1.KvClientMessage
	gone    bool // the client's message stream has ended
	results []ExecResult
	callSeq int
}

// Request is the run's run_request.
func (t *Turn) Request() *agentv1.AgentRunRequest { return t.run.Request }

// Send sends one server message.
func (t *Turn) Send(m *agentv1.AgentServerMessage) error {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	return t.send(m)
}

// Update sends one interaction update.
func (t *Turn) Update(u *agentv1.InteractionUpdate) error {
	return t.Send(&agentv1.AgentServerMessage{Message: &agentv1.AgentServerMessage_InteractionUpdate{InteractionUpdate: u}})
}

// Results are the execs answered so far in this turn (the tool results a
// continuation step can use).
func (t *Turn) Results() []ExecResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]ExecResult(nil), t.results...)
}

func (t *Turn) broadcast() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// dispatch records the client's messages and hands answers to the waiters.
func (t *Turn) dispatch(ctx context.Context, msgs <-chan *agentv1.AgentClientMessage) {
	defer func() {
		t.mu.Lock()
		t.gone = true
		t.broadcast()
		t.mu.Unlock()
	}()
	for {
		var m *agentv1.AgentClientMessage
		var ok bool
		select {
		case m, ok = <-msgs:
			if !ok {
				return
			}
		case <-ctx.Done():
			return
		}
		t.s.mu.Lock()
		t.run.Messages = append(t.run.Messages, m)
		if m.GetClientHeartbeat() != nil {
			t.run.Heartbeats++
		}
		t.s.mu.Unlock()
		t.mu.Lock()
		switch {
		case m.GetExecClientMessage() != nil:
			e := m.GetExecClientMessage()
			t.answers[e.GetId()] = e
		case m.GetExecClientControlMessage().GetStreamClose() != nil:
			t.closed[m.GetExecClientControlMessage().GetStreamClose().GetId()] = true
		case m.GetExecClientControlMessage().GetThrow() != nil:
			th := m.GetExecClientControlMessage().GetThrow()
			t.throws[th.GetId()] = th
		case m.GetKvClientMessage() != nil:
			t.kv[m.GetKvClientMessage().GetId()] = m.GetKvClientMessage()
		}
		t.broadcast()
		t.mu.Unlock()
	}
}

// waitFor waits, within the server's bound, until done (called under t.mu)
// says the client has answered.
func (t *Turn) waitFor(ctx context.Context, what string, done func() bool) error {
	timer := time.NewTimer(t.s.opts.Wait)
	defer timer.Stop()
	for {
		t.mu.Lock()
		if done() {
			t.mu.Unlock()
			return nil
		}
		if t.gone {
			t.mu.Unlock()
			return connect.NewError(connect.CodeCanceled, fmt.Errorf("the client went away while the fake waited for %s", what))
		}
		ch := t.changed
		t.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return connect.NewError(connect.CodeDeadlineExceeded, fmt.Errorf("the client did not send %s within %v", what, t.s.opts.Wait))
		case <-ctx.Done():
			return connect.NewError(connect.CodeCanceled, ctx.Err())
		}
	}
}

func (t *Turn) id() uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nextID++
	return t.nextID
}

// Exec sends an exec (its id is set here) and waits for the client's
// answer and its stream_close, as the live server does: without the close
// the turn does not go on. A throw counts as an answer.
func (t *Turn) Exec(ctx context.Context, e *agentv1.ExecServerMessage) (ExecResult, error) {
	pending, err := t.sendExecs(ctx, []*agentv1.ExecServerMessage{e})
	if err != nil {
		return ExecResult{}, err
	}
	rs, err := t.awaitExecs(ctx, pending)
	if err != nil {
		return ExecResult{}, err
	}
	return rs[0], nil
}

func (t *Turn) sendExecs(ctx context.Context, es []*agentv1.ExecServerMessage) ([]ExecResult, error) {
	var pending []ExecResult
	for _, e := range es {
		e.Id = t.id()
		e.ExecId = fmt.Sprintf("exec-%d", e.Id)
		r := ExecResult{ID: e.Id, Kind: armName(e.ProtoReflect(), "message")}
		if a := e.GetMcpArgs(); a != nil {
			r.CallID, r.Name = a.GetToolCallId(), a.GetName()
		}
		if f := e.ProtoReflect().Descriptor().Oneofs().ByName("message"); f != nil {
			if fd := e.ProtoReflect().WhichOneof(f); fd != nil {
				if tc := e.ProtoReflect().Get(fd).Message(); tc.Descriptor().Fields().ByName("tool_call_id") != nil && r.CallID == "" {
					r.CallID = tc.Get(tc.Descriptor().Fields().ByName("tool_call_id")).String()
				}
			}
		}
		if err := t.Send(&agentv1.AgentServerMessage{Message: &agentv1.AgentServerMessage_ExecServerMessage{ExecServerMessage: e}}); err != nil {
			return nil, err
		}
		pending = append(pending, r)
	}
	return pending, nil
}

func (t *Turn) awaitExecs(ctx context.Context, pending []ExecResult) ([]ExecResult, error) {
	for i := range pending {
		id := pending[i].ID
		err := t.waitFor(ctx, fmt.Sprintf("the result and stream_close of exec %d (%s)", id, pending[i].Kind), func() bool {
			return (t.answers[id] != nil || t.throws[id] != nil) && (t.closed[id] || t.throws[id] != nil)
		})
		t.mu.Lock()
		r := &pending[i]
		r.Answer, r.Throw, r.Closed = t.answers[id], t.throws[id], t.closed[id]
		switch {
		case r.Throw != nil:
			r.Outcome = "throw"
		case r.Answer != nil:
			r.Outcome = outcome(r.Answer)
			if mr := r.Answer.GetMcpResult(); mr != nil {
				var texts []string
				for _, c := range mr.GetSuccess().GetContent() {
					texts = append(texts, c.GetText().GetText())
				}
				r.Text = strings.Join(texts, "")
				r.IsError = mr.GetSuccess().GetIsError() || mr.GetSuccess() == nil
			}
		}
		t.results = append(t.results, *r)
		t.mu.Unlock()
		t.s.mu.Lock()
		t.run.Execs = append(t.run.Execs, *r)
		t.s.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return pending, nil
}

// kvRoundTrip sends a KV message and waits for its answer.
func (t *Turn) kvRoundTrip(ctx context.Context, m *agentv1.KvServerMessage) (*agentv1.KvClientMessage, error) {
	m.Id = t.id()
	if err := t.Send(&agentv1.AgentServerMessage{Message: &agentv1.AgentServerMessage_KvServerMessage{KvServerMessage: m}}); err != nil {
		return nil, err
	}
	err := t.waitFor(ctx, fmt.Sprintf("the answer to KV message %d", m.Id), func() bool { return t.kv[m.Id] != nil })
	t.mu.Lock()
	ans := t.kv[m.Id]
	t.mu.Unlock()
	rec := KVResult{ID: m.Id, Kind: armName(m.ProtoReflect(), "message"), BlobID: m.GetGetBlobArgs().GetBlobId(), Answer: ans}
	if m.GetSetBlobArgs() != nil {
		rec.BlobID = m.GetSetBlobArgs().GetBlobId()
	}
	t.s.mu.Lock()
	t.run.KV = append(t.run.KV, rec)
	t.s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return ans, nil
}

// end closes a completed turn: the turn's blob, turn_ended, then the
// checkpoint naming every turn's blob.
func (t *Turn) end(ctx context.Context, u Usage) error {
	state := proto.Clone(t.run.Request.GetConversationState()).(*agentv1.ConversationStateStructure)
	if !t.s.opts.NoKV {
		data := []byte("turn:" + userText(t.run.Request))
		// A content address that differs per turn of a conversation.
		id := sha256.Sum256(fmt.Appendf(nil, "%s/%d/%s", t.run.Request.GetConversationId(), len(state.Turns), data))
		if err := SetBlob(id[:], data)(ctx, t); err != nil {
			return err
		}
		state.Turns = append(state.Turns, id[:])
	}
	if err := t.Update(&agentv1.InteractionUpdate{Message: &agentv1.InteractionUpdate_TurnEnded{TurnEnded: &agentv1.TurnEndedUpdate{
		InputTokens: &u.Input, OutputTokens: &u.Output, CacheReadTokens: &u.CacheRead, CacheWriteTokens: &u.CacheWrite, ReasoningTokens: &u.Reasoning,
	}}}); err != nil {
		return err
	}
	if err := t.Send(&agentv1.AgentServerMessage{Message: &agentv1.AgentServerMessage_ConversationCheckpointUpdate{ConversationCheckpointUpdate: state}}); err != nil {
		return err
	}
	t.s.mu.Lock()
	t.run.Checkpoint = state
	t.s.mu.Unlock()
	return nil
}

// Text sends text deltas.
func Text(deltas ...string) Step {
	return func(_ context.Context, t *Turn) error {
		for _, d := range deltas {
			if err := t.Update(&agentv1.InteractionUpdate{Message: &agentv1.InteractionUpdate_TextDelta{TextDelta: &agentv1.TextDeltaUpdate{Text: d}}}); err != nil {
				return err
			}
		}
		return nil
	}
}

// TextFunc sends one text delta made from the turn's exec results so far:
// the continuation of a turn after its tool calls.
func TextFunc(f func(results []ExecResult) string) Step {
	return func(ctx context.Context, t *Turn) error { return Text(f(t.Results()))(ctx, t) }
}

// Thinking sends thinking deltas, then thinking_completed.
func Thinking(deltas ...string) Step {
	return func(_ context.Context, t *Turn) error {
		for _, d := range deltas {
			if err := t.Update(&agentv1.InteractionUpdate{Message: &agentv1.InteractionUpdate_ThinkingDelta{ThinkingDelta: &agentv1.ThinkingDeltaUpdate{Text: d}}}); err != nil {
				return err
			}
		}
		return t.Update(&agentv1.InteractionUpdate{Message: &agentv1.InteractionUpdate_ThinkingCompleted{ThinkingCompleted: &agentv1.ThinkingCompletedUpdate{ThinkingDurationMs: 120}}})
	}
}

// Tokens sends a token_delta.
func Tokens(n int32) Step {
	return func(_ context.Context, t *Turn) error {
		return t.Update(&agentv1.InteractionUpdate{Message: &agentv1.InteractionUpdate_TokenDelta{TokenDelta: &agentv1.TokenDeltaUpdate{Tokens: n}}})
	}
}

// Heartbeats sends n heartbeat updates.
func Heartbeats(n int) Step {
	return func(_ context.Context, t *Turn) error {
		for range n {
			if err := t.Update(&agentv1.InteractionUpdate{Message: &agentv1.InteractionUpdate_Heartbeat{Heartbeat: &agentv1.HeartbeatUpdate{}}}); err != nil {
				return err
			}
		}
		return nil
	}
}

// Call is a call of a tool the run declared in mcp_tools.
type Call struct {
	// Tool is the tool's tool_name (or its full name) as declared.
	Tool string
	Args map[string]any
	// ID is the tool call id; "call_N" when empty.
	ID string
}

// ToolCalls announces the calls (tool_call_started for each, all before
// any is asked), sends their mcp_args execs together, and waits for every
// result and stream_close; then reports each tool_call_completed. A call
// of a tool the run did not declare fails the run with invalid_argument.
func ToolCalls(calls ...Call) Step {
	return func(ctx context.Context, t *Turn) error {
		var execs []*agentv1.ExecServerMessage
		var started []*agentv1.ToolCall
		ids := make([]string, len(calls))
		for i, c := range calls {
			def := declared(t.run.Request, c.Tool)
			if def == nil {
				return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("the script calls %q, which the run did not declare in mcp_tools", c.Tool))
			}
			args, err := structpb.NewStruct(c.Args)
			if err != nil {
				return fmt.Errorf("call %s: %w", c.Tool, err)
			}
			t.mu.Lock()
			t.callSeq++
			ids[i] = c.ID
			if ids[i] == "" {
				ids[i] = fmt.Sprintf("call_%d", t.callSeq)
			}
			t.mu.Unlock()
			mcp := &agentv1.McpArgs{
				Name: def.GetName(), Args: args.GetFields(), ToolCallId: ids[i],
				ProviderIdentifier: def.GetProviderIdentifier(), ToolName: def.GetToolName(),
			}
			tc := &agentv1.ToolCall{Tool: &agentv1.ToolCall_McpToolCall{McpToolCall: &agentv1.McpToolCall{Args: mcp}}}
			started = append(started, tc)
			if err := t.Update(&agentv1.InteractionUpdate{Message: &agentv1.InteractionUpdate_ToolCallStarted{ToolCallStarted: &agentv1.ToolCallStartedUpdate{CallId: ids[i], ToolCall: tc}}}); err != nil {
				return err
			}
			execs = append(execs, &agentv1.ExecServerMessage{Message: &agentv1.ExecServerMessage_McpArgs{McpArgs: proto.Clone(mcp).(*agentv1.McpArgs)}})
		}
		pending, err := t.sendExecs(ctx, execs)
		if err != nil {
			return err
		}
		results, err := t.awaitExecs(ctx, pending)
		if err != nil {
			return err
		}
		for i, r := range results {
			tc := started[i]
			if mr := r.Answer.GetMcpResult(); mr != nil {
				tr := &agentv1.McpToolResult{}
				if s := mr.GetSuccess(); s != nil {
					tr.Result = &agentv1.McpToolResult_Success{Success: s}
				}
				tc.GetMcpToolCall().Result = tr
			}
			if err := t.Update(&agentv1.InteractionUpdate{Message: &agentv1.InteractionUpdate_ToolCallCompleted{ToolCallCompleted: &agentv1.ToolCallCompletedUpdate{CallId: ids[i], ToolCall: tc}}}); err != nil {
				return err
			}
		}
		return nil
	}
}

// declared finds a tool of the run by tool_name or full name.
func declared(req *agentv1.AgentRunRequest, tool string) *agentv1.McpToolDefinition {
	for _, d := range req.GetMcpTools().GetMcpTools() {
		if d.GetToolName() == tool || d.GetName() == tool {
			return d
		}
	}
	return nil
}

// Exec sends a built-in exec (shell, read, write, …) that asks the client
// to act on its own machine, records how the client answered (a gateway
// refuses: "shell_result.rejected" and the like) and goes on.
func Exec(e *agentv1.ExecServerMessage) Step {
	return func(ctx context.Context, t *Turn) error {
		_, err := t.Exec(ctx, proto.Clone(e).(*agentv1.ExecServerMessage))
		return err
	}
}

// ShellExec is the exec of a shell command.
func ShellExec(command string) *agentv1.ExecServerMessage {
	return &agentv1.ExecServerMessage{Message: &agentv1.ExecServerMessage_ShellArgs{ShellArgs: &agentv1.ShellArgs{Command: command, WorkingDirectory: "/", Timeout: 30000, ToolCallId: "call_shell"}}}
}

// ReadExec is the exec of a file read.
func ReadExec(path string) *agentv1.ExecServerMessage {
	return &agentv1.ExecServerMessage{Message: &agentv1.ExecServerMessage_ReadArgs{ReadArgs: &agentv1.ReadArgs{Path: path, ToolCallId: "call_read"}}}
}

// WriteExec is the exec of a file write.
func WriteExec(path, text string) *agentv1.ExecServerMessage {
	return &agentv1.ExecServerMessage{Message: &agentv1.ExecServerMessage_WriteArgs{WriteArgs: &agentv1.WriteArgs{Path: path, FileText: text, ToolCallId: "call_write"}}}
}

// DeleteExec is the exec of a file deletion.
func DeleteExec(path string) *agentv1.ExecServerMessage {
	return &agentv1.ExecServerMessage{Message: &agentv1.ExecServerMessage_DeleteArgs{DeleteArgs: &agentv1.DeleteArgs{Path: path, ToolCallId: "call_delete"}}}
}

// LsExec is the exec of a directory listing.
func LsExec(path string) *agentv1.ExecServerMessage {
	return &agentv1.ExecServerMessage{Message: &agentv1.ExecServerMessage_LsArgs{LsArgs: &agentv1.LsArgs{Path: path, ToolCallId: "call_ls"}}}
}

// GrepExec is the exec of a search.
func GrepExec(pattern string) *agentv1.ExecServerMessage {
	return &agentv1.ExecServerMessage{Message: &agentv1.ExecServerMessage_GrepArgs{GrepArgs: &agentv1.GrepArgs{Pattern: pattern}}}
}

// SetBlob asks the client to keep a blob and waits for its answer; the
// fake remembers the blob to check a later GetBlob.
func SetBlob(id, data []byte) Step {
	return func(ctx context.Context, t *Turn) error {
		t.s.mu.Lock()
		t.s.blobs[fmt.Sprintf("%x", id)] = data
		t.s.mu.Unlock()
		ans, err := t.kvRoundTrip(ctx, &agentv1.KvServerMessage{Message: &agentv1.KvServerMessage_SetBlobArgs{SetBlobArgs: &agentv1.SetBlobArgs{BlobId: id, BlobData: data}}})
		if err != nil {
			return err
		}
		if ans.GetSetBlobResult() == nil {
			return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("KV message %d: want set_blob_result, got %s", ans.GetId(), armName(ans.ProtoReflect(), "message")))
		}
		if e := ans.GetSetBlobResult().GetError(); e != nil {
			return connect.NewError(connect.CodeInternal, fmt.Errorf("the client could not keep blob %x: %s", id, e.GetMessage()))
		}
		return nil
	}
}

// GetBlob asks the client for a blob and fails the run with "Blob not
// found" when the client does not have it (or has other data than the
// fake set).
func GetBlob(id []byte) Step {
	return func(ctx context.Context, t *Turn) error {
		ans, err := t.kvRoundTrip(ctx, &agentv1.KvServerMessage{Message: &agentv1.KvServerMessage_GetBlobArgs{GetBlobArgs: &agentv1.GetBlobArgs{BlobId: id}}})
		if err != nil {
			return err
		}
		res := ans.GetGetBlobResult()
		if res == nil {
			return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("KV message %d: want get_blob_result, got %s", ans.GetId(), armName(ans.ProtoReflect(), "message")))
		}
		want, known := t.s.Blob(id)
		if res.BlobData == nil || res.GetError() != nil || (known && !bytes.Equal(want, res.GetBlobData())) {
			return connect.NewError(connect.CodeNotFound, fmt.Errorf("Blob not found: %x", id))
		}
		return nil
	}
}

// Fail ends the run with err (as the end-of-stream error, with HTTP 200).
func Fail(err *connect.Error) Step {
	return func(context.Context, *Turn) error { return err }
}

var errCut = errors.New("cut")

// Cut ends the stream cleanly without turn_ended, as a dropped stream does.
func Cut() Step {
	return func(context.Context, *Turn) error { return errCut }
}

// Linger holds the stream open, as a server that lingers after
// turn_ended does, until release is closed (then the stream ends
// cleanly), the client goes away (the run ends canceled), or
// Options.Wait passes (deadline_exceeded). It belongs in Script.After.
func Linger(release <-chan struct{}) Step {
	return func(ctx context.Context, t *Turn) error {
		limit := time.NewTimer(t.s.opts.Wait)
		defer limit.Stop()
		for {
			t.mu.Lock()
			gone, ch := t.gone, t.changed
			t.mu.Unlock()
			if gone {
				return connect.NewError(connect.CodeCanceled, errors.New("the client went away while the stream lingered"))
			}
			select {
			case <-release:
				return nil
			case <-ch:
			case <-ctx.Done():
				return connect.NewError(connect.CodeCanceled, ctx.Err())
			case <-limit.C:
				return connect.NewError(connect.CodeDeadlineExceeded, errors.New("Linger: neither released nor left"))
			}
		}
	}
}

// Hang waits until the client goes away (bounded by Options.Wait), sending
// a heartbeat every interval: a long turn a test cancels.
func Hang(interval time.Duration) Step {
	return func(ctx context.Context, t *Turn) error {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		limit := time.NewTimer(t.s.opts.Wait)
		defer limit.Stop()
		for {
			t.mu.Lock()
			gone := t.gone
			t.mu.Unlock()
			if gone {
				return connect.NewError(connect.CodeCanceled, errors.New("the client went away"))
			}
			select {
			case <-ctx.Done():
				return connect.NewError(connect.CodeCanceled, ctx.Err())
			case <-limit.C:
				return connect.NewError(connect.CodeDeadlineExceeded, errors.New("Hang: the client did not cancel"))
			case <-tick.C:
				if err := Heartbeats(1)(ctx, t); err != nil {
					return err
				}
			}
		}
	}
}
