// Package handlers is the HTTP surface of the gateway: routing, auth,
// request ids, the access log, and the glue between HTTP and the core for
// each front door. A door's handler reads the body, converts it with the
// door's package (handlers/openai, handlers/responses, handlers/anthropic,
// handlers/gemini), hands the neutral
// request to the core (services/chat) and lets the door's encoder write
// the answer. Wire formats live in the door packages; protocol work lives
// in the core.
package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/anthropic"
	"cursor2api/handlers/openai"
	"cursor2api/handlers/responses"
	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/services/cloud"
	"cursor2api/services/metrics"
	"cursor2api/services/readiness"
	"cursor2api/services/usage"
	"cursor2api/utils"
)

// Options configure the HTTP surface.
type Options struct {
	Chat    *chat.Service
	Catalog *models.Catalog
	// Aliases resolve the model names of the Anthropic door (Claude
	// Code's dated ids) to published models.
	Aliases      models.Aliases
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
	// Responses keeps responses for previous_response_id (nil: a store
	// in memory with responses.DefaultStoreLimits).
	Responses *responses.Store
	// Usage, when not nil, records every answered request and serves
	// GET /v1/organization/usage/completions to the holder of AdminKey
	// (empty: the endpoint is off).
	Usage    *usage.Ledger
	AdminKey string
	// Backend names the back door in the usage records.
	Backend string
	// Metrics, when not nil, are served at /metrics and count requests.
	Metrics *metrics.Metrics
	// Readiness answers /ready; nil: always ready.
	Readiness *readiness.Tracker
	// TrustedProxies are the addresses or CIDRs of reverse proxies whose
	// X-Forwarded-For / X-Real-IP name the client; nil trusts none.
	TrustedProxies []string

	// Limits against slow or hostile clients and cross-site requests
	// (see guard). AllowedHosts empty: any Host; AllowedOrigins empty:
	// no cross-origin browser request; BodyReadTimeout zero: no bound.
	AllowedHosts    []string
	AllowedOrigins  []string
	BodyReadTimeout time.Duration
	// Cloud, when not nil, serves Cursor Cloud Agents as the cloud models
	// of the Responses door (CLOUD_AGENTS=on).
	Cloud *cloud.Service
	// Drain, when it ends, ends the answers still in flight with the
	// door's error event (the server's drain time is up). Nil: never.
	Drain context.Context
	// Tools, when set, lists the tools the gateway runs itself (MCP) for
	// GET /v1/tools, as a JSON-able list.
	Tools func() any
}

// server holds what the handlers share; it is built once and read-only.
type server struct {
	Options
	started int64 // "created" of the model list
	tokens  *anthropic.TokenCounter
}

// New returns the gateway's HTTP handler. A path with a trailing slash is
// served as the path without it.
func New(opts Options) http.Handler {
	if opts.Responses == nil {
		opts.Responses = responses.NewMemoryStore(responses.DefaultStoreLimits, nil)
	}
	s := &server{Options: opts, started: time.Now().Unix(), tokens: &anthropic.TokenCounter{}}
	r := gin.New()
	r.HandleMethodNotAllowed = true
	if err := r.SetTrustedProxies(opts.TrustedProxies); err != nil {
		// config validated them; this is a programming error
		panic(fmt.Sprintf("trusted proxies: %v", err))
	}
	r.RedirectTrailingSlash = false // stripTrailingSlash serves them instead
	r.Use(requestID, accessLog(opts.Logger), gin.CustomRecovery(func(c *gin.Context, rec any) {
		opts.Logger.Error("panic", "request_id", c.GetString(keyRequestID), "panic", fmt.Sprint(rec))
		abortWithError(c, &models.Error{Status: http.StatusInternalServerError, Kind: models.KindAPI, Message: "internal error; the gateway's log has the details"})
	}), guard(opts.AllowedHosts, opts.AllowedOrigins, opts.BodyReadTimeout))
	r.GET("/health", s.health)
	r.GET("/ready", s.ready)
	if opts.Metrics != nil {
		r.GET("/metrics", gin.WrapH(opts.Metrics.Handler()))
	}
	// entry is what runs first on every route of a door: marking the
	// door (for its error shape and the log), counting, then auth.
	entry := func(mark gin.HandlerFunc) []gin.HandlerFunc {
		hs := []gin.HandlerFunc{mark}
		if opts.Metrics != nil {
			hs = append(hs, s.countRequests)
		}
		if opts.Usage != nil {
			hs = append(hs, s.recordUsage)
		}
		return append(hs, auth(opts.APIKeys))
	}
	// GET /v1/models answers in the format of the client's API.
	r.GET("/v1/models", append(entry(useDoorByRequest), s.listModels)...)
	v1 := r.Group("/v1", entry(useDoor(openaiDoor))...)
	v1.POST("/chat/completions", s.chatCompletions)
	v1.GET("/tools", s.listTools)
	rv1 := r.Group("/v1/responses", entry(useDoor(responsesDoor))...)
	rv1.POST("", s.createResponse)
	rv1.GET("/:id", s.getResponse)
	rv1.DELETE("/:id", s.deleteResponse)
	if opts.Usage != nil {
		r.GET("/v1/organization/usage/completions", useDoor(openaiDoor), adminAuth(opts.AdminKey), s.usageCompletions)
	}
	rv1.POST("/:id/cancel", s.cancelResponse)
	if opts.Cloud != nil && opts.Cloud.Webhooks != nil {
		// Cursor signs its deliveries; it has no key of this gateway.
		r.POST("/v1/cloud/webhook", useDoor(openaiDoor), s.cloudWebhook)
	}
	msgs := r.Group("/v1/messages", entry(useDoor(anthropicDoor))...)
	msgs.POST("", s.messages)
	msgs.POST("/count_tokens", s.countTokens)
	gem := r.Group(geminiPrefix+"models", entry(useDoor(geminiDoor))...)
	gem.GET("", s.geminiModels)
	gem.GET("/:model", s.geminiModel)
	gem.POST("/:model", s.geminiCall)
	r.NoRoute(useDoorByRequest, func(c *gin.Context) {
		writeError(c, &models.Error{Status: http.StatusNotFound, Kind: models.KindNotFound, Code: "not_found",
			Message: fmt.Sprintf("no route %s %s: this gateway serves GET /v1/models, POST /v1/chat/completions, POST /v1/responses, POST /v1/messages, POST /v1/messages/count_tokens and the Gemini API under /v1beta/models", utils.Clip(c.Request.Method, utils.QuoteLen), utils.Clip(c.Request.URL.Path, utils.QuoteLen))})
	})
	r.NoMethod(useDoorByRequest, func(c *gin.Context) {
		writeError(c, &models.Error{Status: http.StatusMethodNotAllowed, Kind: models.KindInvalidRequest, Code: "method_not_allowed",
			Message: fmt.Sprintf("%s is not allowed on %s", utils.Clip(c.Request.Method, utils.QuoteLen), utils.Clip(c.Request.URL.Path, utils.QuoteLen))})
	})
	return stripTrailingSlash(r)
}

func (s *server) health(c *gin.Context) {
	h := gin.H{"status": "ok", "version": s.Version}
	if s.XIsHuman != nil {
		h["x_is_human"] = s.XIsHuman()
	}
	c.JSON(http.StatusOK, h)
}

func (s *server) listModels(c *gin.Context) {
	names := s.Catalog.Names()
	if s.Cloud != nil {
		names = append(names[:len(names):len(names)], s.Cloud.ModelNames(c.Request.Context())...)
	}
	if doorOf(c) == anthropicDoor {
		list := anthropic.ModelListOf(names, s.started)
		for i := range list.Data {
			// The upstream's own display name, when it gave one.
			list.Data[i].DisplayName = s.Catalog.DisplayName(list.Data[i].ID)
		}
		c.JSON(http.StatusOK, list)
		return
	}
	c.JSON(http.StatusOK, openai.ModelListOf(names, s.started))
}
