package handlers

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/models"
	"cursor2api/services/chat"
)

// readyTimeout bounds the back door's own readiness check.
const readyTimeout = 20 * time.Second

// ready answers /ready: 200 when the gateway should get traffic, else 503,
// with a JSON body saying why either way.
func (s *server) ready(c *gin.Context) {
	if s.Readiness == nil {
		c.JSON(http.StatusOK, gin.H{"ready": true})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
	defer cancel()
	report := s.Readiness.Report(ctx)
	status := http.StatusOK
	if !report.Ready {
		status = http.StatusServiceUnavailable
	}
	c.JSON(status, report)
}

// countRequests counts every request of a door by door, model and status
// once it is answered. A model name outside the catalog is counted as
// "other", so that clients cannot grow the metric without bound.
func (s *server) countRequests(c *gin.Context) {
	c.Next()
	status := c.Writer.Status()
	if v := c.GetInt(keyStatus); v != 0 {
		status = v
	}
	s.Metrics.Request(doorOf(c).name, s.modelLabel(c.GetString(keyModel)), status)
}

func (s *server) modelLabel(model string) string {
	if model == "" {
		return ""
	}
	if _, ok := s.Catalog.Resolve(model); ok {
		return model
	}
	return "other"
}

// observeStream counts the stream as active until the returned done is
// called and records the time to its first token.
func (s *server) observeStream(c *gin.Context, w answerStream) (answerStream, func()) {
	if s.Metrics == nil {
		return w, func() {}
	}
	o := &observedStream{wrappedStream: wrappedStream{w}, start: time.Now(), first: func(d time.Duration) {
		s.Metrics.FirstToken(doorOf(c).name, s.modelLabel(c.GetString(keyModel)), d)
	}}
	return o, s.Metrics.StreamStarted()
}

// observedStream notes the first token a stream sends.
type observedStream struct {
	wrappedStream
	start time.Time
	first func(time.Duration)
	seen  bool
}

var _ chat.Sink = (*observedStream)(nil)

func (o *observedStream) token() {
	if !o.seen {
		o.seen = true
		o.first(time.Since(o.start))
	}
}

// wrappedStream is what a wrapper of a door's stream (metrics, usage)
// embeds: it passes on the core's optional sink methods, which embedding
// the answerStream interface alone would hide from the core, to a door
// that implements them, and does nothing for one that does not.
type wrappedStream struct{ answerStream }

var (
	_ chat.StopSequenceSink = wrappedStream{}
	_ chat.RunSink          = wrappedStream{}
)

// StopSequence passes the stop sequence met on to a door that names it.
func (w wrappedStream) StopSequence(seq string) {
	if r, ok := w.answerStream.(chat.StopSequenceSink); ok {
		r.StopSequence(seq)
	}
}

// ToolRunStart and ToolRunEnd pass the gateway's runs on to a door that
// shows them (chat.RunSink).
func (w wrappedStream) ToolRunStart(run models.ToolRun) error {
	if r, ok := w.answerStream.(chat.RunSink); ok {
		return r.ToolRunStart(run)
	}
	return nil
}

func (w wrappedStream) ToolRunEnd(run models.ToolRun) error {
	if r, ok := w.answerStream.(chat.RunSink); ok {
		return r.ToolRunEnd(run)
	}
	return nil
}

func (o *observedStream) Text(text string) error {
	if strings.TrimSpace(text) != "" {
		o.token()
	}
	return o.answerStream.Text(text)
}

func (o *observedStream) Reasoning(text string) error {
	o.token()
	return o.answerStream.Reasoning(text)
}

func (o *observedStream) ToolCallStart(id, name string) error {
	o.token()
	return o.answerStream.ToolCallStart(id, name)
}
