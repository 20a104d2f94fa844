package webchat

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"

	"cursor2api/models"
	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// The docs persona (since April 2026) has tools of its own (read_file,
// read_dir), and the model may call any tool natively, in Vercel AI SDK v5
// tool frames:
//
//	tool-input-start      toolCallId, toolName
//	tool-input-delta      toolCallId, inputTextDelta (the input's JSON text, in pieces)
//	tool-input-available  toolCallId, toolName, input (the parsed input)
//	tool-input-error      toolCallId, toolName, input, errorText: a call the
//	                      server cannot run (a tool it lacks, or input it
//	                      cannot parse: input is then the raw text, a string)
//	tool-output-available / tool-output-error: the server's result, ignored
//
// A call of a tool the server lacks ends the reply with finishReason
// "tool-calls". Each call becomes an upstream.DeltaToolCall for the core to
// judge; the frames are rare, so gjson reads them off the fast path.

// toolCall is a native call being assembled.
type toolCall struct {
	id, name string
	input    []byte // the tool-input-delta pieces
}

// toolCalls assembles the calls of one stream.
type toolCalls struct {
	open []*toolCall         // started and not delivered, in the order they started
	done map[string]struct{} // ids delivered: later frames of theirs are ignored
}

// toolFrame reads a frame of type typ when it is a frame of a call's
// input, and ignores the server's tool output frames (nothing for the
// client). It reports whether typ was a tool frame.
func (f *frameReader) toolFrame(typ string, frame gjson.Result) bool {
	switch typ {
	case "tool-input-start", "tool-input-delta", "tool-input-available", "tool-input-error":
	case "tool-output-available", "tool-output-error":
		return true
	default:
		return false
	}
	if f.calls == nil {
		f.calls = &toolCalls{done: map[string]struct{}{}}
	}
	id := frame.Get("toolCallId").String()
	if _, ok := f.calls.done[id]; ok && id != "" {
		return true
	}
	call := f.calls.find(id)
	if call == nil {
		call = &toolCall{id: id}
		f.calls.open = append(f.calls.open, call)
	}
	if name := frame.Get("toolName").String(); name != "" {
		call.name = name
	}
	switch typ {
	case "tool-input-delta":
		if len(call.input) <= maxFrame { // beyond, the input is broken anyway: bound the memory
			call.input = append(call.input, frame.Get("inputTextDelta").String()...)
		}
	case "tool-input-available", "tool-input-error":
		f.deliverCall(call, frame.Get("input"))
	}
	return true
}

// find returns the open call with id, nil when there is none.
func (t *toolCalls) find(id string) *toolCall {
	for _, c := range t.open {
		if c.id == id {
			return c
		}
	}
	return nil
}

// deliverCall queues a whole call after the text before it, and closes it.
func (f *frameReader) deliverCall(call *toolCall, input gjson.Result) {
	t := f.calls
	for i, c := range t.open {
		if c == call {
			t.open = append(t.open[:i], t.open[i+1:]...)
			break
		}
	}
	if call.id != "" {
		t.done[call.id] = struct{}{}
	}
	if call.name == "" {
		return // a call of no tool: nothing anybody could run
	}
	id := call.id
	if id == "" {
		id = utils.NewCallID()
	}
	if len(f.pending) > 0 {
		f.carry = append(f.carry, upstream.Delta{Kind: f.kind, Text: string(f.pending)})
		f.pending = f.pending[:0]
	}
	f.carry = append(f.carry, upstream.Delta{Kind: upstream.DeltaToolCall,
		Call: models.ToolCall{ID: id, Name: call.name, Arguments: callArguments(input, call.input)}})
}

// endCalls delivers the calls the stream started but never completed
// with an input frame, with the input their deltas carried.
func (f *frameReader) endCalls() {
	if f.calls == nil {
		return
	}
	for len(f.calls.open) > 0 {
		f.deliverCall(f.calls.open[0], gjson.Result{})
	}
}

// callArguments is a call's input as JSON text: the parsed input compacted,
// else the raw text the model wrote, else {}. Broken input passes as written:
// the core checks every call's arguments and asks again.
func callArguments(input gjson.Result, pieces []byte) string {
	switch input.Type {
	case gjson.JSON:
		return compactJSON([]byte(input.Raw))
	case gjson.String:
		if s := input.String(); s != "" {
			return compactJSON([]byte(s))
		}
	case gjson.Number, gjson.True, gjson.False:
		return input.Raw
	}
	if len(bytes.TrimSpace(pieces)) > 0 {
		return compactJSON(pieces)
	}
	return "{}"
}

// compactJSON returns s without insignificant white space when it is
// JSON, and as it is otherwise.
func compactJSON(s []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, s); err != nil {
		return string(s)
	}
	return b.String()
}
