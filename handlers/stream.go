package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/sse"
	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/utils"
	"cursor2api/utils/jsondec"
)

// prepare hands a door's request to the core, with what the client says
// of itself in its headers. When it returns false the error is answered.
func (s *server) prepare(c *gin.Context, req *models.Request) (*chat.Prepared, bool) {
	c.Set(keyAnswer, true)
	req.Client = clientOf(c.Request)
	req.Session = sessionOf(c.Request, req.Session)
	req.Tenant = tenantOf(c)
	// Every door's names go through MODEL_ALIASES: Claude Code's claude-*
	// and Codex's gpt-* reach what the upstream serves today.
	if public, ok := s.Aliases.Resolve(req.Model, s.Catalog); ok && public != req.Model {
		s.Logger.Debug("model alias", "request_id", c.GetString(keyRequestID), "asked", utils.Clip(req.Model, utils.QuoteLen), "model", public)
		req.Model = public
	}
	p, err := s.Chat.PrepareContext(c.Request.Context(), req, c.GetString(keyRequestID))
	if err != nil {
		writeError(c, asError(err))
		return nil, false
	}
	return p, true
}

// complete answers a prepared request whole, cut short like a stream when
// the drain time is up: body is the door's JSON of the answer. The
// response is written whole, with its length, and flushed before what
// the back door left for after the answer (epilogue.Epilogue) runs, so
// that the client has all of it without waiting for that.
func (s *server) complete(c *gin.Context, p *chat.Prepared, body func(*models.Answer) any) {
	ctx, stop := s.answerContext(c)
	defer stop()
	ans, err := s.Chat.Complete(ctx, p)
	if err = shutdownError(ctx, err); err != nil {
		s.fail(c, err, nil)
		return
	}
	c.Set(keyUsage, ans.Usage)
	writeWhole(c, body(ans))
}

// writeWhole answers 200 with v as JSON, encoded as gin's PureJSON
// encodes it (no HTML escaping), with its Content-Length, and flushes it:
// the client has the whole response even while the handler goes on.
func writeWhole(c *gin.Context, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeError(c, asError(fmt.Errorf("encoding the answer: %w", err)))
		return
	}
	c.Header("Content-Length", strconv.Itoa(buf.Len()))
	c.Data(http.StatusOK, "application/json; charset=utf-8", buf.Bytes())
	c.Writer.Flush()
}

// stream answers a prepared request through a door's encoder, with
// keepalive pings while the upstream is silent.
func (s *server) stream(c *gin.Context, p *chat.Prepared, w answerStream) {
	ctx, stop := s.answerContext(c)
	defer stop()
	if s.Usage != nil {
		w = usageSink{wrappedStream: wrappedStream{w}, c: c}
	}
	w, done := s.observeStream(c, w)
	defer done()
	w = heldStream{wrappedStream{w}}
	stopPings := s.keepAlive(ctx, w)
	err := shutdownError(ctx, s.Chat.Stream(ctx, p, w))
	stopPings()
	if err != nil {
		s.fail(c, err, w)
	}
}

// eventStream returns the SSE writer of the response, which commits the
// 200 status and the headers of an event stream just before its first
// byte. ping is the door's keepalive (nil: an SSE comment).
func (s *server) eventStream(c *gin.Context, ping []byte) *sse.Writer {
	return sse.NewWriter(c.Writer, c.Writer.Flush, func() {
		h := c.Writer.Header()
		for k, v := range eventStreamHeader {
			h[k] = v // read only, and copied by WriteHeader: shared by every stream
		}
		c.Writer.WriteHeader(http.StatusOK)
	}, ping)
}

// eventStreamHeader is the header of every event stream, its keys in
// canonical form.
var eventStreamHeader = http.Header{
	"Content-Type":      {"text/event-stream; charset=utf-8"},
	"Cache-Control":     {"no-cache"},
	"Connection":        {"keep-alive"},
	"X-Accel-Buffering": {"no"},
}

// keepAlive pings the stream while it is silent, until the returned stop
// function is called; once stop returns no ping is being written or will
// be. A timer rather than a goroutine per stream: an idle stream costs no
// stack while it waits.
func (s *server) keepAlive(ctx context.Context, w answerStream) (stop func()) {
	if s.PingInterval <= 0 {
		return func() {}
	}
	p := &pinger{ctx: ctx, w: w, every: s.PingInterval}
	p.mu.Lock() // the callback reads p.t
	defer p.mu.Unlock()
	p.t = time.AfterFunc(p.every, p.ping)
	return p.stop
}

// pinger is keepAlive's state, one allocation per stream.
type pinger struct {
	ctx     context.Context
	w       answerStream
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

// heldStream makes each step the core hands a door one write to the
// client: the door's events of one call (an opening event and the first
// delta; the closing events and the stream's end) are held together and
// flushed once, rather than each in a write of its own.
type heldStream struct{ wrappedStream }

func (h heldStream) Text(text string) error {
	h.Hold()
	defer h.Release()
	return h.answerStream.Text(text)
}

func (h heldStream) Reasoning(text string) error {
	h.Hold()
	defer h.Release()
	return h.answerStream.Reasoning(text)
}

func (h heldStream) ToolCallStart(id, name string) error {
	h.Hold()
	defer h.Release()
	return h.answerStream.ToolCallStart(id, name)
}

func (h heldStream) ToolCallArguments(fragment string) error {
	h.Hold()
	defer h.Release()
	return h.answerStream.ToolCallArguments(fragment)
}

func (h heldStream) ToolCallEnd(complete bool) error {
	h.Hold()
	defer h.Release()
	return h.answerStream.ToolCallEnd(complete)
}

func (h heldStream) Finish(reason models.FinishReason, usage models.Usage) error {
	h.Hold()
	defer h.Release()
	return h.answerStream.Finish(reason, usage)
}

func (h heldStream) Error(e *models.Error) error {
	h.Hold()
	defer h.Release()
	return h.answerStream.Error(e)
}

func (h heldStream) ToolRunStart(run models.ToolRun) error {
	h.Hold()
	defer h.Release()
	return h.wrappedStream.ToolRunStart(run)
}

func (h heldStream) ToolRunEnd(run models.ToolRun) error {
	h.Hold()
	defer h.Release()
	return h.wrappedStream.ToolRunEnd(run)
}

// fail answers an error: with its status before the first byte, as the
// door's error event after it, and not at all when the client is gone.
// It is the single sink of every failure of an answer.
func (s *server) fail(c *gin.Context, err error, w answerStream) {
	if c.Request.Context().Err() != nil && chat.IsClientGone(err) || connectionLost(err) {
		c.Set(keyStatus, 499)
		c.Set(keyError, "client disconnected")
		return
	}
	apiErr := asError(err)
	if w == nil || !w.Started() {
		writeError(c, apiErr)
		return
	}
	c.Set(keyError, apiErr.Message)
	c.Set(keyStatus, apiErr.Status)
	_ = w.Error(apiErr)
}

// readAll is io.ReadAll into a buffer of the body's declared size (when
// it declares one within limit), so that a prompt is not copied through a
// series of growing buffers. The declared size is the client's word: what
// is set aside before the bytes come is at most maxPrealloc, past which
// the buffer grows as they do.
func readAll(r io.Reader, size, limit int64) ([]byte, error) {
	if size <= 0 || size > limit {
		return io.ReadAll(r)
	}
	// One byte more, so that the read that meets the end needs no growth.
	b := make([]byte, 0, min(size+1, maxPrealloc))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // a body longer than declared: grow
		}
	}
}

// maxPrealloc bounds the buffer readAll sets aside for a body before its
// bytes arrive: a client that declares a large body and sends little
// cannot make every connection hold a large buffer.
const maxPrealloc = 64 << 10

// connectionLost reports whether err is a write to a client that has
// closed its connection, which can come before the request's context
// notices that it left.
func connectionLost(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// readJSON reads the body within the size limit and decodes it into v,
// leniently: unknown fields are ignored. Its errors speak JSON, not Go.
func (s *server) readJSON(c *gin.Context, v any) *models.Error {
	body, err := readAll(http.MaxBytesReader(c.Writer, c.Request.Body, s.MaxBodyBytes), c.Request.ContentLength, s.MaxBodyBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &models.Error{Status: http.StatusRequestEntityTooLarge, Kind: models.KindTooLarge, Code: "request_too_large",
				Message: fmt.Sprintf("request body is over %d bytes (MAX_BODY_BYTES); send less history or raise the limit", s.MaxBodyBytes)}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return &models.Error{Status: http.StatusRequestTimeout, Kind: models.KindInvalidRequest, Code: "request_timeout",
				Message: fmt.Sprintf("the request body did not arrive within %s (BODY_READ_TIMEOUT); send it at once", s.BodyReadTimeout)}
		}
		return models.InvalidRequest("", "could not read the request body: %v", err)
	}
	if err := jsondec.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field == "":
			return models.InvalidRequest("", "the request body must be a JSON object, not a JSON %s", typeErr.Value)
		case errors.As(err, &typeErr):
			path := errorPath(body, reflect.TypeOf(v), typeErr.Field)
			return models.InvalidRequest(path, "invalid type for %s: got a JSON %s, expected %s", path, typeErr.Value, jsonKind(typeErr.Type))
		case errors.As(err, &syntaxErr):
			return models.InvalidRequest("", "the request body is not valid JSON (at byte %d): %v", syntaxErr.Offset, err)
		default:
			if path := errorPath(body, reflect.TypeOf(v), ""); path != "" {
				return models.InvalidRequest(path, "invalid %s: %v", path, err)
			}
			return models.InvalidRequest("", "invalid request: %v", err)
		}
	}
	return nil
}

// jsonKind names the JSON value that decodes into t, for error messages
// that speak JSON rather than Go.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
}

// clientOf reads what the calling application says of itself.
func clientOf(r *http.Request) models.Client {
	referer := r.Header.Get("HTTP-Referer")
	if referer == "" {
		referer = r.Header.Get("Referer")
	}
	return models.Client{UserAgent: r.UserAgent(), Title: r.Header.Get("X-Title"), Referer: referer}
}

// maxSessionBytes bounds the client's session id: the ids agents send are
// UUIDs, and the back door keeps a conversation per id.
const maxSessionBytes = 200

// sessionHeaders name the client's session id, first first: Claude Code's
// (2.1.86 on), then Codex's, its thread id, spelt session-id by Codex
// 0.169 and session_id by earlier versions (Codex sends the same id as
// prompt_cache_key).
var sessionHeaders = [...]string{"X-Claude-Code-Session-Id", "Session-Id", "Session_id"}

// sessionOf is the client's id of the conversation: the first of
// sessionHeaders present, else what the door read in the body (fromBody:
// Claude Code's metadata.user_id, prompt_cache_key), trimmed and clipped
// to maxSessionBytes of valid UTF-8. A header beats the body: it is the
// agent's own word, where a body field may be the user's.
func sessionOf(r *http.Request, fromBody string) string {
	s := fromBody
	for _, h := range sessionHeaders {
		if v := strings.TrimSpace(r.Header.Get(h)); v != "" {
			s = v
			break
		}
	}
	s = strings.ToValidUTF8(strings.TrimSpace(s), "")
	return utils.CutRunes(s, maxSessionBytes)
}

// asError turns any error into the neutral error to send.
func asError(err error) *models.Error {
	var apiErr *models.Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return &models.Error{Status: http.StatusInternalServerError, Kind: models.KindAPI, Message: "internal error: " + err.Error(), Err: err}
}
