package gemini

import (
	"encoding/json"
	"strings"

	"cursor2api/handlers/door"
	"cursor2api/handlers/sse"
	"cursor2api/models"
	"cursor2api/utils"
)

// NoPing is the keepalive of a Gemini stream: none. Gemini CLI fails on an
// SSE comment ("Incomplete JSON segment"), the Go SDK on a comment, an
// event: line or [DONE], and an empty data event reads as an answer.
var NoPing = sse.NoPing

// StreamWriter is a chat.Sink that writes the answer as bare "data:"
// GenerateContentResponse events, one per part. The last event, without
// parts, carries finishReason (without one Gemini CLI asks again; calls
// finish with STOP) and the usage. A call goes out whole, in one part.
type StreamWriter struct {
	*sse.Writer
	id, model string
	thoughts  bool

	door.HeldCall // the call whose arguments are arriving

	tail []byte // what follows a text part's object: the rest of the event
	buf  []byte // reused for every text event
}

// NewStreamWriter returns a writer for one response on w. thoughts says
// whether the request asked to see thought parts (includeThoughts, or a
// -thinking model); without it reasoning is not sent.
func NewStreamWriter(w *sse.Writer, id, model string, thoughts bool) *StreamWriter {
	s := &StreamWriter{Writer: w, id: id, model: model, thoughts: thoughts}
	s.tail = append(s.tail, `],"role":"model"},"index":0}]`...)
	if model != "" {
		s.tail = append(s.tail, `,"modelVersion":`...)
		s.tail = sse.AppendString(s.tail, model)
	}
	if id != "" {
		s.tail = append(s.tail, `,"responseId":`...)
		s.tail = sse.AppendString(s.tail, id)
	}
	s.tail = append(s.tail, '}')
	return s
}

// textPart sends a text or thought part, the hot event of a stream, by
// appending its fixed shape to a reused buffer: the bytes part writes for
// it, without reflection (TestTextPartMatchesEncodingJSON).
func (s *StreamWriter) textPart(text string, thought bool) error {
	b := append(s.buf[:0], `{"candidates":[{"content":{"parts":[{"text":`...)
	b = sse.AppendString(b, text)
	if thought {
		b = append(b, `,"thought":true`...)
	}
	b = append(b, '}')
	b = append(b, s.tail...)
	s.buf = b
	if cap(s.buf) > 64<<10 {
		s.buf = nil // keep no huge buffer for the rest of the stream
	}
	return s.EventJSON("", b)
}

// NewResponseID returns a response id.
func NewResponseID() string { return utils.RandomString(utils.Alphanumerics, 22) }

// part sends one part in an event of its own.
func (s *StreamWriter) part(p ResponsePart) error {
	return s.Event("", s.response([]ResponsePart{p}, "", nil))
}

func (s *StreamWriter) response(parts []ResponsePart, finish string, usage *UsageMetadata) Response {
	return Response{
		Candidates:    []Candidate{{Content: ResponseContent{Parts: parts, Role: "model"}, FinishReason: finish}},
		UsageMetadata: usage, ModelVersion: s.model, ResponseID: s.id,
	}
}

// Text sends a text part.
func (s *StreamWriter) Text(text string) error {
	if text == "" {
		return nil
	}
	return s.textPart(text, false)
}

// Reasoning sends a thought part, when the request asked for them.
func (s *StreamWriter) Reasoning(text string) error {
	if text == "" || !s.thoughts {
		return nil
	}
	return s.textPart(text, true)
}

// ToolCallEnd sends a complete call as a functionCall part; an incomplete
// one is dropped (the core's note in the text says why).
func (s *StreamWriter) ToolCallEnd(complete bool) error {
	call, ok := s.EndCall(complete)
	if !ok {
		return nil
	}
	return s.part(ResponsePart{FunctionCall: &FunctionCall{ID: call.ID, Name: call.Name, Args: args(strings.Join(call.Fragments, ""))}})
}

// Finish sends the last event: no part, the finish reason and the usage.
func (s *StreamWriter) Finish(r models.FinishReason, usage models.Usage) error {
	s.Close()
	u := usageOf(usage)
	return s.Event("", s.response([]ResponsePart{}, finishReason(r), &u))
}

// Error ends a stream that has already started with Google's error body
// as its last event, which the SDKs raise as the API's error.
func (s *StreamWriter) Error(e *models.Error) error {
	if s.Closed() {
		return nil
	}
	s.Close()
	return s.Event("", ErrorBodyOf(e))
}

// args is a call's arguments as JSON ({} when it has none).
func args(a string) json.RawMessage {
	if strings.TrimSpace(a) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(a)
}

// finishReason names why the answer ended; a turn of calls, or one cut at
// a stop sequence, ends with STOP as Gemini's do.
func finishReason(r models.FinishReason) string {
	if r == models.FinishLength {
		return FinishMaxTokens
	}
	return FinishStop
}

// usageOf renders the core's usage in Gemini's convention.
func usageOf(u models.Usage) UsageMetadata {
	thoughts := min(u.ReasoningTokens, u.OutputTokens)
	candidates := u.OutputTokens - thoughts
	return UsageMetadata{
		PromptTokenCount: u.InputTokens, CandidatesTokenCount: candidates, ThoughtsTokenCount: thoughts,
		CachedContentTokenCount: u.CacheReadTokens, TotalTokenCount: u.InputTokens + candidates + thoughts,
	}
}

// FromAnswer builds a whole answer: thoughts (when asked for), text, then
// the calls.
func FromAnswer(id, model string, ans *models.Answer, thoughts bool) Response {
	parts := []ResponsePart{}
	if thoughts && ans.Thinking != "" {
		t := ans.Thinking
		parts = append(parts, ResponsePart{Text: &t, Thought: true})
	}
	if ans.Text != "" || len(ans.ToolCalls) == 0 {
		t := ans.Text
		parts = append(parts, ResponsePart{Text: &t})
	}
	for _, c := range ans.ToolCalls {
		parts = append(parts, ResponsePart{FunctionCall: &FunctionCall{ID: c.ID, Name: c.Name, Args: args(c.Arguments)}})
	}
	u := usageOf(ans.Usage)
	return Response{
		Candidates:    []Candidate{{Content: ResponseContent{Parts: parts, Role: "model"}, FinishReason: finishReason(ans.Finish)}},
		UsageMetadata: &u, ModelVersion: model, ResponseID: id,
	}
}
