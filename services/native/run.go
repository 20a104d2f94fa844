package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"cursor2api/models"
	"cursor2api/services/epilogue"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/keys"
	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// evKind says what a run event carries.
type evKind uint8

const (
	evText        evKind = iota + 1 // the model's text
	evThinking                      // its reasoning
	evCallStarted                   // the model began a call of a declared tool
	evCall                          // a declared tool's call, whole (mcp_args)
	evCallRefused                   // an MCP call the gateway answered itself (an undeclared tool)
	evProgress                      // anything else that shows the turn moving
	evHeartbeat                     // the server is alive, the turn not moving
	evTurnEnded                     // turn_ended, with the usage
	evEnd                           // the stream ended (err: why; nil at a clean end)
)

type event struct {
	kind  evKind
	text  string
	call  *pendingCall
	usage *models.Usage
	err   error
}

// pendingCall is a call of a declared tool waiting for its result.
type pendingCall struct {
	exec       *agentv1.ExecServerMessage // the mcp_args exec to answer
	upstreamID string                     // the upstream's tool_call_id
	id         string                     // the gateway's id, call_<24>
	name, args string                     // the client's tool name and the arguments (JSON)
}

// run is one upstream run: a turn that may park at tool calls and resume
// with their results. Its pump answers the server's requests to the client
// itself and passes the rest to the Stream call of the moment.
type run struct {
	c      *Client
	id     string // run_id, the x-request-id
	convID string
	model  string
	// tenant is the client key fingerprint of the request that started
	// the run (upstream.Request.Tenant): only its results resume it.
	tenant string
	lease  *keys.Lease
	conn   conn
	log    *slog.Logger

	ctx    context.Context
	cancel context.CancelCauseFunc
	events chan event
	done   chan struct{} // closed when the pump has returned
	// beating is closed when the heartbeat has returned, its last send
	// answered.
	beating chan struct{}
	wg      sync.WaitGroup

	reqCtx *agentv1.RequestContext
	names  map[string]string // names the model calls tools by → the client's
	blobs  *blobStore
	// checkpoint is the last conversation_checkpoint_update: the
	// conversation_state the next run of this conversation would start
	// from.
	checkpoint atomic.Pointer[agentv1.ConversationStateStructure]

	// calls are the calls the run waits on while parked.
	calls []*pendingCall

	endOnce sync.Once
}

// start sends the run's first message and starts its goroutines. The
// heartbeat starts once the first message is sent: the server takes
// nothing before the run_request, and a beat that got ahead of it (a
// tick while the sender was held up) failed the run.
func (r *run) start(first *agentv1.AgentClientMessage) error {
	r.wg.Add(1)
	go r.pump()
	err := r.send(first)
	r.wg.Add(1)
	go r.heartbeat()
	return err
}

func (r *run) send(m *agentv1.AgentClientMessage) error {
	if err := r.ctx.Err(); err != nil {
		return context.Cause(r.ctx)
	}
	return r.conn.Send(m)
}

// emit passes an event to the consumer, or drops it once the run ends.
// Heartbeats and progress are dropped when the consumer is behind (a
// parked run has none): they only keep timers alive, and the pump must
// keep answering the server meanwhile.
func (r *run) emit(ev event) {
	if ev.kind == evHeartbeat || ev.kind == evProgress {
		select {
		case r.events <- ev:
		default:
		}
		return
	}
	select {
	case r.events <- ev:
	case <-r.ctx.Done():
	}
}

// pump reads the server's messages until the stream ends.
func (r *run) pump() {
	defer r.wg.Done()
	defer close(r.done)
	for {
		m, err := r.conn.Receive()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			r.emit(event{kind: evEnd, err: err})
			return
		}
		r.handle(m)
	}
}

// heartbeat sends client_heartbeat every HeartbeatEvery while the run
// lives, parked or not, as the official clients do during long turns.
func (r *run) heartbeat() {
	defer r.wg.Done()
	defer close(r.beating)
	t := time.NewTicker(r.c.opts.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.done:
			return
		case <-t.C:
			select {
			case <-r.done: // a tick and the end came together: no beat after the end
				return
			default:
			}
			if err := r.send(&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_ClientHeartbeat{ClientHeartbeat: &agentv1.ClientHeartbeat{}}}); err != nil {
				return
			}
		}
	}
}

// handle deals with one server message.
func (r *run) handle(m *agentv1.AgentServerMessage) {
	switch msg := m.GetMessage().(type) {
	case *agentv1.AgentServerMessage_InteractionUpdate:
		r.update(msg.InteractionUpdate)
	case *agentv1.AgentServerMessage_ExecServerMessage:
		r.exec(msg.ExecServerMessage)
	case *agentv1.AgentServerMessage_KvServerMessage:
		r.kv(msg.KvServerMessage)
		r.emit(event{kind: evProgress})
	case *agentv1.AgentServerMessage_ConversationCheckpointUpdate:
		r.checkpoint.Store(msg.ConversationCheckpointUpdate)
		r.emit(event{kind: evProgress})
	case *agentv1.AgentServerMessage_ExecServerControlMessage:
		r.log.Debug("native: the server aborted an exec", "id", msg.ExecServerControlMessage.GetAbort().GetId())
		r.emit(event{kind: evProgress})
	case *agentv1.AgentServerMessage_InteractionQuery:
		// A question for a human (approve a web search, switch mode,
		// answer the model): there is none, so it is refused.
		if resp, ok := queryRefusal(msg.InteractionQuery); ok {
			_ = r.send(&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_InteractionResponse{InteractionResponse: resp}})
		} else {
			r.drift("interaction query of an unknown kind, left unanswered", msg.InteractionQuery)
		}
		r.emit(event{kind: evProgress})
	default:
		r.drift("server message of an unknown kind", m)
		r.emit(event{kind: evProgress})
	}
}

// drift notes a message whose kind the generated schema does not know: a
// newer server's, which came as unknown fields, named by their numbers.
// The run goes on without it.
func (r *run) drift(what string, m proto.Message) {
	nums := unknownFields(m)
	if nums == "" {
		return // an empty message: nothing new in it
	}
	r.c.opts.Drift.Note("native", what+" (field "+nums+")")
}

// unknownFields lists the numbers of m's unknown fields, the first few.
func unknownFields(m proto.Message) string {
	raw := m.ProtoReflect().GetUnknown()
	var nums []string
	for len(raw) > 0 && len(nums) < 4 {
		num, _, n := protowire.ConsumeField(raw)
		if n < 0 {
			break
		}
		if s := strconv.Itoa(int(num)); !slices.Contains(nums, s) {
			nums = append(nums, s)
		}
		raw = raw[n:]
	}
	return strings.Join(nums, ",")
}

func (r *run) update(u *agentv1.InteractionUpdate) {
	switch msg := u.GetMessage().(type) {
	case *agentv1.InteractionUpdate_TextDelta:
		if msg.TextDelta.GetIsServerNotice() {
			r.log.Info("native: server notice", "text", utils.Clip(msg.TextDelta.GetText(), 300))
			r.emit(event{kind: evProgress})
			return
		}
		r.emit(event{kind: evText, text: msg.TextDelta.GetText()})
	case *agentv1.InteractionUpdate_ThinkingDelta:
		r.emit(event{kind: evThinking, text: msg.ThinkingDelta.GetText()})
	case *agentv1.InteractionUpdate_ToolCallStarted:
		if msg.ToolCallStarted.GetToolCall().GetMcpToolCall() != nil {
			r.emit(event{kind: evCallStarted})
			return
		}
		r.emit(event{kind: evProgress})
	case *agentv1.InteractionUpdate_Heartbeat:
		r.emit(event{kind: evHeartbeat})
	case *agentv1.InteractionUpdate_TurnEnded:
		t := msg.TurnEnded
		u := &models.Usage{
			InputTokens: int(t.GetInputTokens()), OutputTokens: int(t.GetOutputTokens()),
			CacheReadTokens: int(t.GetCacheReadTokens()), CacheWriteTokens: int(t.GetCacheWriteTokens()),
			ReasoningTokens: int(t.GetReasoningTokens()),
		}
		u.TotalTokens = u.InputTokens + u.OutputTokens
		r.emit(event{kind: evTurnEnded, usage: u})
	default:
		r.drift("interaction update of an unknown kind", u)
		r.emit(event{kind: evProgress})
	}
}

// exec answers what the server asks the client to do: the request
// context, a call of a declared tool (passed on to the consumer), and
// the built-in tools, which are refused.
func (r *run) exec(e *agentv1.ExecServerMessage) {
	switch a := e.GetMessage().(type) {
	case *agentv1.ExecServerMessage_RequestContextArgs:
		r.answer(e.GetId(), &agentv1.ExecClientMessage{Id: e.GetId(), ExecId: e.GetExecId(),
			Message: &agentv1.ExecClientMessage_RequestContextResult{RequestContextResult: &agentv1.RequestContextResult{
				Result: &agentv1.RequestContextResult_Success{Success: &agentv1.RequestContextSuccess{RequestContext: r.reqCtx}}}}})
		r.emit(event{kind: evProgress})
	case *agentv1.ExecServerMessage_McpArgs:
		args := a.McpArgs
		name, ok := r.names[args.GetToolName()]
		if !ok {
			name, ok = r.names[args.GetName()]
		}
		if !ok {
			r.log.Warn("native: the model called an undeclared tool; refused", "tool", utils.Clip(args.GetName(), 100))
			r.answer(e.GetId(), mcpAnswer(e, &agentv1.McpResult{Result: &agentv1.McpResult_ToolNotFound{ToolNotFound: &agentv1.McpToolNotFound{}}}))
			r.emit(event{kind: evCallRefused})
			return
		}
		js, err := argsJSON(args.GetArgs())
		if err != nil {
			r.answer(e.GetId(), mcpAnswer(e, &agentv1.McpResult{Result: &agentv1.McpResult_Error{Error: &agentv1.McpError{Error: "unreadable arguments"}}}))
			r.emit(event{kind: evCallRefused})
			return
		}
		r.emit(event{kind: evCall, call: &pendingCall{exec: e, upstreamID: args.GetToolCallId(), name: name, args: js}})
	default:
		msg, arm, ok := rejection(e)
		if arm == "" {
			r.drift("exec of an unknown kind, refused", e)
		}
		r.log.Warn("native: refused a built-in tool of the server's; the gateway runs none", "exec", arm)
		if ok {
			r.answer(e.GetId(), msg)
		} else {
			_ = r.send(&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_ExecClientControlMessage{ExecClientControlMessage: &agentv1.ExecClientControlMessage{
				Message: &agentv1.ExecClientControlMessage_Throw{Throw: &agentv1.ExecClientThrow{Id: e.GetId(), Error: refusal}}}}})
		}
		r.emit(event{kind: evProgress})
	}
}

// answer sends an exec's result and closes its stream: without the
// close the server waits, and the turn hangs on heartbeats.
func (r *run) answer(id uint32, result *agentv1.ExecClientMessage) {
	if err := r.send(&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_ExecClientMessage{ExecClientMessage: result}}); err != nil {
		return
	}
	_ = r.send(&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_ExecClientControlMessage{ExecClientControlMessage: &agentv1.ExecClientControlMessage{
		Message: &agentv1.ExecClientControlMessage_StreamClose{StreamClose: &agentv1.ExecClientStreamClose{Id: id}}}}})
}

func mcpAnswer(e *agentv1.ExecServerMessage, res *agentv1.McpResult) *agentv1.ExecClientMessage {
	return &agentv1.ExecClientMessage{Id: e.GetId(), ExecId: e.GetExecId(), Message: &agentv1.ExecClientMessage_McpResult{McpResult: res}}
}

// kv keeps and returns the server's blobs.
func (r *run) kv(k *agentv1.KvServerMessage) {
	var reply *agentv1.KvClientMessage
	switch a := k.GetMessage().(type) {
	case *agentv1.KvServerMessage_SetBlobArgs:
		r.blobs.set(a.SetBlobArgs.GetBlobId(), a.SetBlobArgs.GetBlobData())
		reply = &agentv1.KvClientMessage{Id: k.GetId(), Message: &agentv1.KvClientMessage_SetBlobResult{SetBlobResult: &agentv1.SetBlobResult{}}}
	case *agentv1.KvServerMessage_GetBlobArgs:
		res := &agentv1.GetBlobResult{}
		if b, ok := r.blobs.get(a.GetBlobArgs.GetBlobId()); ok {
			res.BlobData = b
		}
		reply = &agentv1.KvClientMessage{Id: k.GetId(), Message: &agentv1.KvClientMessage_GetBlobResult{GetBlobResult: res}}
	default:
		r.drift("kv message of an unknown kind, left unanswered", k)
		return
	}
	_ = r.send(&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_KvClientMessage{KvClientMessage: reply}})
}

// resume answers the parked calls with the client's results. Their
// images are decoded first, so that a bad one fails the request before
// any answer is sent.
func (r *run) resume(results map[string]models.Message) error {
	answers := make([]*agentv1.McpResult, len(r.calls))
	for i, pc := range r.calls {
		content := []*agentv1.McpToolResultContentItem{{Content: &agentv1.McpToolResultContentItem_Text{
			Text: &agentv1.McpTextContent{Text: "(the client sent no result for this call)"}}}}
		isError := true
		if m, ok := results[utils.CallIDKey(pc.id)]; ok {
			imgs, err := images(m)
			if err != nil {
				return err
			}
			content = append([]*agentv1.McpToolResultContentItem{{Content: &agentv1.McpToolResultContentItem_Text{
				Text: &agentv1.McpTextContent{Text: resultText(m)}}}}, mcpImages(imgs)...)
			isError = m.IsError
		}
		answers[i] = &agentv1.McpResult{Result: &agentv1.McpResult_Success{Success: &agentv1.McpSuccess{Content: content, IsError: isError}}}
	}
	for i, pc := range r.calls {
		res := answers[i]
		if err := r.send(&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_ExecClientMessage{ExecClientMessage: mcpAnswer(pc.exec, res)}}); err != nil {
			return err
		}
		if err := r.send(&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_ExecClientControlMessage{ExecClientControlMessage: &agentv1.ExecClientControlMessage{
			Message: &agentv1.ExecClientControlMessage_StreamClose{StreamClose: &agentv1.ExecClientStreamClose{Id: pc.exec.GetId()}}}}}); err != nil {
			return err
		}
	}
	r.calls = nil
	return nil
}

// alive reports whether the run's stream is still open.
func (r *run) alive() bool {
	select {
	case <-r.done:
		return false
	default:
		return r.ctx.Err() == nil
	}
}

// abort ends the run: the upstream call is cancelled and every goroutine
// of the run has returned when it does.
func (r *run) abort(cause error) { r.finish(cause, keys.Outcome{Kind: keys.OK}) }

// finish ends the run once, reporting the key's outcome.
func (r *run) finish(cause error, o keys.Outcome) {
	r.endOnce.Do(func() {
		if errors.Is(cause, errTurnDone) {
			r.settleHeartbeat()
		}
		r.cancel(cause)
		r.conn.Close()
		r.wg.Wait()
		r.lease.Done(o)
		if cause != nil && !errors.Is(cause, errTurnDone) {
			r.log.Debug("native: run ended", "run", r.id, "why", cause)
		}
	})
}

// heartbeatSettle bounds the wait for a heartbeat being sent when a run
// ends cleanly.
const heartbeatSettle = time.Second

// settleHeartbeat lets a heartbeat already on its way be answered before
// a cleanly ended run is cancelled, for at most heartbeatSettle: over
// HTTP/1.1 a BidiAppend cut by the cancellation costs its pooled
// connection, and the next run would dial again. The stream has ended,
// so the heartbeat sends no other.
func (r *run) settleHeartbeat() {
	t := time.NewTimer(heartbeatSettle)
	defer t.Stop()
	select {
	case <-r.beating:
	case <-t.C:
	}
}

var (
	errTurnDone = errors.New("turn ended")
	errCut      = errors.New("the stream ended before the turn did")
)

// step is how a consume ended.
type step uint8

const (
	stepDone   step = iota + 1 // turn_ended came: the answer is complete
	stepParked                 // the model waits on tool calls
)

// consume streams the run's events to fn until the turn ends, the model
// waits on its tool calls, or something fails. sent says whether fn was
// given anything.
func (r *run) consume(ctx context.Context, fn func(upstream.Delta) error, sent *bool) (step, *models.Usage, error) {
	o := r.c.opts
	idle := time.NewTimer(o.IdleTimeout)
	defer idle.Stop()
	stall := time.NewTimer(o.StallTimeout)
	defer stall.Stop()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	started, got := 0, 0
	for {
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-r.ctx.Done():
			cause := context.Cause(r.ctx)
			return 0, nil, models.Upstream(http.StatusBadGateway, "cursor_run_ended", cause, "the Cursor run ended: %v", cause)
		case <-idle.C:
			return 0, nil, models.Upstream(http.StatusGatewayTimeout, "upstream_timeout", nil,
				"Cursor sent nothing for %s (TIMEOUT); try again or raise TIMEOUT", o.IdleTimeout)
		case <-stall.C:
			return 0, nil, models.Upstream(http.StatusGatewayTimeout, "upstream_stalled", nil,
				"Cursor's run made no progress for %s, only heartbeats; try again", o.StallTimeout)
		case <-settle.C:
			if len(r.calls) > 0 && got >= started {
				return stepParked, nil, nil
			}
			settle.Reset(o.CallSettle)
		case ev := <-r.events:
			idle.Reset(o.IdleTimeout)
			if ev.kind != evHeartbeat {
				stall.Reset(o.StallTimeout)
				if len(r.calls) > 0 {
					settle.Reset(o.CallSettle)
				}
			}
			switch ev.kind {
			case evText, evThinking:
				if ev.text == "" {
					continue
				}
				kind := upstream.DeltaText
				if ev.kind == evThinking {
					kind = upstream.DeltaReasoning
				}
				*sent = true
				if err := fn(upstream.Delta{Kind: kind, Text: ev.text}); err != nil {
					return 0, nil, err
				}
			case evCallStarted:
				started++
			case evCallRefused:
				got++
			case evCall:
				got++
				pc := ev.call
				pc.id = utils.NewCallID()
				r.calls = append(r.calls, pc)
				*sent = true
				if err := fn(upstream.Delta{Kind: upstream.DeltaToolCall, Call: models.ToolCall{ID: pc.id, Name: pc.name, Arguments: pc.args}}); err != nil {
					return 0, nil, err
				}
				settle.Reset(o.CallSettle)
			case evTurnEnded:
				// The answer is whole, and its usage with it: what the
				// stream still sends (the checkpoint, its end) is read
				// after the caller has the answer (afterTurn).
				return stepDone, ev.usage, nil
			case evEnd:
				switch {
				case ev.err != nil:
					return 0, nil, ev.err
				case len(r.calls) > 0:
					return 0, nil, fmt.Errorf("%w while the model waited on its tool calls", errCut)
				default:
					return 0, nil, errCut
				}
			}
		}
	}
}

// turnTail bounds the read of a run's tail, from turn_ended to the
// stream's end (the checkpoint comes in between), with the idle timeout
// when that is shorter.
const turnTail = 5 * time.Second

// errTailTimeout ends a run whose stream lingered past turnTail after
// turn_ended.
var errTailTimeout = errors.New("the stream lingered after turn_ended")

// afterTurn settles a run whose turn ended. The stream's tail is read to its
// end, so the server sees the run finish rather than cancelled, but only once
// the client has the answer (in the request's epilogue when ctx has one).
// The read is bounded by turnTail from turn_ended and by ctx.
func (r *run) afterTurn(ctx context.Context) {
	r.lease.Done(keys.Outcome{Kind: keys.OK})
	deadline := time.Now().Add(min(turnTail, r.c.opts.IdleTimeout))
	tail := func() { r.finish(r.readTail(ctx, deadline), keys.Outcome{Kind: keys.OK}) }
	if !epilogue.AfterAnswer(ctx, tail) {
		tail()
	}
}

// readTail waits for the run's stream to end, until deadline or ctx's
// end, and says why it stopped waiting (errTurnDone: the stream ended).
// The pump keeps the checkpoint and answers what the server still asks
// meanwhile; the events it passes on are dropped.
func (r *run) readTail(ctx context.Context, deadline time.Time) error {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		// An end that has come wins over a deadline that passed while
		// the tail waited in the epilogue: select picks at random among
		// the cases ready.
		select {
		case ev := <-r.events:
			if ev.kind == evEnd {
				return errTurnDone
			}
			continue
		case <-r.done:
			return errTurnDone
		default:
		}
		select {
		case ev := <-r.events:
			if ev.kind == evEnd {
				return errTurnDone
			}
		case <-r.done:
			return errTurnDone
		case <-r.ctx.Done():
			return context.Cause(r.ctx)
		case <-ctx.Done():
			return fmt.Errorf("the client left during the run's tail: %w", context.Cause(ctx))
		case <-timer.C:
			return errTailTimeout
		}
	}
}
