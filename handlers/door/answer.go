package door

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/sse"
	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/services/epilogue"
	"cursor2api/services/metrics"
	"cursor2api/utils"
)

// Kit is what every door's handlers share: the core, the catalog, and the
// limits of a request. It is built once and read-only.
type Kit struct {
	Chat    *chat.Service
	Catalog *models.Catalog
	// Aliases resolve the names clients send (Claude Code's dated ids,
	// Codex's gpt-*) to published models.
	Aliases models.Aliases
	Logger  *slog.Logger
	// MaxBodyBytes and BodyReadTimeout bound a request's body.
	MaxBodyBytes    int64
	BodyReadTimeout time.Duration
	// PingInterval is the silence after which a stream gets a keepalive;
	// zero disables pings.
	PingInterval time.Duration
	// Drain, when it ends, ends the answers still in flight with the
	// door's error event. Nil: never.
	Drain context.Context
	// Metrics, when not nil, count streams and their first tokens.
	Metrics *metrics.Metrics
	// RecordUsage notes each answer's usage for the usage ledger.
	RecordUsage bool
	// Turn, when set, runs serve, one turn of a WebSocket on its own
	// context c, inside what the router runs around each request (the
	// access line, the metrics, the usage record), so that a turn counts
	// as a request does.
	Turn func(c *gin.Context, serve func())
	// Admit, when set, holds a WebSocket turn to its client key's limits
	// as a request is held: a release to call when the turn ends, or the
	// error to answer instead.
	Admit func(c *gin.Context) (release func(), e *models.Error)
}

// Prepare hands a door's request to the core, with what the client says
// of itself in its headers. When it returns false the error is answered.
func (k *Kit) Prepare(c *gin.Context, req *models.Request) (*chat.Prepared, bool) {
	c.Set(KeyAnswer, true)
	req.Client = clientOf(c.Request)
	req.Session = sessionOf(c.Request, req.Session)
	req.Tenant = Tenant(c)
	if public, ok := k.Aliases.Resolve(req.Model, k.Catalog); ok && public != req.Model {
		k.Logger.Debug("model alias", "request_id", RequestID(c), "asked", utils.Clip(req.Model, utils.QuoteLen), "model", public)
		req.Model = public
	}
	p, err := k.Chat.PrepareContext(c.Request.Context(), req, RequestID(c))
	if err != nil {
		WriteError(c, AsError(err))
		return nil, false
	}
	return p, true
}

// ResolveModel maps a model name through the aliases to a published
// model; an unknown name is a 404 that lists the choices.
func (k *Kit) ResolveModel(name string) (string, error) {
	if name == "" {
		return "", models.InvalidRequest("model", "model is required: GET /v1/models lists the available ones")
	}
	if public, ok := k.Aliases.Resolve(name, k.Catalog); ok {
		return public, nil
	}
	return "", &models.Error{
		Status: http.StatusNotFound, Kind: models.KindNotFound, Code: "model_not_found", Param: "model",
		Message: fmt.Sprintf("model: the model %q does not exist and no MODEL_ALIASES entry maps it; available models: %s",
			utils.Clip(name, utils.QuoteLen), strings.Join(k.Catalog.Names(), ", ")),
	}
}

// Complete answers a prepared request whole; body is the door's JSON of
// the answer. The response is flushed before what the back door left for
// after the answer (epilogue) runs, so the client does not wait for it.
func (k *Kit) Complete(c *gin.Context, p *chat.Prepared, body func(*models.Answer) any) {
	ctx, stop := k.answerContext(c)
	defer stop()
	ans, err := k.Chat.Complete(ctx, p)
	if err = shutdownError(ctx, err); err != nil {
		k.Fail(c, err, nil)
		return
	}
	c.Set(KeyUsage, ans.Usage)
	WriteWhole(c, body(ans))
}

// WriteWhole answers 200 with v as JSON (without HTML escaping, as gin's
// PureJSON), with its Content-Length, and flushes it.
func WriteWhole(c *gin.Context, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		WriteError(c, AsError(fmt.Errorf("encoding the answer: %w", err)))
		return
	}
	c.Header("Content-Length", strconv.Itoa(buf.Len()))
	c.Data(http.StatusOK, "application/json; charset=utf-8", buf.Bytes())
	c.Writer.Flush()
}

// Stream answers a prepared request through a door's encoder, with
// keepalive pings while the upstream is silent.
func (k *Kit) Stream(c *gin.Context, p *chat.Prepared, w Encoder) {
	ctx, stop := k.answerContext(c)
	defer stop()
	if k.RecordUsage {
		w = usageSink{wrapped: wrapped{w}, c: c}
	}
	w, done := k.observe(c, w)
	defer done()
	w = held{wrapped{w}}
	stopPings := k.keepAlive(ctx, w)
	err := shutdownError(ctx, k.Chat.Stream(ctx, p, w))
	stopPings()
	if err != nil {
		k.Fail(c, err, w)
	}
}

// EventStream returns the SSE writer of the response, which commits the
// 200 status and the headers of an event stream just before its first
// byte. ping is the door's keepalive (nil: an SSE comment).
func EventStream(c *gin.Context, ping []byte) *sse.Writer {
	return sse.NewWriter(c.Writer, c.Writer.Flush, func() {
		h := c.Writer.Header()
		for k, v := range eventStreamHeader {
			h[k] = v // read only, and copied by WriteHeader: shared by every stream
		}
		c.Writer.WriteHeader(http.StatusOK)
	}, ping)
}

// eventStreamHeader is the header of every event stream, in canonical form.
var eventStreamHeader = http.Header{
	"Content-Type":      {"text/event-stream; charset=utf-8"},
	"Cache-Control":     {"no-cache"},
	"Connection":        {"keep-alive"},
	"X-Accel-Buffering": {"no"},
}

// Fail answers an error: with its status before the first byte, as the
// door's error event after it, and not at all when the client is gone.
// It is the single sink of every failure of an answer; w may be nil.
func (k *Kit) Fail(c *gin.Context, err error, w Encoder) {
	if c.Request.Context().Err() != nil && chat.IsClientGone(err) || connectionLost(err) {
		c.Set(KeyStatus, 499)
		c.Set(KeyError, "client disconnected")
		return
	}
	apiErr := AsError(err)
	if w == nil || !w.Started() {
		WriteError(c, apiErr)
		return
	}
	c.Set(KeyError, apiErr.Message)
	c.Set(KeyStatus, apiErr.Status)
	_ = w.Error(apiErr)
}

// StoreError is the answer when the state store fails; the log has why.
func (k *Kit) StoreError(c *gin.Context, err error) *models.Error {
	k.Logger.Warn("state store failed", "request_id", RequestID(c), "error", utils.Clip(err.Error(), 300))
	return &models.Error{Status: http.StatusServiceUnavailable, Kind: models.KindAPI, Code: "state_unavailable",
		Message: "the gateway's state store (STATE_URL) did not answer; try again shortly (the gateway's log has the details)"}
}

// ModelLabel is a model name as the metrics and the ledger count it: a
// name outside the catalog is "other", so clients cannot grow a label
// without bound.
func (k *Kit) ModelLabel(model string) string {
	if model == "" {
		return ""
	}
	if _, ok := k.Catalog.Resolve(model); ok {
		return model
	}
	return "other"
}

// connectionLost reports whether err is a write to a client that has
// closed its connection, which can come before the request's context
// notices that it left.
func connectionLost(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// errShuttingDown ends the answers still open when the server stops
// waiting for them.
var errShuttingDown = errors.New("the gateway is shutting down")

// answerContext is the request's context, also ended when Drain ends, so
// that every door closes its open streams with an error event rather
// than having the connection cut under them. stop releases it.
func (k *Kit) answerContext(c *gin.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(c.Request.Context())
	// What the back door leaves for after the answer runs once it is
	// written (the caller defers stop).
	ctx, after := epilogue.With(ctx)
	if k.Drain == nil {
		return ctx, func() { after.Run(); cancel(nil) }
	}
	unregister := context.AfterFunc(k.Drain, func() { cancel(errShuttingDown) })
	return ctx, func() { unregister(); after.Run(); cancel(nil) }
}

// shutdownError replaces the error of an answer cut short by the
// shutdown with one that tells the client to try again.
func shutdownError(ctx context.Context, err error) error {
	if err == nil || !errors.Is(context.Cause(ctx), errShuttingDown) {
		return err
	}
	return &models.Error{Status: http.StatusServiceUnavailable, Kind: models.KindOverloaded, Code: "shutting_down", RetryAfter: 1,
		Message: "the gateway is shutting down and ended this answer; send the request again", Err: err}
}
