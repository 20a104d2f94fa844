// Package handlers is the HTTP surface of the gateway: routing, auth,
// request ids, the access log, and the translation between HTTP and the
// chat service. A handler reads the request, calls a service and writes the
// response; the protocol work lives in services and utils.
package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/models"
	"cursor2api/services"
	"cursor2api/utils"
)

// Options configure the HTTP surface.
type Options struct {
	Chat         *services.ChatService
	Catalog      *models.Catalog
	APIKeys      []string
	MaxBodyBytes int64
	// PingInterval is the silence after which a stream gets a ": ping"
	// comment (at most one per interval). Zero disables pings.
	PingInterval time.Duration
	Version      string
	Logger       *slog.Logger
}

// server holds what the handlers share; it is built once and read-only.
type server struct {
	Options
	started int64 // "created" of the model list
}

// New returns the gateway's HTTP handler.
func New(opts Options) http.Handler {
	s := &server{Options: opts, started: time.Now().Unix()}
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(requestID, accessLog(opts.Logger), gin.CustomRecovery(func(c *gin.Context, rec any) {
		opts.Logger.Error("panic", "request_id", c.GetString(keyRequestID), "panic", fmt.Sprint(rec))
		abortWithError(c, &models.APIError{Status: http.StatusInternalServerError, Type: models.ErrAPI, Message: "internal error; the gateway's log has the details"})
	}))
	r.GET("/health", s.health)
	v1 := r.Group("/v1", auth(opts.APIKeys))
	v1.GET("/models", s.listModels)
	v1.POST("/chat/completions", s.chatCompletions)
	r.NoRoute(func(c *gin.Context) {
		writeError(c, &models.APIError{Status: http.StatusNotFound, Type: models.ErrInvalidRequest, Code: "not_found",
			Message: fmt.Sprintf("no route %s %s: this gateway serves GET /v1/models and POST /v1/chat/completions", c.Request.Method, c.Request.URL.Path)})
	})
	r.NoMethod(func(c *gin.Context) {
		writeError(c, &models.APIError{Status: http.StatusMethodNotAllowed, Type: models.ErrInvalidRequest, Code: "method_not_allowed",
			Message: fmt.Sprintf("%s is not allowed on %s", c.Request.Method, c.Request.URL.Path)})
	})
	return r
}

func (s *server) health(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok", "version": s.Version})
}

func (s *server) listModels(c *gin.Context) {
	list := models.ModelList{Object: "list", Data: []models.Model{}}
	for _, name := range s.Catalog.Names() {
		list.Data = append(list.Data, models.Model{ID: name, Object: "model", Created: s.started, OwnedBy: "cursor2api"})
	}
	c.JSON(http.StatusOK, list)
}

func (s *server) chatCompletions(c *gin.Context) {
	req, apiErr := s.decode(c)
	if apiErr != nil {
		writeError(c, apiErr)
		return
	}
	c.Set(keyModel, req.Model)
	prepared, err := s.Chat.Prepare(req, c.GetString(keyRequestID))
	if err != nil {
		writeError(c, asAPIError(err))
		return
	}
	id := "chatcmpl-" + services.RandomString(24)
	created := time.Now().Unix()
	if req.Stream {
		s.stream(c, prepared, id, req.Model, created)
		return
	}
	ans, err := s.Chat.Complete(c.Request.Context(), prepared)
	if err != nil {
		s.fail(c, err, nil)
		return
	}
	c.PureJSON(http.StatusOK, utils.Completion(id, req.Model, created, ans.Text, ans.Thinking, ans.ToolCalls, ans.Usage))
}

func (s *server) stream(c *gin.Context, p *services.Prepared, id, model string, created int64) {
	w := utils.NewStreamWriter(c.Writer, c.Writer.Flush, id, model, created)
	w.OnStart = func() {
		h := c.Writer.Header()
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
		h.Set("X-Accel-Buffering", "no")
		c.Writer.WriteHeader(http.StatusOK)
	}
	stopPings := s.keepAlive(c.Request.Context(), w)
	usage, err := s.Chat.Stream(c.Request.Context(), p, w)
	stopPings()
	if err != nil {
		s.fail(c, err, w)
		return
	}
	var u *models.Usage
	if p.IncludeUsage {
		u = &usage
	}
	if err := w.Finish(u); err != nil {
		c.Set(keyStatus, 499)
	}
}

// keepAlive pings the stream while it is silent, until the returned stop
// function is called; stop returns once the pinging goroutine has ended.
func (s *server) keepAlive(ctx context.Context, w *utils.StreamWriter) (stop func()) {
	if s.PingInterval <= 0 {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.PingInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if w.PingIfIdle(s.PingInterval) != nil {
					return // the client is gone; the request context ends too
				}
			case <-quit:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { close(quit); <-done }
}

// fail answers an error: with its status before the first byte, as an
// error chunk after it, and not at all when the client is gone.
func (s *server) fail(c *gin.Context, err error, w *utils.StreamWriter) {
	if c.Request.Context().Err() != nil && services.IsClientGone(err) {
		c.Set(keyStatus, 499)
		c.Set(keyError, "client disconnected")
		return
	}
	apiErr := asAPIError(err)
	if w == nil || !w.Started() {
		writeError(c, apiErr)
		return
	}
	c.Set(keyError, apiErr.Message)
	c.Set(keyStatus, apiErr.Status)
	_ = w.Error(apiErr)
}

// decode reads the body within the size limit and decodes it leniently.
func (s *server) decode(c *gin.Context) (*models.ChatRequest, *models.APIError) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, s.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &models.APIError{Status: http.StatusRequestEntityTooLarge, Type: models.ErrInvalidRequest, Code: "request_too_large",
				Message: fmt.Sprintf("request body is over %d bytes (MAX_BODY_BYTES); send less history or raise the limit", s.MaxBodyBytes)}
		}
		return nil, models.InvalidRequest("", "could not read the request body: %v", err)
	}
	var req models.ChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field == "":
			return nil, models.InvalidRequest("", "the request body must be a JSON object, not a JSON %s", typeErr.Value)
		case errors.As(err, &typeErr):
			return nil, models.InvalidRequest(typeErr.Field, "invalid type for %s: got a JSON %s, expected %s", typeErr.Field, typeErr.Value, jsonKind(typeErr.Type))
		case errors.As(err, &syntaxErr):
			return nil, models.InvalidRequest("", "the request body is not valid JSON (at byte %d): %v", syntaxErr.Offset, err)
		default:
			return nil, models.InvalidRequest("messages", "invalid request: %v", err)
		}
	}
	return &req, nil
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

// asAPIError turns any error into the OpenAI error to send.
func asAPIError(err error) *models.APIError {
	var apiErr *models.APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return &models.APIError{Status: http.StatusInternalServerError, Type: models.ErrAPI, Message: "internal error: " + err.Error(), Err: err}
}

func itoa(n int) string { return strconv.Itoa(n) }
