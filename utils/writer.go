package utils

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

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

	// mu serialises the writes of the answer and of the keepalive pings,
	// which come from another goroutine.
	mu        sync.Mutex
	committed bool // OnStart ran: the status and headers are sent
	started   bool // the opening role chunk is written
	done      bool
	toolCalls int
	lastWrite time.Time
}

// NewStreamWriter returns a writer for one response. flush, if not nil, is
// called after every event so that it reaches the client at once.
func NewStreamWriter(w io.Writer, flush func(), id, model string, created int64) *StreamWriter {
	return &StreamWriter{w: w, flush: flush, id: id, model: model, created: created, lastWrite: time.Now()}
}

// Started reports whether anything has been written, so that the HTTP
// status can no longer change.
func (s *StreamWriter) Started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

func (s *StreamWriter) commit() {
	if !s.committed {
		s.committed = true
		if s.OnStart != nil {
			s.OnStart()
		}
	}
}

// start writes the opening role chunk once.
func (s *StreamWriter) start() error {
	if s.started {
		return nil
	}
	s.commit()
	s.started = true
	empty := ""
	return s.chunk(models.Delta{Role: "assistant", Content: &empty}, nil)
}

// Text writes a content delta.
func (s *StreamWriter) Text(text string) error {
	if text == "" {
		return nil
	}
	return s.delta(models.Delta{Content: &text})
}

// Reasoning writes a reasoning_content delta.
func (s *StreamWriter) Reasoning(text string) error {
	if text == "" {
		return nil
	}
	return s.delta(models.Delta{ReasoningContent: text})
}

// delta writes one delta chunk, opening the stream first if need be.
func (s *StreamWriter) delta(d models.Delta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.start(); err != nil {
		return err
	}
	return s.chunk(d, nil)
}

// ToolCall writes one complete tool call: a first delta with its id, type,
// name and empty arguments, then the arguments as a fragment, as OpenAI
// itself streams them.
func (s *StreamWriter) ToolCall(id, name, arguments string) error {
	if err := s.ToolCallStart(id, name); err != nil {
		return err
	}
	return s.ToolCallArguments(arguments)
}

// ToolCallStart opens the next tool call: its first delta, with its index,
// id, type, name and empty arguments.
func (s *StreamWriter) ToolCallStart(id, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.start(); err != nil {
		return err
	}
	index := s.toolCalls
	s.toolCalls++
	head := models.ToolCall{Index: &index, ID: id, Type: "function", Function: models.FunctionCall{Name: name}}
	return s.chunk(models.Delta{ToolCalls: []models.ToolCall{head}}, nil)
}

// ToolCallArguments writes the next fragment of the arguments of the call
// ToolCallStart opened last.
func (s *StreamWriter) ToolCallArguments(fragment string) error {
	if fragment == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.toolCalls == 0 {
		return errors.New("tool-call arguments before any tool call")
	}
	index := s.toolCalls - 1
	frag := models.ToolCall{Index: &index, Function: models.FunctionCall{Arguments: fragment}}
	return s.chunk(models.Delta{ToolCalls: []models.ToolCall{frag}}, nil)
}

// Finish writes the chunk carrying finish_reason ("tool_calls" when any
// call was written, else "stop"), then the usage chunk when usage is not
// nil, then [DONE].
func (s *StreamWriter) Finish(usage *models.Usage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil
	}
	s.commit()
	if err := s.event(e.Body()); err != nil {
		return err
	}
	return s.doneEvent()
}

// PingIfIdle writes an SSE comment, which clients ignore, when nothing has
// been written for idle, to keep proxies and clients from closing the
// connection while the upstream is slow. The first ping commits the 200
// status: an error after it arrives as an error chunk.
func (s *StreamWriter) PingIfIdle(idle time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A tenth of slack, so that a ticker of period idle whose ticks jitter
	// still pings on every tick of a silent stream.
	if s.done || time.Since(s.lastWrite) < idle-idle/10 {
		return nil
	}
	s.commit()
	return s.write([]byte(": ping\n\n"))
}

func (s *StreamWriter) doneEvent() error {
	s.done = true
	return s.write([]byte("data: [DONE]\n\n"))
}

func (s *StreamWriter) chunk(delta models.Delta, finish *string) error {
	return s.event(models.ChatCompletionChunk{
		ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []models.ChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}},
	})
}

// event writes v as one "data:" event. HTML characters are not escaped:
// the text reads as the model wrote it, which is equally valid JSON.
func (s *StreamWriter) event(v any) error {
	var buf bytes.Buffer
	buf.WriteString("data: ")
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding chunk: %w", err)
	}
	buf.WriteString("\n") // Encode ended the line; a blank line ends the event
	return s.write(buf.Bytes())
}

func (s *StreamWriter) write(b []byte) error {
	s.lastWrite = time.Now()
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	if s.flush != nil {
		s.flush()
	}
	return nil
}

// Completion builds a non-streaming response. content is null when the
// turn has tool calls and no text but white space.
func Completion(id, model string, created int64, text, reasoning string, calls []models.ToolCall, usage models.Usage) models.ChatCompletion {
	msg := models.ResponseMessage{Role: "assistant", ReasoningContent: reasoning}
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
