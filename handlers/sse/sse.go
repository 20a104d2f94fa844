// Package sse writes server-sent events for the streaming doors. A Writer
// sends status and headers only with its first byte, so a door can still
// answer a failure with a real status; it serialises events with pings from
// another goroutine, and writes each event's data as one line of JSON.
package sse

import (
	"bytes"
	"cursor2api/utils"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultPing is a comment line, which every SSE client ignores.
var DefaultPing = []byte(": ping\n\n")

// NoPing, as the ping of NewWriter, turns the keepalive off: for a door
// whose clients accept nothing but data events (Gemini's).
var NoPing = []byte{}

// Writer writes the events of one response.
type Writer struct {
	w     io.Writer
	send  func(data ...[]byte) error // message mode: see NewMessageWriter
	flush func()
	start func()
	ping  []byte

	mu        sync.Mutex
	committed bool          // start ran: the status and headers are sent
	closed    bool          // the stream has ended: no more pings
	born      time.Time     // when the Writer was made: the clock lastWrite counts on
	lastWrite time.Duration // since born; a monotonic reading per write, not time.Now's two
	held      int           // Hold calls not yet released
	unflushed bool          // a held write waits for Release's flush
}

// A frame is where an event is encoded and framed. Frames are pooled
// rather than kept per Writer: a stream's largest event (a Responses
// stream's last one repeats the whole answer) then grows a buffer once
// for many streams, not once per stream.
type frame struct {
	buf  []byte
	data bytes.Buffer // what enc encodes
	enc  *json.Encoder
}

var frames = sync.Pool{New: func() any {
	f := &frame{}
	f.enc = json.NewEncoder(&f.data)
	// The text reads as the model wrote it, which is equally valid JSON.
	f.enc.SetEscapeHTML(false)
	return f
}}

// maxPooledFrame is the largest buffer given back to the pool: a rare
// huge event's memory is not kept.
const maxPooledFrame = 64 << 10

func freeFrame(f *frame) {
	if cap(f.buf) > maxPooledFrame || f.data.Cap() > maxPooledFrame {
		return
	}
	f.buf = f.buf[:0]
	f.data.Reset()
	frames.Put(f)
}

// NewWriter returns a Writer on w. flush, if not nil, is called after
// every event so that it reaches the client at once; start, if not nil,
// runs just before the first byte. ping is what PingIfIdle writes (nil
// for DefaultPing, empty for none).
func NewWriter(w io.Writer, flush, start func(), ping []byte) *Writer {
	if ping == nil {
		ping = DefaultPing
	}
	return &Writer{w: w, flush: flush, start: start, ping: ping, born: time.Now()}
}

// NewMessageWriter returns a Writer for a transport that frames messages
// itself (a WebSocket): each event's data, without the SSE lines around
// it, is one call of send, in pieces to be sent as one message. It sends
// no pings, the transport has its own, but a door's Keepalive, as a message.
func NewMessageWriter(send func(data ...[]byte) error) *Writer {
	return &Writer{send: send, ping: NoPing, born: time.Now()}
}

// Started reports whether anything has been written, so that the HTTP
// status can no longer change.
func (s *Writer) Started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

// Event writes one event: an "event: name" line when name is not empty,
// then v as one "data:" line of JSON.
func (s *Writer) Event(name string, v any) error {
	f := frames.Get().(*frame)
	defer freeFrame(f)
	if err := f.enc.Encode(v); err != nil {
		return fmt.Errorf("encoding event data: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Encode ended the line; event adds the blank line that ends the event.
	return s.event(f, name, bytes.TrimSuffix(f.data.Bytes(), []byte("\n")))
}

// EventJSON writes one event whose data is json, already encoded on one
// line, for doors that encode their hot events without reflection. The
// line may come in pieces, written in order, so that a door repeating a
// long text in several events encodes it once and copies it never.
func (s *Writer) EventJSON(name string, json ...[]byte) error {
	f := frames.Get().(*frame)
	defer freeFrame(f)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.event(f, name, json...)
}

// copyBelow is the size of data under which an event is framed in one
// buffer and written whole; a larger one is written piece by piece,
// without copying its data.
const copyBelow = 32 << 10

var eventEnd = []byte("\n\n")

// event frames one event in f and writes it; s.mu is held.
func (s *Writer) event(f *frame, name string, data ...[]byte) error {
	if s.send != nil {
		s.committed = true
		s.lastWrite = time.Since(s.born)
		return s.send(data...)
	}
	b := f.buf[:0]
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	size := 0
	for _, d := range data {
		size += len(d)
	}
	if size >= copyBelow {
		f.buf = b
		parts := make([][]byte, 0, len(data)+2)
		parts = append(parts, b)
		parts = append(parts, data...)
		return s.write(append(parts, eventEnd)...)
	}
	for _, d := range data {
		b = append(b, d...)
	}
	b = append(b, eventEnd...)
	f.buf = b
	return s.write(b)
}

// Data writes one unnamed event whose data is the literal line, such as
// OpenAI's [DONE].
func (s *Writer) Data(line string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.send != nil {
		s.committed = true
		return s.send([]byte(line))
	}
	return s.write([]byte("data: " + line + "\n\n"))
}

// Close marks the end of the stream: no ping follows.
func (s *Writer) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// Closed reports whether Close was called.
func (s *Writer) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// PingIfIdle writes the ping when nothing has been written for idle, to
// keep proxies and clients from closing the connection while the upstream
// is slow. The first ping commits the 200 status: a failure after it
// arrives as the door's error event.
func (s *Writer) PingIfIdle(idle time.Duration) error {
	return s.KeepAliveIfIdle(idle, nil)
}

// Emit writes one event as EventJSON does, for a Keepalive.
type Emit func(name string, json ...[]byte) error

// Keepalive writes a door's own keepalive through emit, in place of the
// ping: events a client's idle timer counts, where it ignores a comment.
// It runs under the Writer's lock, so it calls nothing else of the Writer.
type Keepalive func(emit Emit) error

// KeepAliveIfIdle is PingIfIdle with the door's keepalive, keep (nil: the
// ping), where the ping is on, and on a message transport. Neither runs
// while a step is held (Hold): a door numbering its events numbers a
// keepalive between its steps, never inside one.
func (s *Writer) KeepAliveIfIdle(idle time.Duration, keep Keepalive) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A tenth of slack, so that a ticker of period idle whose ticks jitter
	// still pings on every tick of a silent stream.
	on := len(s.ping) > 0
	if s.send != nil {
		// A message transport pings itself, but a client's idle timer
		// (Codex's) may count messages alone: the door's keepalive runs.
		on = keep != nil
	}
	if !on || s.closed || s.held > 0 || time.Since(s.born)-s.lastWrite < idle-idle/10 {
		return nil
	}
	if keep == nil {
		return s.write(s.ping)
	}
	f := frames.Get().(*frame)
	defer freeFrame(f)
	return keep(func(name string, json ...[]byte) error { return s.event(f, name, json...) })
}

// write writes the pieces of one event, or a ping, and flushes them.
func (s *Writer) write(pieces ...[]byte) error {
	if !s.committed {
		s.committed = true
		if s.start != nil {
			s.start()
		}
	}
	s.lastWrite = time.Since(s.born)
	for _, b := range pieces {
		if _, err := s.w.Write(b); err != nil {
			return err
		}
	}
	if s.held > 0 {
		s.unflushed = true
		return nil
	}
	if s.flush != nil {
		s.flush()
	}
	return nil
}

// Hold keeps what is written in the response's buffer until the matching
// Release, so that the events of one step of an answer (a stream's
// opening events and its first delta, or its closing events and [DONE])
// go out in one write. Holds nest.
func (s *Writer) Hold() {
	s.mu.Lock()
	s.held++
	s.mu.Unlock()
}

// Release ends a Hold; the last one flushes what the holds kept.
func (s *Writer) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == 0 {
		return
	}
	s.held--
	if s.held == 0 && s.unflushed {
		s.unflushed = false
		if s.flush != nil {
			s.flush()
		}
	}
}

// AppendString appends s as a JSON string, byte for byte as Event's
// encoder writes it (encoding/json with HTML escaping off): invalid UTF-8
// becomes U+FFFD, U+2028 and U+2029 are escaped, <, > and & are not. Doors
// build their hot events with it, for EventJSON, without reflection.
func AppendString(b []byte, s string) []byte { return utils.AppendJSONString(b, s) }
