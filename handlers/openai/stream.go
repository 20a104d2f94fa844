package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"cursor2api/models"
	"cursor2api/utils"
)

// finishReason names a neutral finish reason as OpenAI does.
func finishReason(r models.FinishReason) string {
	if r == models.FinishToolCalls {
		return "tool_calls"
	}
	return "stop"
}

// StreamWriter encodes the core's answer (it is a chat.Sink) as a streamed
// chat completion: one "data: <json>" server-sent event per chunk, never a
// named event, and "data: [DONE]" at the end. It assigns tool-call indexes
// in order.
//
// Nothing is written until the first event, so that a caller can still
// answer with a real HTTP status when the upstream fails before any output;
// OnStart runs just before that first write (to set response headers).
type StreamWriter struct {
	w       io.Writer
	flush   func()
	OnStart func()

	id           string
	model        string
	created      int64
	includeUsage bool

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
// called after every event so that it reaches the client at once. With
// includeUsage, a usage chunk follows the finish chunk.
func NewStreamWriter(w io.Writer, flush func(), id, model string, created int64, includeUsage bool) *StreamWriter {
	return &StreamWriter{w: w, flush: flush, id: id, model: model, created: created, includeUsage: includeUsage, lastWrite: time.Now()}
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
	return s.chunk(Delta{Role: "assistant", Content: &empty}, nil)
}

// Text writes a content delta.
func (s *StreamWriter) Text(text string) error {
	if text == "" {
		return nil
	}
	return s.delta(Delta{Content: &text})
}

// Reasoning writes a reasoning_content delta.
func (s *StreamWriter) Reasoning(text string) error {
	if text == "" {
		return nil
	}
	return s.delta(Delta{ReasoningContent: text})
}

// delta writes one delta chunk, opening the stream first if need be.
func (s *StreamWriter) delta(d Delta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.start(); err != nil {
		return err
	}
	return s.chunk(d, nil)
}

// ToolCallStart opens the next tool call: its first delta, with its index,
// id, type, name and empty arguments, as OpenAI itself streams them.
func (s *StreamWriter) ToolCallStart(id, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.start(); err != nil {
		return err
	}
	index := s.toolCalls
	s.toolCalls++
	head := ToolCall{Index: &index, ID: id, Type: "function", Function: FunctionCall{Name: name}}
	return s.chunk(Delta{ToolCalls: []ToolCall{head}}, nil)
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
	frag := ToolCall{Index: &index, Function: FunctionCall{Arguments: fragment}}
	return s.chunk(Delta{ToolCalls: []ToolCall{frag}}, nil)
}

// ToolCallEnd writes nothing: a chat-completion stream does not mark the
// end of a call, and a call left incomplete simply stays invalid JSON.
func (s *StreamWriter) ToolCallEnd(bool) error { return nil }

// Finish writes the chunk carrying finish_reason, then the usage chunk
// when the request asked for it, then [DONE].
func (s *StreamWriter) Finish(r models.FinishReason, usage models.Usage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.start(); err != nil {
		return err
	}
	reason := finishReason(r)
	if err := s.chunk(Delta{}, &reason); err != nil {
		return err
	}
	if s.includeUsage {
		u := toUsage(usage)
		c := ChatCompletionChunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model, Choices: []ChunkChoice{}, Usage: &u}
		if err := s.event(c); err != nil {
			return err
		}
	}
	return s.doneEvent()
}

// Error ends a stream that has already started with an OpenAI error object
// as a data event, then [DONE].
func (s *StreamWriter) Error(e *models.Error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil
	}
	s.commit()
	if err := s.event(ErrorBodyOf(e)); err != nil {
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

func (s *StreamWriter) chunk(delta Delta, finish *string) error {
	return s.event(ChatCompletionChunk{
		ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []ChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}},
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

func toUsage(u models.Usage) Usage {
	return Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
}
