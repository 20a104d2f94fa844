// Package socket is the WebSocket side of a door: the upgrade, the
// connection's bounds (message size, idle time), keepalive pings, and the
// reading of the client's messages beside the answer in progress, so that
// a client that leaves ends that answer. A door's events go out one per
// text message (an sse.Writer in message mode, Events). The door's
// protocol (which messages, what they answer) is the door's own.
//
// The library is github.com/coder/websocket: maintained, context-first,
// concurrent writes safe, permessage-deflate, and already in the module
// graph through openai-go's own Responses WebSocket client.
package socket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"cursor2api/handlers/sse"
)

// Options bound a connection.
type Options struct {
	// MaxMessageBytes bounds one client message, after decompression.
	MaxMessageBytes int64
	// Idle closes a connection on which no message came for this long
	// while no answer was in progress.
	Idle time.Duration
	// PingInterval is how often the server pings (zero: never), which
	// keeps proxies from closing a quiet connection; a ping that cannot
	// be written ends the connection.
	PingInterval time.Duration
	// Group, when set, holds the connection for the server's shutdown.
	Group *Group
}

// StatusCode is a close code, as RFC 6455 numbers them.
type StatusCode = websocket.StatusCode

// Close codes.
const (
	StatusNormal    = websocket.StatusNormalClosure
	StatusGoingAway = websocket.StatusGoingAway
	StatusPolicy    = websocket.StatusPolicyViolation
	StatusTooBig    = websocket.StatusMessageTooBig
	StatusInternal  = websocket.StatusInternalError
)

// IsUpgrade reports whether r asks for a WebSocket.
func IsUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && headerHasToken(r.Header, "Connection", "upgrade")
}

func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// ErrTooBig is what Next returns for a message over MaxMessageBytes; the
// rest of it is not read, and the connection can only be closed.
var ErrTooBig = errors.New("message over the size limit")

// ErrIdle is the cause of a connection closed for its silence.
var ErrIdle = errors.New("idle")

// Message is one message of the client.
type Message struct {
	Data []byte
	// Text is false for a binary message.
	Text bool
}

// Conn is an accepted WebSocket.
type Conn struct {
	ws   *websocket.Conn
	opts Options

	ctx    context.Context // ends when the connection does
	cancel context.CancelCauseFunc
	msgs   chan Message
	tooBig chan struct{}
	jobs   sync.WaitGroup
	wmu    sync.Mutex // one message at a time: a message's pieces go out together
}

// queued is how many messages the reader takes ahead of the door: an agent
// sends its next request (and an acknowledgement) as soon as an answer
// ends, while the door may still be finishing it. Past that the reader
// waits, and the client with it.
const queued = 2

// Accept upgrades the request. The caller has checked the client (auth,
// Origin: the router's guard) and must Close the connection.
func Accept(w http.ResponseWriter, r *http.Request, opts Options) (*Conn, error) {
	if opts.Group != nil && !opts.Group.join() {
		return nil, ErrShuttingDown // nothing written: the caller answers
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		// The router's guard has checked Origin against ALLOWED_ORIGINS,
		// as for every request; a second check here would refuse the
		// origins that list allows.
		InsecureSkipVerify: true,
		// Agents offer permessage-deflate (Codex does). Without context
		// takeover each message is compressed alone: no window kept per
		// connection, and small events (under the threshold) sent as they are.
		CompressionMode: websocket.CompressionNoContextTakeover,
	})
	if err != nil {
		if opts.Group != nil {
			opts.Group.leave()
		}
		return nil, fmt.Errorf("accepting the WebSocket: %w", err)
	}
	// One byte over the limit tells a message that is too big; the
	// library's own limit, past that, is a backstop.
	ws.SetReadLimit(opts.MaxMessageBytes + 1)
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	c := &Conn{ws: ws, opts: opts, ctx: ctx, cancel: cancel, msgs: make(chan Message, queued), tooBig: make(chan struct{})}
	c.jobs.Add(1)
	go c.read()
	if opts.PingInterval > 0 {
		c.jobs.Add(1)
		go c.ping()
	}
	return c, nil
}

// Context ends when the connection does: the client closed it or went
// away, a ping went unanswered, or Close was called. Its cause says which.
func (c *Conn) Context() context.Context { return c.ctx }

// read reads the client's messages into msgs until the connection ends.
func (c *Conn) read() {
	defer c.jobs.Done()
	defer close(c.msgs)
	for {
		typ, r, err := c.ws.Reader(c.ctx)
		if err != nil {
			c.cancel(fmt.Errorf("reading: %w", err))
			return
		}
		b, err := io.ReadAll(io.LimitReader(r, c.opts.MaxMessageBytes+1))
		if err != nil {
			c.cancel(fmt.Errorf("reading: %w", err))
			return
		}
		if int64(len(b)) > c.opts.MaxMessageBytes {
			close(c.tooBig)
			return // the rest is never read: the door closes the connection
		}
		select {
		case c.msgs <- Message{Data: b, Text: typ == websocket.MessageText}:
		case <-c.ctx.Done():
			return
		}
	}
}

// ping pings every PingInterval until the connection ends.
func (c *Conn) ping() {
	defer c.jobs.Done()
	t := time.NewTicker(c.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.opts.PingInterval)
		err := c.ws.Ping(ctx)
		cancel()
		// A pong may be late from a client that reads only during a
		// turn; silence is the idle bound's business. A ping that cannot
		// be written means the client is gone.
		if err != nil && c.ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			c.cancel(fmt.Errorf("ping: %w", err))
			_ = c.ws.CloseNow()
			return
		}
	}
}

// Next waits for the client's next message. It returns ErrTooBig for a
// message over the limit, ErrIdle after Idle without one, and the
// connection's end (context.Cause) when it has ended, and ErrGoingAway
// once its Group is shutting down.
func (c *Conn) Next() (Message, error) {
	var closing <-chan struct{}
	if c.opts.Group != nil {
		closing = c.opts.Group.closing
		select {
		case <-closing: // no new turn once the shutdown began
			return Message{}, ErrGoingAway
		default:
		}
	}
	var idle <-chan time.Time
	if c.opts.Idle > 0 {
		t := time.NewTimer(c.opts.Idle)
		defer t.Stop()
		idle = t.C
	}
	select {
	case m, ok := <-c.msgs:
		if ok {
			return m, nil
		}
	case <-idle:
		return Message{}, ErrIdle
	case <-closing:
		return Message{}, ErrGoingAway
	case <-c.tooBig:
		return Message{}, ErrTooBig
	case <-c.ctx.Done():
	}
	select {
	case <-c.tooBig:
		return Message{}, ErrTooBig
	default:
	}
	return Message{}, context.Cause(c.ctx)
}

// Send writes one text message of data's pieces.
func (c *Conn) Send(data ...[]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(data) == 1 {
		return c.ws.Write(c.ctx, websocket.MessageText, data[0])
	}
	w, err := c.ws.Writer(c.ctx, websocket.MessageText)
	if err != nil {
		return err
	}
	for _, d := range data {
		if _, err := w.Write(d); err != nil {
			_ = w.Close()
			return err
		}
	}
	return w.Close()
}

// Events returns a writer of a door's events, one text message each.
func (c *Conn) Events() *sse.Writer { return sse.NewMessageWriter(c.Send) }

// Close closes the connection with code and reason (at most 123 bytes)
// and waits for its goroutines.
func (c *Conn) Close(code StatusCode, reason string) {
	if len(reason) > 123 {
		reason = reason[:123]
	}
	_ = c.ws.Close(code, reason)
	c.cancel(errors.New("closed by the server"))
	c.jobs.Wait()
	if c.opts.Group != nil {
		c.opts.Group.leave()
	}
}

// Gone reports whether the connection ended from the client's side (it
// closed it, or stopped answering), rather than by Close.
func Gone(err error) bool {
	return websocket.CloseStatus(err) != -1 || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled)
}
