package door

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/models"
	"cursor2api/services/chat"
)

// Encoder is a door's encoder of a streamed answer.
type Encoder interface {
	chat.Sink
	// Started reports whether anything has been written, so that the
	// HTTP status can no longer change.
	Started() bool
	// Error ends a started stream with an error event.
	Error(e *models.Error) error
	// PingIfIdle writes a keepalive when nothing was written for idle.
	PingIfIdle(idle time.Duration) error
	// Hold and Release bracket writes that go out together (sse.Writer).
	Hold()
	Release()
}

// keepAlive pings the stream while it is silent, until the returned stop
// function is called; once stop returns no ping is being written or will
// be. A timer rather than a goroutine per stream: an idle stream costs no
// stack while it waits.
func (k *Kit) keepAlive(ctx context.Context, w Encoder) (stop func()) {
	if k.PingInterval <= 0 {
		return func() {}
	}
	p := &pinger{ctx: ctx, w: w, every: k.PingInterval}
	p.mu.Lock() // the callback reads p.t
	defer p.mu.Unlock()
	p.t = time.AfterFunc(p.every, p.ping)
	return p.stop
}

// pinger is keepAlive's state, one allocation per stream.
type pinger struct {
	ctx     context.Context
	w       Encoder
	every   time.Duration
	mu      sync.Mutex
	stopped bool
	t       *time.Timer
}

func (p *pinger) ping() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.ctx.Err() != nil {
		return
	}
	if p.w.PingIfIdle(p.every) != nil {
		return // the client is gone; the request context ends too
	}
	p.t.Reset(p.every)
}

func (p *pinger) stop() {
	p.mu.Lock()
	p.stopped = true
	p.t.Stop()
	p.mu.Unlock()
}

// held makes each step the core hands a door one write to the
// client: the door's events of one call (an opening event and the first
// delta; the closing events and the stream's end) are held together and
// flushed once, rather than each in a write of its own.
type held struct{ wrapped }

func (h held) Text(text string) error {
	h.Hold()
	defer h.Release()
	return h.Encoder.Text(text)
}

func (h held) Reasoning(text string) error {
	h.Hold()
	defer h.Release()
	return h.Encoder.Reasoning(text)
}

func (h held) ToolCallStart(id, name string) error {
	h.Hold()
	defer h.Release()
	return h.Encoder.ToolCallStart(id, name)
}

func (h held) ToolCallArguments(fragment string) error {
	h.Hold()
	defer h.Release()
	return h.Encoder.ToolCallArguments(fragment)
}

func (h held) ToolCallEnd(complete bool) error {
	h.Hold()
	defer h.Release()
	return h.Encoder.ToolCallEnd(complete)
}

func (h held) Finish(reason models.FinishReason, usage models.Usage) error {
	h.Hold()
	defer h.Release()
	return h.Encoder.Finish(reason, usage)
}

func (h held) Error(e *models.Error) error {
	h.Hold()
	defer h.Release()
	return h.Encoder.Error(e)
}

func (h held) ToolRunStart(run models.ToolRun) error {
	h.Hold()
	defer h.Release()
	return h.wrapped.ToolRunStart(run)
}

func (h held) ToolRunEnd(run models.ToolRun) error {
	h.Hold()
	defer h.Release()
	return h.wrapped.ToolRunEnd(run)
}

// observe counts the stream as active until the returned done is
// called and records the time to its first token.
func (k *Kit) observe(c *gin.Context, w Encoder) (Encoder, func()) {
	if k.Metrics == nil {
		return w, func() {}
	}
	o := &observed{wrapped: wrapped{w}, start: time.Now(), first: func(d time.Duration) {
		k.Metrics.FirstToken(Of(c).Name, k.ModelLabel(c.GetString(KeyModel)), d)
	}}
	return o, k.Metrics.StreamStarted()
}

// observed notes the first token a stream sends.
type observed struct {
	wrapped
	start time.Time
	first func(time.Duration)
	seen  bool
}

var _ chat.Sink = (*observed)(nil)

func (o *observed) token() {
	if !o.seen {
		o.seen = true
		o.first(time.Since(o.start))
	}
}

// wrapped is what a wrapper of a door's stream (metrics, usage)
// embeds: it passes on the core's optional sink methods, which embedding
// the Encoder interface alone would hide from the core, to a door
// that implements them, and does nothing for one that does not.
type wrapped struct{ Encoder }

var (
	_ chat.StopSequenceSink = wrapped{}
	_ chat.RunSink          = wrapped{}
)

// StopSequence passes the stop sequence met on to a door that names it.
func (w wrapped) StopSequence(seq string) {
	if r, ok := w.Encoder.(chat.StopSequenceSink); ok {
		r.StopSequence(seq)
	}
}

// ToolRunStart and ToolRunEnd pass the gateway's runs on to a door that
// shows them (chat.RunSink).
func (w wrapped) ToolRunStart(run models.ToolRun) error {
	if r, ok := w.Encoder.(chat.RunSink); ok {
		return r.ToolRunStart(run)
	}
	return nil
}

func (w wrapped) ToolRunEnd(run models.ToolRun) error {
	if r, ok := w.Encoder.(chat.RunSink); ok {
		return r.ToolRunEnd(run)
	}
	return nil
}

func (o *observed) Text(text string) error {
	if strings.TrimSpace(text) != "" {
		o.token()
	}
	return o.Encoder.Text(text)
}

func (o *observed) Reasoning(text string) error {
	o.token()
	return o.Encoder.Reasoning(text)
}

func (o *observed) ToolCallStart(id, name string) error {
	o.token()
	return o.Encoder.ToolCallStart(id, name)
}

// usageSink notes the usage a stream finishes with.
type usageSink struct {
	wrapped
	c *gin.Context
}

func (u usageSink) Finish(reason models.FinishReason, us models.Usage) error {
	u.c.Set(KeyUsage, us)
	return u.Encoder.Finish(reason, us)
}
