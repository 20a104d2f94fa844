package utils

import (
	"encoding/json"
	"fmt"
	"io"

	"cursor2api/models"
)

// Finish reasons.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
)

// StreamWriter encodes a streamed chat completion as OpenAI server-sent
// events: one "data: <json>" event per chunk, never a named event, and
// "data: [DONE]" at the end. It assigns tool-call indexes in order.
//
// Nothing is written until the first event, so that a caller can still
// answer with a real HTTP status when the upstream fails before any output;
// OnStart runs just before that first write (to set response headers).
type StreamWriter struct {
	w       io.Writer
	flush   func()
	OnStart func()

	id      string
	model   string
	created int64

	started   bool
	done      bool
	toolCalls int
}

// NewStreamWriter returns a writer for one response. flush, if not nil, is
// called after every event so that it reaches the client at once.
func NewStreamWriter(w io.Writer, flush func(), id, model string, created int64) *StreamWriter {
	return &StreamWriter{w: w, flush: flush, id: id, model: model, created: created}
}

// Started reports whether anything has been written.
func (s *StreamWriter) Started() bool { return s.started }

// ToolCalls reports how many tool calls have been written.
func (s *StreamWriter) ToolCalls() int { return s.toolCalls }

// start writes the opening role chunk once.
func (s *StreamWriter) start() error {
	if s.started {
		return nil
	}
	s.started = true
	if s.OnStart != nil {
		s.OnStart()
	}
	empty := ""
	return s.chunk(models.Delta{Role: "assistant", Content: &empty}, nil)
}

// Start writes the opening chunk now, so that the client knows the stream
// is alive even before the first token.
func (s *StreamWriter) Start() error { return s.start() }

// Text writes a content delta.
func (s *StreamWriter) Text(text string) error {
	if text == "" {
		return nil
	}
	if err := s.start(); err != nil {
		return err
	}
	return s.chunk(models.Delta{Content: &text}, nil)
}

// ToolCall writes one complete tool call: a first delta with its id, type,
// name and empty arguments, then the arguments as a fragment, as OpenAI
// itself streams them.
func (s *StreamWriter) ToolCall(id, name, arguments string) error {
	if err := s.start(); err != nil {
		return err
	}
	index := s.toolCalls
	s.toolCalls++
	head := models.ToolCall{Index: &index, ID: id, Type: "function", Function: models.FunctionCall{Name: name}}
	if err := s.chunk(models.Delta{ToolCalls: []models.ToolCall{head}}, nil); err != nil {
		return err
	}
	frag := models.ToolCall{Index: &index, Function: models.FunctionCall{Arguments: arguments}}
	return s.chunk(models.Delta{ToolCalls: []models.ToolCall{frag}}, nil)
}

// Finish writes the chunk carrying finish_reason ("tool_calls" when any
// call was written, else "stop"), then the usage chunk when usage is not
// nil, then [DONE].
func (s *StreamWriter) Finish(usage *models.Usage) error {
	if err := s.start(); err != nil {
		return err
	}
	reason := FinishStop
	if s.toolCalls > 0 {
		reason = FinishToolCalls
	}
	if err := s.chunk(models.Delta{}, &reason); err != nil {
		return err
	}
	if usage != nil {
		u := *usage
		c := models.ChatCompletionChunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model, Choices: []models.ChunkChoice{}, Usage: &u}
		if err := s.event(c); err != nil {
			return err
		}
	}
	return s.doneEvent()
}

// Error ends a stream that has already started with an OpenAI error object
// as a data event, then [DONE].
func (s *StreamWriter) Error(e *models.APIError) error {
	if s.done {
		return nil
	}
	s.started = true
	if err := s.event(e.Body()); err != nil {
		return err
	}
	return s.doneEvent()
}

// Ping writes an SSE comment, which clients ignore, to keep proxies from
// closing an idle connection. It does not start the stream.
func (s *StreamWriter) Ping() error {
	if _, err := io.WriteString(s.w, ": ping\n\n"); err != nil {
		return err
	}
	s.flushNow()
	return nil
}

func (s *StreamWriter) doneEvent() error {
	s.done = true
	if _, err := io.WriteString(s.w, "data: [DONE]\n\n"); err != nil {
		return err
	}
	s.flushNow()
	return nil
}

func (s *StreamWriter) chunk(delta models.Delta, finish *string) error {
	return s.event(models.ChatCompletionChunk{
		ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []models.ChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}},
	})
}

func (s *StreamWriter) event(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding chunk: %w", err)
	}
	buf := make([]byte, 0, len(b)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	s.flushNow()
	return nil
}

func (s *StreamWriter) flushNow() {
	if s.flush != nil {
		s.flush()
	}
}

// Completion builds a non-streaming response. content is null when the
// turn has tool calls and no text but white space.
func Completion(id, model string, created int64, text string, calls []models.ToolCall, usage models.Usage) models.ChatCompletion {
	msg := models.ResponseMessage{Role: "assistant"}
	reason := FinishStop
	if len(calls) > 0 {
		reason = FinishToolCalls
		msg.ToolCalls = calls
	}
	if len(calls) == 0 || !isBlank(text) {
		msg.Content = &text
	}
	return models.ChatCompletion{
		ID: id, Object: "chat.completion", Created: created, Model: model,
		Choices: []models.Choice{{Index: 0, Message: msg, FinishReason: reason}},
		Usage:   usage,
	}
}

func isBlank(s string) bool {
	for _, r := range s {
		if r != ' ' && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}
