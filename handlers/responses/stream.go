package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cursor2api/handlers/sse"
	"cursor2api/models"
	"cursor2api/utils"
)

// Event types of a streamed response.
const (
	EventCreated          = "response.created"
	EventInProgress       = "response.in_progress"
	EventCompleted        = "response.completed"
	EventFailed           = "response.failed"
	EventIncomplete       = "response.incomplete"
	EventItemAdded        = "response.output_item.added"
	EventItemDone         = "response.output_item.done"
	EventPartAdded        = "response.content_part.added"
	EventPartDone         = "response.content_part.done"
	EventTextDelta        = "response.output_text.delta"
	EventTextDone         = "response.output_text.done"
	EventArgumentsDelta   = "response.function_call_arguments.delta"
	EventArgumentsDone    = "response.function_call_arguments.done"
	EventCustomInputDelta = "response.custom_tool_call_input.delta"
	EventCustomInputDone  = "response.custom_tool_call_input.done"
	EventSummaryPartAdded = "response.reasoning_summary_part.added"
	EventSummaryPartDone  = "response.reasoning_summary_part.done"
	EventSummaryTextDelta = "response.reasoning_summary_text.delta"
	EventSummaryTextDone  = "response.reasoning_summary_text.done"
	EventError            = "error"
	// EventKeepalive is OpenAI's own keepalive of a stream: no content,
	// the next sequence_number; the official SDKs know it and pass it by.
	EventKeepalive = "keepalive"
)

// StreamWriter is a chat.Sink that writes the answer as typed events, each
// with an increasing sequence_number (Codex CLI requires it), from
// response.created to response.completed. Text events are appended without
// reflection (append.go): an item's text is encoded once, by its deltas,
// and reused by its done events, response.completed and the store.
type StreamWriter struct {
	*sse.Writer

	resp  Response // grows an item as each one is done
	names Names
	seq   int

	opened bool
	// cut is set when the answer ended at max_output_tokens: its last
	// item and the response are incomplete.
	cut bool
	cur *OutputItem // the item being streamed, nil between items
	buf textPieces  // the text of cur so far
	// space is white space waiting for the text it precedes: alone, as
	// before a call, it would be a blank message. Appended, not
	// concatenated: an upstream may send it a byte at a time.
	space []byte

	// items are the done items of resp.Output as JSON, each encoded once
	// for its output_item.done and reused by response.completed and the
	// store.
	items []json.RawMessage
	out   []byte      // the event being appended, reused
	enc   encodedText // cur's text as JSON, from its delta events
	parts [][]byte    // the pieces of an event, reused
}

// textPieces collects the text of the item in progress as the pieces it
// streams in, put together once when the item ends: a buffer would copy
// a long text again each time it grows.
type textPieces []string

func (p *textPieces) WriteString(s string) { *p = append(*p, s) }
func (p textPieces) String() string        { return strings.Join(p, "") }
func (p *textPieces) Reset()               { clear(*p); *p = (*p)[:0] }

// NewStreamWriter returns a writer of the response base on w; names map
// the core's tool names back into their namespaces.
func NewStreamWriter(w *sse.Writer, base Response, names Names) *StreamWriter {
	base.Output = []OutputItem{}
	return &StreamWriter{Writer: w, resp: base, names: names}
}

// Response returns the response as written so far: whole once Finish has
// returned.
func (s *StreamWriter) Response() Response { return s.resp }

// OutputItems returns the response's output items as JSON, the same as
// OutputItems(s.Response()) without encoding them again.
func (s *StreamWriter) OutputItems() []json.RawMessage { return s.items }

// emitJSON writes the appended event b and keeps b's memory for the next
// one, unless an answer's whole text made it huge.
func (s *StreamWriter) emitJSON(typ string, b []byte) error {
	return s.emitWith(s.EventJSON, typ, b)
}

// emitWith is emitJSON writing through emit.
func (s *StreamWriter) emitWith(emit sse.Emit, typ string, b []byte) error {
	s.out = b[:0]
	if cap(b) > 64<<10 {
		s.out = nil
	}
	return emit(typ, b)
}

// deltaEvent writes a delta of the item in progress: its type, sequence
// number, item reference (with indexKey, if any), the delta, and for a
// message's text an empty logprobs.
func (s *StreamWriter) deltaEvent(typ, indexKey, delta string, logprobs bool) error {
	b := appendHead(s.out[:0], typ, s.next())
	b = appendItemRef(b, len(s.resp.Output), s.cur.ID, indexKey)
	b = append(b, `,"delta":`...)
	at := len(b)
	b = sse.AppendString(b, delta)
	s.enc.add(delta, b[at+1:len(b)-1])
	if logprobs {
		b = append(b, `,"logprobs":[]`...)
	}
	return s.emitJSON(typ, append(b, '}'))
}

func (s *StreamWriter) emit(ev Event) error {
	ev.SequenceNumber = s.next()
	return s.Event(ev.Type, ev)
}

// next returns the next sequence number.
func (s *StreamWriter) next() int {
	s.seq++
	return s.seq - 1
}

// snapshot is a copy of the response for a lifecycle event.
func (s *StreamWriter) snapshot() *Response {
	r := s.resp
	r.Output = append([]OutputItem{}, s.resp.Output...)
	return &r
}

// open writes response.created and response.in_progress once.
func (s *StreamWriter) open() error { return s.openWith(s.EventJSON) }

// openWith is open writing through emit.
func (s *StreamWriter) openWith(emit sse.Emit) error {
	if s.opened {
		return nil
	}
	s.opened = true
	// The two events carry the same response: encoded once.
	raw, err := marshalEvent(s.snapshot())
	if err != nil {
		return fmt.Errorf("encoding %s: %w", EventCreated, err)
	}
	for _, typ := range [...]string{EventCreated, EventInProgress} {
		b := appendHead(s.out[:0], typ, s.next())
		b = append(b, `,"response":`...)
		b = append(b, raw...)
		if err := s.emitWith(emit, typ, append(b, '}')); err != nil {
			return err
		}
	}
	return nil
}

// PingIfIdle keeps a silent stream alive with a keepalive event, next in
// sequence (the first one opens the response): Codex's stream idle timer
// counts events and passes over an SSE comment or a WebSocket ping, so a
// ping would not keep it from dropping a long answer.
// It runs on the keepalive's timer, and touches the writer only between
// held steps: the door's Kit.Stream holds every call of the core.
func (s *StreamWriter) PingIfIdle(idle time.Duration) error {
	return s.KeepAliveIfIdle(idle, s.keepalive)
}

// keepalive is the sse.Keepalive of PingIfIdle.
func (s *StreamWriter) keepalive(emit sse.Emit) error {
	if !s.opened {
		return s.openWith(emit)
	}
	b := appendHead(s.out[:0], EventKeepalive, s.next())
	return s.emitWith(emit, EventKeepalive, append(b, '}'))
}

func ptr[T any](v T) *T { return &v }

// start opens a new item, closing the one in progress.
func (s *StreamWriter) start(it OutputItem) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := s.closeItem(); err != nil {
		return err
	}
	it.Status = StatusInProgress
	s.cur = &it
	s.buf.Reset()
	s.enc.reset()
	index := len(s.resp.Output)
	switch it.Type {
	case ItemMessage:
		if err := s.itemAdded(&it, index); err != nil {
			return err
		}
		return s.partAdded(EventPartAdded, it.ID, index, "content_index", textPart)
	case ItemReasoning:
		if err := s.itemAdded(&it, index); err != nil {
			return err
		}
		return s.partAdded(EventSummaryPartAdded, it.ID, index, "summary_index", summaryPart)
	}
	return s.emit(Event{Type: EventItemAdded, OutputIndex: ptr(index), Item: ptr(it)})
}

// emptyText is the encoding of an empty text.
var emptyText = [][]byte{[]byte(`""`)}

// itemAdded writes the output_item.added of a message or reasoning item
// just started, which has no text yet.
func (s *StreamWriter) itemAdded(it *OutputItem, index int) error {
	b := appendHead(s.out[:0], EventItemAdded, s.next())
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"item":`...)
	b, _ = appendItem(b, it, nil) // a message or reasoning: always known
	return s.emitJSON(EventItemAdded, append(b, '}'))
}

// partAdded writes the empty part of the item just started, as its
// content_part.added or reasoning_summary_part.added.
func (s *StreamWriter) partAdded(typ, itemID string, index int, indexKey string, shape partShape) error {
	b := appendHead(s.out[:0], typ, s.next())
	b = appendItemRef(b, index, itemID, indexKey)
	b = append(b, `,"part":`...)
	b = appendPart(b, shape, emptyText)
	return s.emitJSON(typ, append(b, '}'))
}

// closeItem ends the item in progress, if any, with its done events.
// They repeat the item's whole text, which is encoded once for all of
// them.
func (s *StreamWriter) closeItem() error {
	it := s.cur
	if it == nil {
		return nil
	}
	s.cur = nil
	index := len(s.resp.Output)
	text := s.buf.String()
	enc := s.enc.of(text)
	status := StatusCompleted
	if s.cut {
		status = StatusIncomplete
	}
	switch it.Type {
	case ItemMessage:
		it.Text, it.Status = text, status
		if err := s.textDone(EventTextDone, it.ID, index, "content_index", enc, true); err != nil {
			return err
		}
		if err := s.partDone(EventPartDone, it.ID, index, "content_index", textPart, enc); err != nil {
			return err
		}
	case ItemReasoning:
		it.Text, it.Status = text, status
		if err := s.textDone(EventSummaryTextDone, it.ID, index, "summary_index", enc, false); err != nil {
			return err
		}
		if err := s.partDone(EventSummaryPartDone, it.ID, index, "summary_index", summaryPart, enc); err != nil {
			return err
		}
	case ItemFunctionCall, ItemToolSearchCall:
		// A call the core did not end is cut off: its arguments stay as
		// they are, incomplete.
		it.Arguments, it.Status = text, StatusIncomplete
	case ItemCustomToolCall:
		it.Input, it.Status = CustomCallInput(text), StatusIncomplete
		enc = s.enc.set(it.Input)
	}
	return s.itemDone(it, index, enc)
}

// eventOf writes an event of head, the pieces of an encoded text and
// tail.
func (s *StreamWriter) eventOf(typ string, head []byte, text [][]byte, tail ...[]byte) error {
	s.out = head
	s.parts = append(s.parts[:0], head)
	s.parts = append(s.parts, text...)
	s.parts = append(s.parts, tail...)
	return s.EventJSON(typ, s.parts...)
}

// textDone writes the encoded text of the item just ended as its
// output_text.done or reasoning_summary_text.done.
func (s *StreamWriter) textDone(typ, itemID string, index int, indexKey string, text [][]byte, logprobs bool) error {
	b := appendHead(s.out[:0], typ, s.next())
	b = appendItemRef(b, index, itemID, indexKey)
	b = append(b, `,"text":`...)
	tail := closeObject
	if logprobs {
		tail = logprobsTail
	}
	return s.eventOf(typ, b, text, tail)
}

var (
	closeObject  = []byte(`}`)
	logprobsTail = []byte(`,"logprobs":[]}`)
)

// partDone writes the part of the item just ended, of its encoded text,
// as its content_part.done or reasoning_summary_part.done.
func (s *StreamWriter) partDone(typ, itemID string, index int, indexKey string, shape partShape, text [][]byte) error {
	b := appendHead(s.out[:0], typ, s.next())
	b = appendItemRef(b, index, itemID, indexKey)
	b = append(b, `,"part":`...)
	b = append(b, shape.head...)
	return s.eventOf(typ, b, text, shape.tail, closeObject)
}

// itemDone adds the ended item to the output and writes its
// output_item.done; text is its encoded text, or a call's arguments.
func (s *StreamWriter) itemDone(it *OutputItem, index int, text [][]byte) error {
	s.resp.Output = append(s.resp.Output, *it)
	encoded, ok := appendItem(make([]byte, 0, s.enc.size+len(it.ID)+len(it.CallID)+len(it.Name)+len(it.Namespace)+256), it, text)
	if !ok {
		return fmt.Errorf("unknown output item type %q", it.Type)
	}
	s.items = append(s.items, encoded)
	b := appendHead(s.out[:0], EventItemDone, s.next())
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"item":`...)
	s.out = b
	return s.EventJSON(EventItemDone, b, encoded, closeObject)
}

// Text streams visible text into the message item in progress, starting
// one after any other item. White space that would start a message waits
// for the text it precedes.
func (s *StreamWriter) Text(text string) error {
	if text == "" {
		return nil
	}
	if s.cur == nil || s.cur.Type != ItemMessage {
		if strings.Trim(text, utils.JSONSpace) == "" {
			s.space = append(s.space, text...)
			return nil
		}
		if len(s.space) > 0 {
			text, s.space = string(append(s.space, text...)), s.space[:0]
		}
	}
	return s.textDelta(text)
}

// textDelta writes text into the message in progress, starting one if
// need be.
func (s *StreamWriter) textDelta(text string) error {
	if s.cur == nil || s.cur.Type != ItemMessage {
		if err := s.start(OutputItem{ID: itemID("msg"), Type: ItemMessage}); err != nil {
			return err
		}
	}
	s.buf.WriteString(text)
	return s.deltaEvent(EventTextDelta, "content_index", text, true)
}

// Reasoning streams shown reasoning as the summary of a reasoning item.
func (s *StreamWriter) Reasoning(text string) error {
	if text == "" {
		return nil
	}
	if s.cur == nil || s.cur.Type != ItemReasoning {
		if err := s.start(OutputItem{ID: itemID("rs"), Type: ItemReasoning}); err != nil {
			return err
		}
	}
	s.buf.WriteString(text)
	return s.deltaEvent(EventSummaryTextDelta, "summary_index", text, false)
}

// ToolCallStart adds a function_call item with empty arguments, or a
// custom_tool_call with empty input.
func (s *StreamWriter) ToolCallStart(id, name string) error {
	s.space = s.space[:0]
	return s.start(s.names.callItem(id, name))
}

// inCall reports whether a call is in progress.
func (s *StreamWriter) inCall() bool {
	return s.cur != nil && (s.cur.Type == ItemFunctionCall || s.cur.Type == ItemCustomToolCall || s.cur.Type == ItemToolSearchCall)
}

// ToolCallArguments streams a fragment of the open call's arguments. A
// custom call's fragments are JSON around its input: they are kept, and
// the input goes out whole when the call ends; a tool_search_call has no
// delta event, and its arguments go out in its item.
func (s *StreamWriter) ToolCallArguments(fragment string) error {
	if fragment == "" {
		return nil
	}
	if !s.inCall() {
		return errors.New("tool-call arguments outside a tool call")
	}
	s.buf.WriteString(fragment)
	if s.cur.Type != ItemFunctionCall {
		return nil
	}
	return s.deltaEvent(EventArgumentsDelta, "", fragment, false)
}

// ToolCallEnd ends the open call: its arguments (or input) are done, and
// the item is completed, or incomplete when the core found the call
// invalid after its arguments had streamed (they are then not valid
// JSON).
func (s *StreamWriter) ToolCallEnd(complete bool) error {
	if !s.inCall() {
		return errors.New("tool-call end outside a tool call")
	}
	it := s.cur
	status := StatusCompleted
	if !complete {
		status = StatusIncomplete
	}
	switch it.Type {
	case ItemCustomToolCall:
		return s.customCallEnd(status)
	case ItemToolSearchCall:
		s.cur = nil
		it.Arguments, it.Status = s.buf.String(), status
		return s.itemDone(it, len(s.resp.Output), nil)
	}
	s.cur = nil
	index := len(s.resp.Output)
	it.Arguments = s.buf.String()
	it.Status = status
	enc := s.enc.of(it.Arguments)
	b := appendHead(s.out[:0], EventArgumentsDone, s.next())
	b = appendItemRef(b, index, it.ID, "")
	if it.Name != "" {
		b = append(b, `,"name":`...)
		b = sse.AppendString(b, it.Name)
	}
	b = append(b, `,"arguments":`...)
	if err := s.eventOf(EventArgumentsDone, b, enc, closeObject); err != nil {
		return err
	}
	return s.itemDone(it, index, enc)
}

// customCallEnd ends the open custom call with status: its input, taken
// out of the arguments the core streamed, goes out as one
// custom_tool_call_input.delta, then its done event and the item.
func (s *StreamWriter) customCallEnd(status string) error {
	it := s.cur
	index := len(s.resp.Output)
	it.Input, it.Status = CustomCallInput(s.buf.String()), status
	s.enc.reset()
	if it.Input != "" {
		if err := s.deltaEvent(EventCustomInputDelta, "", it.Input, false); err != nil {
			return err
		}
	}
	s.cur = nil
	enc := s.enc.of(it.Input)
	b := appendHead(s.out[:0], EventCustomInputDone, s.next())
	b = appendItemRef(b, index, it.ID, "")
	b = append(b, `,"input":`...)
	if err := s.eventOf(EventCustomInputDone, b, enc, closeObject); err != nil {
		return err
	}
	return s.itemDone(it, index, enc)
}

// Finish ends the last item and writes response.completed with the whole
// response and its usage; or, for an answer cut at max_output_tokens,
// response.incomplete, the last item and the response incomplete.
func (s *StreamWriter) Finish(r models.FinishReason, usage models.Usage) error {
	if err := s.open(); err != nil {
		return err
	}
	if len(s.space) > 0 && len(s.resp.Output) == 0 && s.cur == nil {
		// An answer of white space alone is still an answer.
		if err := s.textDelta(string(s.space)); err != nil {
			return err
		}
	}
	s.space = s.space[:0]
	s.cut = r == models.FinishLength
	if err := s.closeItem(); err != nil {
		return err
	}
	typ := EventCompleted
	s.resp.Status = StatusCompleted
	if s.cut {
		typ = EventIncomplete
		s.resp.Status = StatusIncomplete
		s.resp.IncompleteDetails = &maxOutputTokensReached
	}
	u := toUsage(usage)
	s.resp.Usage = &u
	defer s.Close()
	return s.completed(typ)
}

// maxOutputTokensReached is the incomplete_details of a cut answer.
var maxOutputTokensReached = json.RawMessage(`{"reason":"max_output_tokens"}`)

// outputMarker is where the output goes in a lifecycle event encoded
// without it. Before it come only keys and encoded strings, numbers and
// literals, in which `,"` cannot occur but between fields, and
// incomplete_details, which is then null.
var outputMarker = []byte(`,"output":null,`)

// completed writes the last event, typ (response.completed or
// response.incomplete): the response is encoded by reflection without its
// output, and the items already encoded for their output_item.done events
// go in its place.
func (s *StreamWriter) completed(typ string) error {
	seq := s.next()
	shell := s.resp
	shell.Output = nil
	if shell.IncompleteDetails != nil {
		return s.Event(typ, Event{Type: typ, SequenceNumber: seq, Response: s.snapshot()})
	}
	pieces, ok, err := withOutput(Event{Type: typ, SequenceNumber: seq, Response: &shell}, s.items)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", typ, err)
	}
	if !ok {
		return s.Event(typ, Event{Type: typ, SequenceNumber: seq, Response: s.snapshot()})
	}
	return s.EventJSON(typ, pieces...)
}

// withOutput encodes v, whose output is nil, with the encoded items in
// place of that null; ok is false when there is no such place. The caller
// keeps incomplete_details null, so outputMarker's first match is output.
func withOutput(v any, items []json.RawMessage) (pieces [][]byte, ok bool, err error) {
	raw, err := marshalEvent(v)
	if err != nil {
		return nil, false, err
	}
	at := bytes.Index(raw, outputMarker)
	if at < 0 {
		return nil, false, nil
	}
	pieces = make([][]byte, 0, 2*len(items)+3)
	pieces = append(pieces, raw[:at], []byte(`,"output":[`))
	for i, it := range items {
		if i > 0 {
			pieces = append(pieces, comma)
		}
		pieces = append(pieces, it)
	}
	pieces = append(pieces, []byte("],"), raw[at+len(outputMarker):])
	return pieces, true, nil
}

var comma = []byte(",")

// marshalEvent encodes v as sse.Writer.Event encodes an event's data:
// JSON without HTML escaping, on one line.
func marshalEvent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Error ends a started stream with an error event, then response.failed
// carrying the error and the output so far, the item it cut off marked
// incomplete.
func (s *StreamWriter) Error(e *models.Error) error {
	if s.Closed() {
		return nil
	}
	defer s.Close()
	if err := s.open(); err != nil {
		return err
	}
	body := ErrorBodyOf(e).Error
	if err := s.Event(EventError, ErrorEvent{Type: EventError, SequenceNumber: s.next(), Code: body.Code, Message: body.Message, Param: body.Param}); err != nil {
		return err
	}
	// The item cut off by the failure is part of the output, incomplete.
	if it := s.cur; it != nil {
		s.cur = nil
		it.Status = StatusIncomplete
		text := s.buf.String()
		enc := s.enc.of(text)
		switch it.Type {
		case ItemFunctionCall, ItemToolSearchCall:
			it.Arguments = text
		case ItemCustomToolCall:
			it.Input = CustomCallInput(text)
			enc = s.enc.set(it.Input)
		default:
			it.Text = text
		}
		s.resp.Output = append(s.resp.Output, *it)
		if encoded, ok := appendItem(nil, it, enc); ok {
			s.items = append(s.items, encoded)
		}
	}
	s.resp.Status = StatusFailed
	s.resp.Error = &ResponseError{Code: failureCode(e), Message: e.Message}
	return s.emit(Event{Type: EventFailed, Response: s.snapshot()})
}
