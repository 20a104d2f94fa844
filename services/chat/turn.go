package chat

import (
	"context"
	"fmt"
	"strings"

	"cursor2api/models"
	"cursor2api/utils"
	"cursor2api/utils/toolproto"
)

// countingSink passes the answer on to the door's sink and remembers
// whether any complete tool call reached the client, for the finish
// reason: a call left incomplete is no call to run.
type countingSink struct {
	Sink
	calls int
}

func (c *countingSink) ToolCallEnd(complete bool) error {
	if complete {
		c.calls++
	}
	return c.Sink.ToolCallEnd(complete)
}

func (c *countingSink) reason() models.FinishReason {
	if c.calls > 0 {
		return models.FinishToolCalls
	}
	return models.FinishStop
}

// sendCall sends one whole call.
func sendCall(sink Sink, id, name, arguments string) error {
	if err := sink.ToolCallStart(id, name); err != nil {
		return err
	}
	if err := sink.ToolCallArguments(arguments); err != nil {
		return err
	}
	return sink.ToolCallEnd(true)
}

// turnSink passes one turn on to the client's sink, holding it back while
// it may still be discarded: until the first valid call, or with holdAll
// until finish. Once released, it still holds each call's arguments until
// they pass streamAfter bytes, so that a small call is checked whole
// before any of it is sent.
type turnSink struct {
	sink     Sink
	released bool
	holdAll  bool
	held     []heldEvent
	bad      []toolproto.Event
	calls    int
	// sentAny is set once anything of the turn reached the client: from
	// then on it can no longer be asked again.
	sentAny bool

	// streamAfter is the size from which a call's arguments stream
	// (0: at once); pending holds the pieces of a call until then.
	streamAfter int
	pending     *pendingCall
	// streaming is set while a call's arguments stream to the client;
	// sent is how many bytes of them have been sent.
	streaming bool
	sent      int
	// cut is set when the turn reached the request's MaxOutputTokens.
	cut bool
}

// pendingCall is a call whose arguments are held until they are whole or
// large enough to stream.
type pendingCall struct {
	name   string
	pieces strings.Builder
}

type heldEvent struct {
	kind      toolproto.EventKind
	text      string
	id, name  string
	arguments string
}

func (t *turnSink) Text(text string) error {
	return t.textual(toolproto.EventText, text, t.sink.Text)
}

func (t *turnSink) Reasoning(text string) error {
	return t.textual(toolproto.EventThinking, text, t.sink.Reasoning)
}

// textual sends a piece of text or reasoning with send once the turn is
// released, and holds it as kind until then.
func (t *turnSink) textual(kind toolproto.EventKind, text string, send func(string) error) error {
	if t.released {
		t.sentAny = t.sentAny || text != ""
		return send(text)
	}
	t.held = append(t.held, heldEvent{kind: kind, text: text})
	return nil
}

// toolCall sends a whole, valid call, releasing the turn before it.
func (t *turnSink) toolCall(id, name, arguments string) error {
	t.calls++
	if t.holdAll {
		t.held = append(t.held, heldEvent{kind: toolproto.EventToolCall, id: id, name: name, arguments: arguments})
		return nil
	}
	if err := t.release(); err != nil {
		return err
	}
	t.sentAny = true
	return sendCall(t.sink, id, name, arguments)
}

// badCall records a call that cannot be sent. While nothing of the turn
// has reached the client, the turn is held again so that it can be asked
// once more; after that, the client is told in text instead.
func (t *turnSink) badCall(ev toolproto.Event) error {
	t.bad = append(t.bad, ev)
	t.pending = nil
	if t.released && !t.holdAll && !t.sentAny {
		t.released = false
	}
	if t.released {
		t.sentAny = true
		return t.sink.Text(badCallNote(ev))
	}
	t.held = append(t.held, heldEvent{kind: toolproto.EventBadCall, text: badCallNote(ev)})
	return nil
}

// startCall opens a call whose arguments may stream, when the turn is
// out already. A held turn reads the call whole, from its EventToolCall,
// so that it can still be checked, coerced or asked again; so does a
// released one until the arguments pass streamAfter bytes.
func (t *turnSink) startCall(name string) error {
	if !t.released || t.holdAll {
		return nil
	}
	t.pending = &pendingCall{name: name}
	return t.streamIfLarge()
}

func (t *turnSink) callArguments(fragment string) error {
	if fragment == "" {
		return nil
	}
	if t.pending != nil {
		t.pending.pieces.WriteString(fragment)
		return t.streamIfLarge()
	}
	if !t.streaming {
		return nil
	}
	t.sent += len(fragment)
	return t.sink.ToolCallArguments(fragment)
}

// streamIfLarge starts streaming the pending call once its arguments are
// past streamAfter: a call that large is worth watching grow, and is
// rare enough that its being left incomplete when it turns out broken is
// the lesser cost.
func (t *turnSink) streamIfLarge() error {
	c := t.pending
	if t.streamAfter > 0 && c.pieces.Len() <= t.streamAfter {
		return nil
	}
	t.pending = nil
	t.streaming, t.sent, t.sentAny = true, c.pieces.Len(), true
	if err := t.sink.ToolCallStart(utils.NewCallID(), c.name); err != nil {
		return err
	}
	if c.pieces.Len() == 0 {
		return nil
	}
	return t.sink.ToolCallArguments(c.pieces.String())
}

// endCall completes a streamed call with the closers its pieces lack,
// once its arguments pass the schema. A call that does not is left
// incomplete, which no client runs, and the text says why.
func (t *turnSink) endCall(ctx context.Context, ev toolproto.Event, checker *ArgumentChecker) error {
	t.streaming = false
	t.calls++
	if _, err := checker.Check(ctx, ev.Name, ev.Arguments); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		ev.Reason = err.Error()
		return t.endBadCall(ev)
	}
	// Coerced arguments cannot replace what was sent; the call goes as
	// the model wrote it, as OpenAI's own would.
	if rest := ev.Arguments[min(t.sent, len(ev.Arguments)):]; rest != "" {
		if err := t.sink.ToolCallArguments(rest); err != nil {
			return err
		}
	}
	return t.sink.ToolCallEnd(true)
}

// endBadCall ends a streamed call that turned out invalid.
func (t *turnSink) endBadCall(ev toolproto.Event) error {
	if t.streaming {
		t.streaming = false
		t.calls++
	}
	t.bad = append(t.bad, ev)
	if err := t.sink.ToolCallEnd(false); err != nil {
		return err
	}
	return t.sink.Text(streamedCallNote(ev))
}

// heldText is the visible text held back so far.
func (t *turnSink) heldText() string {
	var b strings.Builder
	for _, ev := range t.held {
		if ev.kind == toolproto.EventText {
			b.WriteString(ev.text)
		}
	}
	return b.String()
}

// empty reports that the turn said nothing and called nothing, and so
// nothing of it reached the client: a slip to ask again, never an empty
// answer to send (the web chat's persona ends a turn at a call of its own
// tools with no text).
func (t *turnSink) empty() bool {
	return t.calls == 0 && len(t.bad) == 0 && !t.sentAny && strings.TrimSpace(t.heldText()) == ""
}

// finish sends whatever is still held: the turn is final.
func (t *turnSink) finish() error { return t.release() }

func (t *turnSink) release() error {
	if t.released {
		return nil
	}
	t.released = true
	held := t.held
	t.held = nil
	for _, ev := range held {
		var err error
		switch ev.kind {
		case toolproto.EventThinking:
			err = t.sink.Reasoning(ev.text)
		case toolproto.EventToolCall:
			err = sendCall(t.sink, ev.id, ev.name, ev.arguments)
		default:
			err = t.sink.Text(ev.text)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// badCallNote is what the client sees of a call that could not be sent,
// so that it is never dropped silently.
func badCallNote(ev toolproto.Event) string {
	return fmt.Sprintf("\n[The model's call of %s was not sent: %s]\n%s\n", ev.Name, ev.Reason, strings.TrimSpace(ev.Text))
}

// streamedCallNote is what the client sees of a streamed call that turned
// out invalid. Its arguments are already in the client's hands: the note
// does not repeat them.
func streamedCallNote(ev toolproto.Event) string {
	return fmt.Sprintf("\n[The model's call of %s above is incomplete and must not be run: %s]\n", ev.Name, ev.Reason)
}

// answerSink collects a non-streamed answer.
type answerSink struct {
	text, thinking strings.Builder
	calls          []models.ToolCall
	runs           []models.ToolRun
}

func (a *answerSink) ToolRunStart(models.ToolRun) error { return nil }

func (a *answerSink) ToolRunEnd(run models.ToolRun) error {
	a.runs = append(a.runs, run)
	return nil
}

func (a *answerSink) Text(s string) error      { a.text.WriteString(s); return nil }
func (a *answerSink) Reasoning(s string) error { a.thinking.WriteString(s); return nil }

func (a *answerSink) ToolCallStart(id, name string) error {
	a.calls = append(a.calls, models.ToolCall{ID: id, Name: name})
	return nil
}

func (a *answerSink) ToolCallArguments(fragment string) error {
	if n := len(a.calls); n > 0 {
		a.calls[n-1].Arguments += fragment
	}
	return nil
}

func (a *answerSink) ToolCallEnd(bool) error { return nil }

func (a *answerSink) Finish(models.FinishReason, models.Usage) error { return nil }
