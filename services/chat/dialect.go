package chat

import (
	"fmt"
	"strings"

	"cursor2api/models"
	"cursor2api/services/upstream"
	"cursor2api/utils"
	"cursor2api/utils/toolproto"
)

// A dialect is how the core speaks to its back door: through the text tool
// protocol, or natively with whole calls. It holds all that differs between
// the two, so either way a turn becomes the same stream of toolproto events.
type dialect interface {
	// prepare writes p.req, the upstream request of conv (the conversation
	// so far) with p's tools and choice. Prepare calls it once, and each
	// round of the gateway's tools again with the conversation it extended.
	prepare(p *Prepared, conv []models.Message) error
	// request is p.req with note (a correction for a second turn) added
	// when not empty.
	request(p *Prepared, note string) upstream.Request
	// reader reads one upstream turn into events.
	reader(p *Prepared, maxBuffered int, streamArgs bool) turnReader
	// badCallsNote asks again for calls that could not be sent;
	// missingCallNote for the call a turn that must call a tool lacked.
	badCallsNote(p *Prepared) string
	missingCallNote(p *Prepared) string
}

// turnReader turns the deltas of one upstream turn into events.
type turnReader interface {
	feed(d upstream.Delta) []toolproto.Event
	// done reports that the turn ended at its tool calls: the rest of
	// the upstream's reply need not be read.
	done() bool
	// close ends the turn, giving what was still held.
	close() []toolproto.Event
}

// textDialect is the text protocol, for back doors that only take text.
// maxInput bounds the characters of the conversation it writes.
type textDialect struct{ maxInput int }

func (d textDialect) prepare(p *Prepared, conv []models.Message) error {
	// One trigger for every round of a request with tools: the rounds
	// replay the earlier calls with it, the last (tools spent) included.
	if p.trigger == "" && p.toolsActive() {
		p.trigger = toolproto.NewTrigger()
	}
	opts := toolproto.PromptOptions{Tools: p.tools, Choice: p.choice, Trigger: p.trigger, Thinking: p.Thinking, SingleCall: p.SingleCall, MaxInputLength: d.maxInput}
	msgs, err := toolproto.BuildConversation(conv, opts)
	if err != nil {
		return err
	}
	p.req = upstream.Request{Model: p.Model.Upstream, Messages: msgs, Thinking: p.Thinking, Session: p.Session, Tenant: p.Tenant, RequestID: p.RequestID}
	return nil
}

func (textDialect) request(p *Prepared, note string) upstream.Request {
	req := p.req
	if note != "" {
		req.Messages = withNote(req.Messages, note)
	}
	return req
}

func (textDialect) reader(p *Prepared, maxBuffered int, streamArgs bool) turnReader {
	return &textReader{p: p, parser: toolproto.NewParser(toolproto.ParserOptions{
		Trigger:       p.trigger,
		Thinking:      p.Thinking,
		ToolNames:     p.ToolNames,
		RawBody:       p.RawBodies,
		MaxBuffered:   maxBuffered,
		EndTurnAtCall: true,
		StreamArgs:    streamArgs,
	})}
}

func (textDialect) badCallsNote(p *Prepared) string {
	if len(p.ToolNames) == 0 {
		return noToolsNote
	}
	return toolproto.RetryBadCallsNote(p.ToolNames, p.trigger)
}

func (textDialect) missingCallNote(p *Prepared) string {
	return toolproto.RetryMissingCallNote(p.trigger)
}

// textReader reads a text turn through the tool protocol's parser. A text
// upstream may still call a tool natively (the web chat's own tools): such
// a call is the client's when it names a declared tool, and a bad call
// otherwise.
type textReader struct {
	p      *Prepared
	parser *toolproto.Parser
}

func (r *textReader) feed(d upstream.Delta) []toolproto.Event {
	switch d.Kind {
	case upstream.DeltaText:
		return r.parser.Feed(d.Text)
	case upstream.DeltaReasoning:
		if r.p.Thinking {
			return []toolproto.Event{{Kind: toolproto.EventThinking, Text: d.Text}}
		}
	case upstream.DeltaToolCall:
		return []toolproto.Event{nativeCall(r.p, d.Call)}
	}
	return nil
}

func (r *textReader) done() bool { return r.parser.Done() }

func (r *textReader) close() []toolproto.Event { return r.parser.Close() }

// nativeDialect hands the conversation and tools to a back door that
// takes them natively.
type nativeDialect struct{}

func (nativeDialect) prepare(p *Prepared, conv []models.Message) error {
	if len(conv) == 0 {
		return models.InvalidRequest("messages", "messages must contain at least one message")
	}
	p.req = upstream.Request{Model: p.Model.Upstream, Conversation: conv, Thinking: p.Thinking, Session: p.Session, Tenant: p.Tenant, RequestID: p.RequestID}
	if p.toolsActive() {
		p.req.Tools, p.req.Choice = p.tools, p.choice
	}
	return nil
}

func (nativeDialect) request(p *Prepared, note string) upstream.Request {
	req := p.req
	if note != "" {
		req.Conversation = withNativeNote(req.Conversation, note)
	}
	return req
}

func (nativeDialect) reader(p *Prepared, _ int, _ bool) turnReader { return &nativeReader{p: p} }

func (nativeDialect) badCallsNote(p *Prepared) string {
	if len(p.ToolNames) == 0 {
		return noToolsNote
	}
	return fmt.Sprintf("Call again with a declared tool (%s) and arguments that match its input schema.", strings.Join(p.ToolNames, ", "))
}

func (nativeDialect) missingCallNote(*Prepared) string {
	return "this reply MUST call one of the declared tools."
}

// nativeReader reads a native turn: its deltas are already events.
type nativeReader struct{ p *Prepared }

func (r *nativeReader) feed(d upstream.Delta) []toolproto.Event {
	switch d.Kind {
	case upstream.DeltaText:
		return []toolproto.Event{{Kind: toolproto.EventText, Text: d.Text}}
	case upstream.DeltaReasoning:
		return []toolproto.Event{{Kind: toolproto.EventThinking, Text: d.Text}}
	case upstream.DeltaToolCall:
		return []toolproto.Event{nativeCall(r.p, d.Call)}
	}
	return nil
}

func (*nativeReader) done() bool { return false }

func (*nativeReader) close() []toolproto.Event { return nil }

// noToolsNote corrects a call made where no tool may be called.
const noToolsNote = "No tool can be called in this conversation: answer in text."

// nativeCall is the event of a call the upstream made natively: the
// client's call when it names a tool the turn may call, else a bad call
// to be asked again (the web chat's persona calls tools of its own).
func nativeCall(p *Prepared, call models.ToolCall) toolproto.Event {
	for _, name := range p.ToolNames {
		if name != call.Name {
			continue
		}
		// An upstream passes on input it could not parse as text: such
		// arguments are repaired like a text call's, or the call is bad.
		args, ok := toolproto.RepairArguments(call.Arguments, true)
		if !ok {
			return toolproto.Event{Kind: toolproto.EventBadCall, Name: call.Name, Text: call.Arguments, Reason: toolproto.ReasonBadJSON}
		}
		return toolproto.Event{Kind: toolproto.EventToolCall, ID: call.ID, Name: call.Name, Arguments: args}
	}
	reason := fmt.Sprintf("%q is not a tool of this conversation", utils.Clip(call.Name, utils.QuoteLen))
	if len(p.ToolNames) > 0 {
		reason += " (the tools are " + strings.Join(p.ToolNames, ", ") + ")"
	}
	return toolproto.Event{Kind: toolproto.EventBadCall, Name: call.Name, Text: call.Arguments, Reason: reason}
}

// withNativeNote returns a copy of conv whose last user message ends with
// note, or with note as a new user message when the conversation ends
// otherwise (with tool results).
func withNativeNote(conv []models.Message, note string) []models.Message {
	out := append([]models.Message(nil), conv...)
	if n := len(out); n > 0 && out[n-1].Role == models.RoleUser {
		last := out[n-1]
		last.Blocks = append(append([]models.Block(nil), last.Blocks...), models.Block{Kind: models.BlockText, Text: note})
		out[n-1] = last
		return out
	}
	return append(out, models.Message{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockText, Text: note}}})
}

// withNote returns a copy of msgs whose last user message ends with note.
func withNote(msgs []models.Turn, note string) []models.Turn {
	out := append([]models.Turn(nil), msgs...)
	if n := len(out); n > 0 && out[n-1].Role == models.RoleUser {
		out[n-1].Text += "\n\n" + note
		return out
	}
	return append(out, models.Turn{Role: models.RoleUser, Text: note})
}
