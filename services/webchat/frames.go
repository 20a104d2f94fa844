package webchat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// maxKeptPending bounds the merge buffer a stream keeps between reads.
const maxKeptPending = 64 << 10

// errFrameTooLong is a line of the event stream over maxFrame.
var errFrameTooLong = errors.New("upstream frame too long")

// frameReader reads the upstream's event stream line by line with a large
// buffer, and merges consecutive deltas of one kind that arrive together
// into one, so that a burst of small deltas already in hand costs the
// layers above one delta, one client event and one write.
type frameReader struct {
	r       *bufio.Reader
	idle    *idleTimer // touched by every read from the upstream
	long    []byte     // a line longer than the buffer, being assembled
	kind    upstream.DeltaKind
	pending []byte           // reused from read to read
	carry   []upstream.Delta // earlier runs of another kind and tool calls, in order
	calls   *toolCalls       // native tool calls being assembled; nil until the first tool frame
}

// newFrameReader reads body with a reader from the client's pool (its
// read buffer and merge buffers kept from stream to stream); idle (nil in
// tests) is touched whenever a read brings data.
func (c *Client) newFrameReader(body io.Reader, idle *idleTimer) *frameReader {
	src := io.Reader(body)
	if idle != nil {
		src = progressReader{body, idle}
	}
	if f, ok := c.readers.Get().(*frameReader); ok {
		f.r.Reset(src)
		f.idle = idle
		return f
	}
	return &frameReader{r: bufio.NewReaderSize(src, readBufferSize), idle: idle}
}

// freeFrameReader gives the reader back to the pool, without what a rare
// huge frame or burst made it hold.
func (c *Client) freeFrameReader(f *frameReader) {
	f.r.Reset(nil)
	f.idle, f.calls, f.kind = nil, nil, 0
	f.long = f.long[:0]
	if cap(f.long) > maxKeptPending {
		f.long = nil
	}
	f.pending = f.pending[:0]
	if cap(f.pending) > maxKeptPending {
		f.pending = nil
	}
	clear(f.carry)
	f.carry = f.carry[:0]
	c.readers.Put(f)
}

// progressReader touches the idle timer whenever a read brings data.
type progressReader struct {
	r    io.Reader
	idle *idleTimer
}

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.idle.touch()
	}
	return n, err
}

// line returns the next line without its end; it is valid until the
// next call.
func (f *frameReader) line() ([]byte, error) {
	line, err := f.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		f.long = append(f.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(f.long) > maxFrame {
				return nil, errFrameTooLong
			}
			line, err = f.r.ReadSlice('\n')
			f.long = append(f.long, line...)
		}
		if len(f.long) > maxFrame {
			return nil, errFrameTooLong
		}
		line = f.long
	}
	if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
		return nil, err
	}
	return trimEOL(line), nil
}

// trimEOL is line without its end, trimmed by hand: bytes.TrimRight
// builds its set of bytes anew on every call, once per frame.
func trimEOL(line []byte) []byte {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line
}

// buffered returns the next line, without its end, if it is already whole
// in the buffer (valid until the next read); ok is false otherwise, so the
// caller can deliver what is merged before waiting on the network.
func (f *frameReader) buffered() (line []byte, ok bool) {
	n := f.r.Buffered()
	if n == 0 {
		return nil, false
	}
	buf, _ := f.r.Peek(n)
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return nil, false
	}
	_, _ = f.r.Discard(i + 1) // within what is buffered: no read
	return trimEOL(buf[:i+1]), true
}

// drift is c.Drift, made on first use when the wiring set none.
func (c *Client) drift() *utils.Drift {
	c.driftOnce.Do(func() {
		if c.Drift == nil {
			c.Drift = utils.NewDrift(c.Logger)
		}
	})
	return c.Drift
}

// uiFrames are the Vercel AI SDK's UI message stream parts the upstream
// may send besides those the reader acts on: they carry nothing the
// answer needs. The tool frames are toolFrame's.
var uiFrames = []string{"start", "finish-step", "start-step", "text-start", "text-end", "reasoning-start", "reasoning-end",
	"message-metadata", "source-url", "source-document", "file", "abort"}

// finishReasons are the AI SDK's finish reasons ("" when the frame has none).
var finishReasons = []string{"", "stop", "length", "tool-calls", "content-filter", "error", "other", "unknown"}

// knownFrame reports whether typ is a frame type the reader knows it may
// pass over: a UI stream part of uiFrames, or a custom data-* part.
func knownFrame(typ string) bool {
	return slices.Contains(uiFrames, typ) || strings.HasPrefix(typ, "data-")
}

// frameKind names an unknown frame for the drift notice.
func frameKind(typ string) string {
	if typ == "" {
		return "frame without a type"
	}
	return fmt.Sprintf("frame type %q", typ)
}

// dataPrefix starts an upstream frame's line, as the upstream writes it.
var dataPrefix = []byte("data: ")

// deltaRun takes, in one pass over the buffer, the whole lines fastDelta
// accepts (nearly all of a reply). It stops at the first line that is not
// whole or not taken, leaving it for the general loop, whose result it equals.
func (f *frameReader) deltaRun() {
	n := f.r.Buffered()
	if n == 0 {
		return
	}
	buf, _ := f.r.Peek(n)
	used := 0
	for used < len(buf) {
		if buf[used] == '\n' {
			used++ // a blank line
			continue
		}
		data, ok := bytes.CutPrefix(buf[used:], dataPrefix)
		if !ok {
			break
		}
		taken, ok := f.readDelta(data, false)
		if !ok {
			break
		}
		used += len(dataPrefix) + taken
	}
	_, _ = f.r.Discard(used) // within what is buffered: no read
}

// add appends a delta to the pending run of its kind; a delta of the
// other kind starts a new run after it.
func (f *frameReader) add(kind upstream.DeltaKind, text string) {
	if text == "" {
		return
	}
	if len(f.pending) > 0 && f.kind != kind {
		f.carry = append(f.carry, upstream.Delta{Kind: f.kind, Text: string(f.pending)})
		f.pending = f.pending[:0]
	}
	f.kind = kind
	f.pending = append(f.pending, text...)
}

// flush delivers the pending runs, in order.
func (f *frameReader) flush(fn func(upstream.Delta) error) error {
	if len(f.pending) > 0 {
		f.carry = append(f.carry, upstream.Delta{Kind: f.kind, Text: string(f.pending)})
		f.pending = f.pending[:0]
		if cap(f.pending) > maxKeptPending {
			f.pending = nil // a rare huge burst: do not keep its memory for the whole stream
		}
	}
	for i, d := range f.carry {
		if err := fn(d); err != nil {
			f.carry = f.carry[:0]
			return err
		}
		f.carry[i] = upstream.Delta{}
	}
	f.carry = f.carry[:0]
	return nil
}
