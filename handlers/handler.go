// Package handlers is the HTTP surface of the gateway: routing, auth,
// request ids, the access log, and the glue between HTTP and the core for
// each front door. A door's handler reads the body, converts it with the
// door's package (handlers/openai), hands the neutral request to the core
// (services/chat) and lets the door's encoder write the answer. Wire
// formats live in the door packages; protocol work lives in the core.
package handlers

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/openai"
	"cursor2api/models"
	"cursor2api/services/chat"
)

// Options configure the HTTP surface.
type Options struct {
	Chat         *chat.Service
	Catalog      *models.Catalog
	APIKeys      []string
	MaxBodyBytes int64
	// PingInterval is the silence after which a stream gets a keepalive
	// (at most one per interval). Zero disables pings.
	PingInterval time.Duration
	Version      string
	// XIsHuman, when set, reports the x-is-human check's last outcome in
	// /health (a JSON-able value).
	XIsHuman func() any
	Logger   *slog.Logger
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
		abortWithError(c, &models.Error{Status: http.StatusInternalServerError, Kind: models.KindAPI, Message: "internal error; the gateway's log has the details"})
	}))
	r.GET("/health", s.health)
	v1 := r.Group("/v1", useDoor(openaiDoor), auth(opts.APIKeys))
	v1.GET("/models", s.listModels)
	v1.POST("/chat/completions", s.chatCompletions)
	r.NoRoute(useDoor(openaiDoor), func(c *gin.Context) {
		writeError(c, &models.Error{Status: http.StatusNotFound, Kind: models.KindNotFound, Code: "not_found",
			Message: fmt.Sprintf("no route %s %s: this gateway serves GET /v1/models and POST /v1/chat/completions", c.Request.Method, c.Request.URL.Path)})
	})
	r.NoMethod(useDoor(openaiDoor), func(c *gin.Context) {
		writeError(c, &models.Error{Status: http.StatusMethodNotAllowed, Kind: models.KindInvalidRequest, Code: "method_not_allowed",
			Message: fmt.Sprintf("%s is not allowed on %s", c.Request.Method, c.Request.URL.Path)})
	})
	return r
}

func (s *server) health(c *gin.Context) {
	h := gin.H{"status": "ok", "version": s.Version}
	if s.XIsHuman != nil {
		h["x_is_human"] = s.XIsHuman()
	}
	c.JSON(http.StatusOK, h)
}

func (s *server) listModels(c *gin.Context) {
	c.JSON(http.StatusOK, openai.ModelListOf(s.Catalog.Names(), s.started))
}
