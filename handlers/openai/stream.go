package openai

import (
	"errors"
	"strconv"
	"strings"

	"cursor2api/handlers/sse"
	"cursor2api/models"
	"cursor2api/utils"
)

// finishReason names a neutral finish reason as OpenAI does.
func finishReason(r models.FinishReason) string {
	switch r {
	case models.FinishToolCalls:
		return "tool_calls"
	case models.FinishLength:
		return "length"
	}
	return "stop"
}

// StreamWriter encodes the core's answer (it is a chat.Sink) as a streamed
// chat completion: one "data: <json>" server-sent event per chunk, never a
// named event, and "data: [DONE]" at the end. It assigns tool-call indexes
// in order. Nothing is written before the first chunk (see sse.Writer).
type StreamWriter struct {
	*sse.Writer

	id           string
	model        string
	created      int64
	includeUsage bool

	started   bool // the opening role chunk is written
	toolCalls int

	prefix []byte // a text chunk up to its delta's field name
	buf    []byte // reused for every text chunk
}

// NewStreamWriter returns a writer for one response on w. With
// includeUsage, a usage chunk follows the finish chunk.
func NewStreamWriter(w *sse.Writer, id, model string, created int64, includeUsage bool) *StreamWriter {
	s := &StreamWriter{Writer: w, id: id, model: model, created: created, includeUsage: includeUsage}
	s.prefix = append(s.prefix, `{"id":`...)
	s.prefix = sse.AppendString(s.prefix, id)
	s.prefix = append(s.prefix, `,"object":"chat.completion.chunk","created":`...)
	s.prefix = strconv.AppendInt(s.prefix, created, 10)
	s.prefix = append(s.prefix, `,"model":`...)
	s.prefix = sse.AppendString(s.prefix, model)
	s.prefix = append(s.prefix, `,"choices":[{"index":0,"delta":{"`...)
	return s
}

// open writes the opening role chunk once.
func (s *StreamWriter) open() error {
	if s.started {
		return nil
	}
	s.started = true
	return s.fixedChunk(`"role":"assistant","content":""},"finish_reason":null}]}`)
}

// fixedChunk writes a chunk whose delta's object, after its opening
// brace, and the rest of the chunk are tail...: the opening role chunk
// and the finish chunk, once per stream each, without reflection
// (TestFixedChunksMatchEncodingJSON).
func (s *StreamWriter) fixedChunk(tail ...string) error {
	b := append(s.buf[:0], s.prefix[:len(s.prefix)-1]...) // up to the delta's "{"
	for _, t := range tail {
		b = append(b, t...)
	}
	s.buf = b
	return s.EventJSON("", b)
}

// Text writes a content delta.
func (s *StreamWriter) Text(text string) error {
	if text == "" {
		return nil
	}
	return s.textChunk("content", text)
}

// Reasoning writes a reasoning_content delta.
func (s *StreamWriter) Reasoning(text string) error {
	if text == "" {
		return nil
	}
	return s.textChunk("reasoning_content", text)
}

// textChunk writes the chunk of a content or reasoning delta, the hot
// path of a stream, by appending its fixed shape to a reused buffer: the
// same bytes as encoding/json's (without HTML escaping), without
// reflection or an allocation per delta.
func (s *StreamWriter) textChunk(field, text string) error {
	if err := s.open(); err != nil {
		return err
	}
	b := append(s.buf[:0], s.prefix...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = sse.AppendString(b, text)
	b = append(b, `},"finish_reason":null}]}`...)
	s.buf = b
	if cap(s.buf) > 64<<10 {
		s.buf = nil // keep no huge buffer for the rest of the stream
	}
	return s.EventJSON("", b)
}

// delta writes one delta chunk, opening the stream first if need be.
func (s *StreamWriter) delta(d Delta) error {
	if err := s.open(); err != nil {
		return err
	}
	return s.chunk(d, nil)
}

// ToolCallStart opens the next tool call: its first delta, with its index,
// id, type, name and empty arguments, as OpenAI itself streams them.
func (s *StreamWriter) ToolCallStart(id, name string) error {
	index := s.toolCalls
	s.toolCalls++
	return s.delta(Delta{ToolCalls: []ToolCall{{Index: &index, ID: id, Type: "function", Function: FunctionCall{Name: name}}}})
}

// ToolCallArguments writes the next fragment of the arguments of the call
// ToolCallStart opened last.
func (s *StreamWriter) ToolCallArguments(fragment string) error {
	if fragment == "" {
		return nil
	}
	if s.toolCalls == 0 {
		return errors.New("tool-call arguments before any tool call")
	}
	index := s.toolCalls - 1
	return s.delta(Delta{ToolCalls: []ToolCall{{Index: &index, Function: FunctionCall{Arguments: fragment}}}})
}

// ToolCallEnd writes nothing: a chat-completion stream does not mark the
// end of a call, and a call left incomplete simply stays invalid JSON.
func (s *StreamWriter) ToolCallEnd(bool) error { return nil }

// Finish writes the chunk carrying finish_reason, then the usage chunk
// when the request asked for it, then [DONE].
func (s *StreamWriter) Finish(r models.FinishReason, usage models.Usage) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := s.fixedChunk(`},"finish_reason":"`, finishReason(r), `"}]}`); err != nil {
		return err
	}
	if s.includeUsage {
		u := toUsage(usage)
		c := ChatCompletionChunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model, Choices: []ChunkChoice{}, Usage: &u}
		if err := s.Event("", c); err != nil {
			return err
		}
	}
	return s.done()
}

// Error ends a stream that has already started with an OpenAI error object
// as a data event, then [DONE].
func (s *StreamWriter) Error(e *models.Error) error {
	if s.Closed() {
		return nil
	}
	if err := s.Event("", ErrorBodyOf(e)); err != nil {
		return err
	}
	return s.done()
}

func (s *StreamWriter) done() error {
	s.Close()
	return s.Data("[DONE]")
}

func (s *StreamWriter) chunk(delta Delta, finish *string) error {
	return s.Event("", ChatCompletionChunk{
		ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []ChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}},
	})
}

// FromAnswer builds a non-streaming response. content is null when the
// turn has tool calls and no text but white space.
func FromAnswer(id, model string, created int64, ans *models.Answer) ChatCompletion {
	msg := ResponseMessage{Role: "assistant", ReasoningContent: ans.Thinking}
	for _, c := range ans.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Type: "function", Function: FunctionCall{Name: c.Name, Arguments: c.Arguments}})
	}
	if len(msg.ToolCalls) == 0 || strings.Trim(ans.Text, utils.JSONSpace) != "" {
		text := ans.Text
		msg.Content = &text
	}
	return ChatCompletion{
		ID: id, Object: "chat.completion", Created: created, Model: model,
		Choices: []Choice{{Index: 0, Message: msg, FinishReason: finishReason(ans.Finish)}},
		Usage:   toUsage(ans.Usage),
	}
}

// toUsage renders the core's usage. OpenAI has no field for the tokens
// written to the cache: they are part of prompt_tokens and said no more.
func toUsage(u models.Usage) Usage {
	out := Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	if u.CacheReadTokens > 0 {
		out.PromptTokensDetails = &PromptTokensDetails{CachedTokens: u.CacheReadTokens}
	}
	if u.ReasoningTokens > 0 {
		out.CompletionTokensDetails = &CompletionTokensDetails{ReasoningTokens: u.ReasoningTokens}
	}
	return out
}
