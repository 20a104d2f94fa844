package nativetest

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/agentv1/agentv1connect"
	"cursor2api/services/native/aiserverv1"
	"cursor2api/services/native/aiserverv1/aiserverv1connect"
)

// Transport says how a run reached the fake.
type Transport string

const (
	// Bidi is AgentService/Run, one bidirectional stream over HTTP/2.
	Bidi Transport = "bidi"
	// SSE is AgentService/RunSSE with the client's messages as BidiAppend calls.
	SSE Transport = "sse"
)

// Run is what the fake received during one run.
type Run struct {
	Transport Transport
	// RequestID is RunSSE's BidiRequestId (empty for Bidi).
	RequestID string
	Header    http.Header
	// Request is the run_request that opened the run (nil if none came).
	Request *agentv1.AgentRunRequest
	// Messages are the client messages after the run_request, in order.
	Messages []*agentv1.AgentClientMessage
	// Execs are the fake's execs and what the client answered, in the
	// order the fake sent them (the request_context exec first).
	Execs []ExecResult
	// KV are the fake's KV messages and the client's answers, in order.
	KV []KVResult
	// Checkpoint is the conversation_checkpoint_update the fake sent.
	Checkpoint *agentv1.ConversationStateStructure
	// Heartbeats counts client_heartbeat messages.
	Heartbeats int
	// Ended is true once the handler has returned; Err is how it ended
	// (nil when the turn completed).
	Ended bool
	Err   error
}

// UserText is the text of the run's user message.
func (r Run) UserText() string { return userText(r.Request) }

// Images are the images attached to the run's user message.
func (r Run) Images() []*agentv1.SelectedImage {
	return r.Request.GetAction().GetUserMessageAction().GetUserMessage().GetSelectedContext().GetSelectedImages()
}

// LastResult is the content of the client's answer to the run's last
// mcp_args exec (its last tool call's result); nil when there is none.
func (r Run) LastResult() []*agentv1.McpToolResultContentItem {
	var out []*agentv1.McpToolResultContentItem
	for _, e := range r.Execs {
		if e.Kind == "mcp_args" {
			out = e.Answer.GetMcpResult().GetSuccess().GetContent()
		}
	}
	return out
}

// ResultImages are the images of every tool result the client answered
// the run's execs with, in order.
func (r Run) ResultImages() []*agentv1.McpImageContent {
	var out []*agentv1.McpImageContent
	for _, e := range r.Execs {
		for _, c := range e.Answer.GetMcpResult().GetSuccess().GetContent() {
			if img := c.GetImage(); img != nil {
				out = append(out, img)
			}
		}
	}
	return out
}

// Model is the model the run asked for (requested_model, else model_details).
func (r Run) Model() string { return modelOf(r.Request) }

func userText(req *agentv1.AgentRunRequest) string {
	return req.GetAction().GetUserMessageAction().GetUserMessage().GetText()
}

func modelOf(req *agentv1.AgentRunRequest) string {
	if id := req.GetRequestedModel().GetModelId(); id != "" {
		return id
	}
	return req.GetModelDetails().GetModelId()
}

// ExecResult is one exec the fake sent and the client's answer.
type ExecResult struct {
	ID uint32
	// Kind is the exec's arm, e.g. "mcp_args", "shell_args".
	Kind string
	// CallID is the tool call id the exec carried, if any.
	CallID string
	// Name is the MCP tool's name (mcp_args only).
	Name string
	// Outcome is the answer's arm and the arm inside it, e.g.
	// "mcp_result.success", "shell_result.rejected", "read_result.permission_denied";
	// "throw" when the client threw; empty when no answer came.
	Outcome string
	// Text is the joined text content of an MCP result.
	Text    string
	IsError bool
	// Closed is true when the client sent stream_close for the exec.
	Closed bool
	// Answer is the client's exec message (nil when it threw or none came).
	Answer *agentv1.ExecClientMessage
	// Throw is the client's throw, if it threw.
	Throw *agentv1.ExecClientThrow
}

// KVResult is one KV message the fake sent and the client's answer.
type KVResult struct {
	ID uint32
	// Kind is "get_blob_args" or "set_blob_args".
	Kind   string
	BlobID []byte
	// Answer is the client's answer (nil when none came).
	Answer *agentv1.KvClientMessage
}

func (r *Run) snapshot() Run {
	c := *r
	c.Header = r.Header.Clone()
	c.Messages = slices.Clone(r.Messages)
	c.Execs = slices.Clone(r.Execs)
	c.KV = slices.Clone(r.KV)
	return c
}

type agentService struct {
	agentv1connect.UnimplementedAgentServiceHandler
	s *Server
}

func (a *agentService) GetUsableModels(context.Context, *connect.Request[agentv1.GetUsableModelsRequest]) (*connect.Response[agentv1.GetUsableModelsResponse], error) {
	resp := &agentv1.GetUsableModelsResponse{}
	for _, m := range a.s.opts.Models {
		resp.Models = append(resp.Models, &agentv1.ModelDetails{ModelId: m.ID, DisplayModelId: m.ID, DisplayName: m.DisplayName, DisplayNameShort: m.DisplayName})
	}
	return connect.NewResponse(resp), nil
}

func (a *agentService) Run(ctx context.Context, stream *connect.BidiStream[agentv1.AgentClientMessage, agentv1.AgentServerMessage]) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The reader ends when the request body does: connect-go closes it as
	// the handler returns.
	msgs := pump(ctx, stream.Receive)
	return a.s.serveRun(ctx, &Run{Transport: Bidi, Header: stream.RequestHeader().Clone()}, msgs, stream.Send)
}

func (a *agentService) RunSSE(ctx context.Context, req *connect.Request[aiserverv1.BidiRequestId], stream *connect.ServerStream[agentv1.AgentServerMessage]) error {
	id := req.Msg.GetRequestId()
	if id == "" {
		return connect.NewError(connect.CodeInvalidArgument, errors.New("request_id is required"))
	}
	q := a.s.queue(id)
	defer a.s.endQueue(id)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := pump(ctx, func() (*agentv1.AgentClientMessage, error) { return q.next(ctx) })
	return a.s.serveRun(ctx, &Run{Transport: SSE, RequestID: id, Header: req.Header().Clone()}, msgs, stream.Send)
}

// pump passes the client's messages that receive returns to the channel
// it returns, until receive fails or ctx ends; then it closes the channel.
// Both transports feed serveRun through it.
func pump(ctx context.Context, receive func() (*agentv1.AgentClientMessage, error)) <-chan *agentv1.AgentClientMessage {
	msgs := make(chan *agentv1.AgentClientMessage)
	go func() {
		defer close(msgs)
		for {
			m, err := receive()
			if err != nil {
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	return msgs
}

type bidiService struct {
	aiserverv1connect.UnimplementedBidiServiceHandler
	s *Server
}

// BidiAppend queues one client message of a RunSSE run. Appends run
// concurrently, so they are ordered by append_seqno; the first may come
// before RunSSE itself.
func (b *bidiService) BidiAppend(_ context.Context, req *connect.Request[aiserverv1.BidiAppendRequest]) (*connect.Response[aiserverv1.BidiAppendResponse], error) {
	raw := req.Msg.GetDataBinary()
	if d := req.Msg.GetData(); d != "" {
		var err error
		if raw, err = hex.DecodeString(d); err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("data is not hex: %w", err))
		}
	}
	msg := &agentv1.AgentClientMessage{}
	if err := proto.Unmarshal(raw, msg); err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("data is not an AgentClientMessage: %w", err))
	}
	id := req.Msg.GetRequestId().GetRequestId()
	b.s.mu.Lock()
	ended := b.s.done[id]
	b.s.mu.Unlock()
	if ended {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("run %s has ended", id))
	}
	b.s.queue(id).put(req.Msg.GetAppendSeqno(), msg)
	return connect.NewResponse(&aiserverv1.BidiAppendResponse{}), nil
}

func (s *Server) queue(id string) *appendQueue {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[id]
	if !ok {
		q = &appendQueue{pending: map[int64]*agentv1.AgentClientMessage{}, changed: make(chan struct{})}
		s.queues[id] = q
	}
	return q
}

func (s *Server) endQueue(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.queues, id)
	s.done[id] = true
}

// appendQueue hands out a run's appended messages in seqno order.
type appendQueue struct {
	mu      sync.Mutex
	next_   int64
	pending map[int64]*agentv1.AgentClientMessage
	changed chan struct{}
}

func (q *appendQueue) put(seq int64, m *agentv1.AgentClientMessage) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending[seq] = m
	close(q.changed)
	q.changed = make(chan struct{})
}

func (q *appendQueue) next(ctx context.Context) (*agentv1.AgentClientMessage, error) {
	for {
		q.mu.Lock()
		if m, ok := q.pending[q.next_]; ok {
			delete(q.pending, q.next_)
			q.next_++
			q.mu.Unlock()
			return m, nil
		}
		ch := q.changed
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// serveRun plays one run: it reads the run_request, checks the model, picks
// the script and plays it, recording everything the client sends.
func (s *Server) serveRun(ctx context.Context, run *Run, msgs <-chan *agentv1.AgentClientMessage, send func(*agentv1.AgentServerMessage) error) (err error) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	s.mu.Lock()
	s.runs = append(s.runs, run)
	s.mu.Unlock()
	t := &Turn{
		s: s, run: run, send: send, changed: make(chan struct{}),
		answers: map[uint32]*agentv1.ExecClientMessage{}, throws: map[uint32]*agentv1.ExecClientThrow{},
		closed: map[uint32]bool{}, kv: map[uint32]*agentv1.KvClientMessage{},
	}
	defer func() {
		s.mu.Lock()
		run.Ended, run.Err = true, err
		s.mu.Unlock()
	}()

	// The first client message opens the run.
	wait := time.NewTimer(s.opts.Wait)
	defer wait.Stop()
	select {
	case m, ok := <-msgs:
		if !ok {
			return connect.NewError(connect.CodeCanceled, errors.New("the client closed the run before its run_request"))
		}
		if m.GetRunRequest() == nil {
			return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("the first message must be run_request, got %s", armName(m.ProtoReflect(), "message")))
		}
		s.mu.Lock()
		run.Request = m.GetRunRequest()
		s.mu.Unlock()
	case <-wait.C:
		return connect.NewError(connect.CodeDeadlineExceeded, errors.New("no run_request came"))
	case <-ctx.Done():
		return connect.NewError(connect.CodeCanceled, ctx.Err())
	}
	if run.Request.GetConversationState() == nil {
		return connect.NewError(connect.CodeInvalidArgument, errors.New("Conversation state is required"))
	}
	if m := modelOf(run.Request); !slices.ContainsFunc(s.opts.Models, func(x Model) bool { return x.ID == m }) {
		return ErrBadModel(m)
	}

	go t.dispatch(ctx, msgs)

	script := Script{Steps: []Step{Text("ok")}}
	if s.opts.Script != nil {
		script = s.opts.Script(run.Request)
	}
	if !s.opts.NoRequestContext {
		if _, err := t.Exec(ctx, &agentv1.ExecServerMessage{Message: &agentv1.ExecServerMessage_RequestContextArgs{RequestContextArgs: &agentv1.RequestContextArgs{}}}); err != nil {
			return err
		}
	}
	if !s.opts.NoKV {
		for _, id := range run.Request.GetConversationState().GetTurns() {
			if err := GetBlob(id)(ctx, t); err != nil {
				return err
			}
		}
	}
	if cut, err := play(ctx, t, script.Steps); cut || err != nil {
		return err
	}
	if err := t.end(ctx, script.Usage); err != nil {
		return err
	}
	_, err = play(ctx, t, script.After)
	return err
}

// play runs steps in order until one fails; cut is true when one cut
// the stream (Cut), which ends the run without an error.
func play(ctx context.Context, t *Turn, steps []Step) (cut bool, err error) {
	for _, step := range steps {
		if err := step(ctx, t); err != nil {
			if errors.Is(err, errCut) {
				return true, nil
			}
			return false, err
		}
	}
	return false, nil
}

// armName is the name of the field set in a oneof of m, or "".
func armName(m protoreflect.Message, oneof protoreflect.Name) string {
	od := m.Descriptor().Oneofs().ByName(oneof)
	if od == nil {
		return ""
	}
	if fd := m.WhichOneof(od); fd != nil {
		return string(fd.Name())
	}
	return ""
}

// outcome names an exec answer's arm and the result arm inside it.
func outcome(m *agentv1.ExecClientMessage) string {
	pr := m.ProtoReflect()
	od := pr.Descriptor().Oneofs().ByName("message")
	fd := pr.WhichOneof(od)
	if fd == nil {
		return ""
	}
	name := string(fd.Name())
	if fd.Kind() == protoreflect.MessageKind {
		inner := pr.Get(fd).Message()
		if o := inner.Descriptor().Oneofs(); o.Len() > 0 {
			if f := inner.WhichOneof(o.Get(0)); f != nil {
				name += "." + string(f.Name())
			}
		}
	}
	return name
}
