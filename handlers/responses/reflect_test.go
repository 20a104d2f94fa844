package responses

import (
	"errors"
	"strings"

	"cursor2api/handlers/sse"
	"cursor2api/models"
	"cursor2api/utils"
)

// reflectWriter is the StreamWriter as it was before it appended its text
// events by hand, every event through encoding/json: the oracle the
// StreamWriter's bytes are held to.
type reflectWriter struct {
	*sse.Writer

	resp  Response // grows an item as each one is done
	names Names
	seq   int

	opened bool
	cur    *OutputItem // the item being streamed, nil between items
	buf    strings.Builder
	// space is white space waiting for the text it precedes: alone, as
	// before a call, it would be a blank message.
	space string
}

// newReflectWriter returns a writer of the response base on w; names map
// the core's tool names back into their namespaces.
func newReflectWriter(w *sse.Writer, base Response, names Names) *reflectWriter {
	base.Output = []OutputItem{}
	return &reflectWriter{Writer: w, resp: base, names: names}
}

// Response returns the response as written so far: whole once Finish has
// returned.
func (s *reflectWriter) Response() Response { return s.resp }

func (s *reflectWriter) emit(ev Event) error {
	ev.SequenceNumber = s.next()
	return s.Event(ev.Type, ev)
}

// next returns the next sequence number.
func (s *reflectWriter) next() int {
	s.seq++
	return s.seq - 1
}

// snapshot is a copy of the response for a lifecycle event.
func (s *reflectWriter) snapshot() *Response {
	r := s.resp
	r.Output = append([]OutputItem{}, s.resp.Output...)
	return &r
}

// open writes response.created and response.in_progress once.
func (s *reflectWriter) open() error {
	if s.opened {
		return nil
	}
	s.opened = true
	if err := s.emit(Event{Type: EventCreated, Response: s.snapshot()}); err != nil {
		return err
	}
	return s.emit(Event{Type: EventInProgress, Response: s.snapshot()})
}

// start opens a new item, closing the one in progress.
func (s *reflectWriter) start(it OutputItem) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := s.closeItem(); err != nil {
		return err
	}
	it.Status = StatusInProgress
	s.cur = &it
	s.buf.Reset()
	if err := s.emit(Event{Type: EventItemAdded, OutputIndex: ptr(len(s.resp.Output)), Item: ptr(it)}); err != nil {
		return err
	}
	switch it.Type {
	case ItemMessage:
		return s.emit(Event{Type: EventPartAdded, ItemID: it.ID, OutputIndex: ptr(len(s.resp.Output)), ContentIndex: ptr(0), Part: ptr(TextPart(""))})
	case ItemReasoning:
		return s.emit(Event{Type: EventSummaryPartAdded, ItemID: it.ID, OutputIndex: ptr(len(s.resp.Output)), SummaryIndex: ptr(0), Part: ptr(SummaryPart(""))})
	}
	return nil
}

// closeItem ends the item in progress, if any, with its done events.
func (s *reflectWriter) closeItem() error {
	it := s.cur
	if it == nil {
		return nil
	}
	s.cur = nil
	index := len(s.resp.Output)
	text := s.buf.String()
	switch it.Type {
	case ItemMessage:
		it.Text, it.Status = text, StatusCompleted
		if err := s.emit(Event{Type: EventTextDone, ItemID: it.ID, OutputIndex: ptr(index), ContentIndex: ptr(0), Text: ptr(text), Logprobs: emptyList()}); err != nil {
			return err
		}
		if err := s.emit(Event{Type: EventPartDone, ItemID: it.ID, OutputIndex: ptr(index), ContentIndex: ptr(0), Part: ptr(TextPart(text))}); err != nil {
			return err
		}
	case ItemReasoning:
		it.Text, it.Status = text, StatusCompleted
		if err := s.emit(Event{Type: EventSummaryTextDone, ItemID: it.ID, OutputIndex: ptr(index), SummaryIndex: ptr(0), Text: ptr(text)}); err != nil {
			return err
		}
		if err := s.emit(Event{Type: EventSummaryPartDone, ItemID: it.ID, OutputIndex: ptr(index), SummaryIndex: ptr(0), Part: ptr(SummaryPart(text))}); err != nil {
			return err
		}
	case ItemFunctionCall, ItemToolSearchCall:
		// A call the core did not end is cut off: its arguments stay as
		// they are, incomplete.
		it.Arguments, it.Status = text, StatusIncomplete
	}
	s.resp.Output = append(s.resp.Output, *it)
	return s.emit(Event{Type: EventItemDone, OutputIndex: ptr(index), Item: it})
}

// Text streams visible text into the message item in progress, starting
// one after any other item. White space that would start a message waits
// for the text it precedes.
func (s *reflectWriter) Text(text string) error {
	if text == "" {
		return nil
	}
	if s.cur == nil || s.cur.Type != ItemMessage {
		if strings.Trim(text, utils.JSONSpace) == "" {
			s.space += text
			return nil
		}
		text, s.space = s.space+text, ""
	}
	return s.textDelta(text)
}

// textDelta writes text into the message in progress, starting one if
// need be.
func (s *reflectWriter) textDelta(text string) error {
	if s.cur == nil || s.cur.Type != ItemMessage {
		if err := s.start(OutputItem{ID: itemID("msg"), Type: ItemMessage}); err != nil {
			return err
		}
	}
	s.buf.WriteString(text)
	return s.emit(Event{Type: EventTextDelta, ItemID: s.cur.ID, OutputIndex: ptr(len(s.resp.Output)), ContentIndex: ptr(0), Delta: &text, Logprobs: emptyList()})
}

// Reasoning streams shown reasoning as the summary of a reasoning item.
func (s *reflectWriter) Reasoning(text string) error {
	if text == "" {
		return nil
	}
	if s.cur == nil || s.cur.Type != ItemReasoning {
		if err := s.start(OutputItem{ID: itemID("rs"), Type: ItemReasoning}); err != nil {
			return err
		}
	}
	s.buf.WriteString(text)
	return s.emit(Event{Type: EventSummaryTextDelta, ItemID: s.cur.ID, OutputIndex: ptr(len(s.resp.Output)), SummaryIndex: ptr(0), Delta: &text})
}

// ToolCallStart adds a function_call item with empty arguments, or a
// tool_search_call.
func (s *reflectWriter) ToolCallStart(id, name string) error {
	s.space = ""
	q := s.names.Split(name)
	if q.Search {
		return s.start(OutputItem{ID: itemID("tsc"), Type: ItemToolSearchCall, CallID: id})
	}
	return s.start(OutputItem{ID: itemID("fc"), Type: ItemFunctionCall, CallID: id, Name: q.Name, Namespace: q.Namespace})
}

// ToolCallArguments streams a fragment of the open call's arguments.
func (s *reflectWriter) ToolCallArguments(fragment string) error {
	if fragment == "" {
		return nil
	}
	if s.cur == nil || (s.cur.Type != ItemFunctionCall && s.cur.Type != ItemToolSearchCall) {
		return errors.New("tool-call arguments outside a tool call")
	}
	s.buf.WriteString(fragment)
	if s.cur.Type == ItemToolSearchCall {
		return nil // no delta event: the arguments go out in the item
	}
	return s.emit(Event{Type: EventArgumentsDelta, ItemID: s.cur.ID, OutputIndex: ptr(len(s.resp.Output)), Delta: &fragment})
}

// ToolCallEnd ends the open call: its arguments are done, and the item is
// completed, or incomplete when the core found the call invalid after
// its arguments had streamed (they are then not valid JSON).
func (s *reflectWriter) ToolCallEnd(complete bool) error {
	it := s.cur
	if it == nil || (it.Type != ItemFunctionCall && it.Type != ItemToolSearchCall) {
		return errors.New("tool-call end outside a tool call")
	}
	s.cur = nil
	index := len(s.resp.Output)
	it.Arguments = s.buf.String()
	it.Status = StatusCompleted
	if !complete {
		it.Status = StatusIncomplete
	}
	if it.Type == ItemToolSearchCall {
		s.resp.Output = append(s.resp.Output, *it)
		return s.emit(Event{Type: EventItemDone, OutputIndex: ptr(index), Item: it})
	}
	if err := s.emit(Event{Type: EventArgumentsDone, ItemID: it.ID, OutputIndex: ptr(index), Name: it.Name, Arguments: ptr(it.Arguments)}); err != nil {
		return err
	}
	s.resp.Output = append(s.resp.Output, *it)
	return s.emit(Event{Type: EventItemDone, OutputIndex: ptr(index), Item: it})
}

// Finish ends the last item and writes response.completed with the whole
// response and its usage.
func (s *reflectWriter) Finish(_ models.FinishReason, usage models.Usage) error {
	if err := s.open(); err != nil {
		return err
	}
	if s.space != "" && len(s.resp.Output) == 0 && s.cur == nil {
		// An answer of white space alone is still an answer.
		if err := s.textDelta(s.space); err != nil {
			return err
		}
	}
	s.space = ""
	if err := s.closeItem(); err != nil {
		return err
	}
	s.resp.Status = StatusCompleted
	u := toUsage(usage)
	s.resp.Usage = &u
	defer s.Close()
	return s.emit(Event{Type: EventCompleted, Response: s.snapshot()})
}

// Error ends a started stream with an error event, then response.failed
// carrying the error and the output so far, the item it cut off marked
// incomplete.
func (s *reflectWriter) Error(e *models.Error) error {
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
		if it.Type == ItemFunctionCall || it.Type == ItemToolSearchCall {
			it.Arguments = s.buf.String()
		} else {
			it.Text = s.buf.String()
		}
		s.resp.Output = append(s.resp.Output, *it)
	}
	s.resp.Status = StatusFailed
	s.resp.Error = &ResponseError{Code: failureCode(e), Message: e.Message}
	return s.emit(Event{Type: EventFailed, Response: s.snapshot()})
}
