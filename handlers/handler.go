// Package handlers is the gateway's HTTP surface: the router with its
// table of front doors, and what runs before every door (request ids,
// the access log, host and origin checks, auth, metrics and usage). Each
// door is a package (handlers/openai, responses, anthropic, gemini, with
// Cloud Agents in handlers/cloudagents); what they share is handlers/door.
package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/anthropic"
	"cursor2api/handlers/cloudagents"
	"cursor2api/handlers/console"
	"cursor2api/handlers/door"
	"cursor2api/handlers/gemini"
	"cursor2api/handlers/openai"
	"cursor2api/handlers/responses"
	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/services/clientkeys"
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
	Aliases models.Aliases
	APIKeys []string
	// ClientKeys, when set, are the client keys in force (API_KEYS_FILE
	// and API_KEY), in place of APIKeys.
	ClientKeys *clientkeys.Set
	// Limits count the keys' use against their limits (nil: in this
	// process, clientkeys.NewMemory).
	Limits       clientkeys.Counter
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
	// CompactionSecret seals the Responses door's compaction items
	// (config.CompactionKey); the same on every replica.
	CompactionSecret string
	// ResponsesSocket bounds the connections of the Responses WebSocket
	// (zero values: responses' defaults, pings every PingInterval); its
	// Group, when set, is what the server's shutdown closes them by.
	ResponsesSocket responses.SocketLimits
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
	// Settings are the configuration in force, secrets masked
	// (console.SettingsOf), for the console (served with AdminKey).
	Settings []console.Setting
	// ConsoleKeys, when set, names the client keys on the console and
	// tells their limits and use (the hook for named keys).
	ConsoleKeys func() []console.KeyView
}

// server holds what the routes outside the doors share; it is built once
// and read-only.
type server struct {
	Options
	kit     *door.Kit
	started int64 // "created" of the model list
	// errors are the last failed requests, for the console (nil: off).
	errors *console.Errors
	// admins counts the wrong ADMIN_KEYs by client address, for every
	// door the key opens: guesses on one count on the other.
	admins *console.Attempts
}

// frontDoor is a row of the door table: the door, the path prefix that
// marks a request as its own, and its routes there.
type frontDoor struct {
	*door.Door
	prefix string
	routes func(gin.IRoutes)
}

// Handler is the gateway's HTTP handler, with the background work of its
// pages (Run).
type Handler struct {
	http.Handler
	console *console.Console
}

// Run does the handler's background work until it is done or ctx ends:
// the console reads the ledger's last 30 days ahead of its first page.
// The server runs it for its lifetime, ending it before the state store
// closes.
func (h *Handler) Run(ctx context.Context) {
	if h.console != nil {
		h.console.Run(ctx)
	}
}

// New returns the gateway's HTTP handler. A path with a trailing slash is
// served as the path without it.
func New(opts Options) *Handler {
	if opts.ClientKeys == nil {
		// No file: the plain list cannot be wrong.
		opts.ClientKeys, _ = clientkeys.Load("", opts.APIKeys)
	}
	if opts.Limits == nil {
		opts.Limits = clientkeys.NewMemory()
	}
	if opts.ConsoleKeys == nil {
		opts.ConsoleKeys = consoleKeys(opts.ClientKeys, opts.Limits)
	}
	if opts.Responses == nil {
		opts.Responses = responses.NewMemoryStore(responses.DefaultStoreLimits, nil)
	}
	kit := &door.Kit{Chat: opts.Chat, Catalog: opts.Catalog, Aliases: opts.Aliases, Logger: opts.Logger,
		MaxBodyBytes: opts.MaxBodyBytes, BodyReadTimeout: opts.BodyReadTimeout, PingInterval: opts.PingInterval,
		Drain: opts.Drain, Metrics: opts.Metrics, RecordUsage: opts.Usage != nil}
	s := &server{Options: opts, kit: kit, started: time.Now().Unix(), admins: console.NewAttempts()}
	if opts.AdminKey != "" {
		s.errors = &console.Errors{}
	}
	kit.Turn, kit.Admit = s.turn, s.admit
	tokens := &anthropic.TokenCounter{}
	rs := responses.Handler{Kit: kit, Store: opts.Responses, Sealer: responses.NewSealer(opts.CompactionSecret), SocketLimits: socketLimits(opts)}
	var cloudAgents *cloudagents.Handler
	if opts.Cloud != nil {
		cloudAgents = &cloudagents.Handler{Kit: kit, Cloud: opts.Cloud}
		rs.Cloud = cloudAgents
	}
	// The front doors, in the order a request's path is matched against
	// their prefixes; a request no prefix claims is OpenAI's.
	doors := []frontDoor{
		{gemini.Door, gemini.Prefix, gemini.Handler{Kit: kit, CountTokens: tokens.BPETokens}.Routes},
		{anthropic.Door, anthropic.Prefix, anthropic.Handler{Kit: kit, Tokens: tokens}.Routes},
		{responses.Door, responses.Prefix, rs.Routes},
		{openai.Door, "/v1/chat/completions", func(g gin.IRoutes) { g.POST("", openai.Handler{Kit: kit}.ChatCompletions) }},
	}
	byRequest := doorByRequest(doors)

	r := gin.New()
	r.HandleMethodNotAllowed = true
	if err := r.SetTrustedProxies(opts.TrustedProxies); err != nil {
		// config validated them; this is a programming error
		panic(fmt.Sprintf("trusted proxies: %v", err))
	}
	r.RedirectTrailingSlash = false // stripTrailingSlash serves them instead
	r.Use(door.Use(openai.Door), requestID, accessLog(opts.Logger, s.errors), gin.CustomRecovery(func(c *gin.Context, rec any) {
		opts.Logger.Error("panic", "request_id", door.RequestID(c), "panic", fmt.Sprint(rec))
		door.Abort(c, &models.Error{Status: http.StatusInternalServerError, Kind: models.KindAPI, Message: "internal error; the gateway's log has the details"})
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
		return append(hs, auth(opts.ClientKeys), s.limit)
	}
	for _, d := range doors {
		d.routes(r.Group(d.prefix, entry(door.Use(d.Door))...))
	}
	// GET /v1/models answers in the format of the client's API.
	r.GET("/v1/models", append(entry(byRequest), s.listModels)...)
	r.GET("/v1/tools", append(entry(door.Use(openai.Door)), s.listTools)...)
	if opts.Usage != nil {
		r.GET("/v1/organization/usage/completions", door.Use(openai.Door), s.adminAuth, s.usageCompletions)
	}
	cs := s.consoleRoutes(r)
	if cloudAgents != nil && opts.Cloud.Webhooks != nil {
		// Cursor signs its deliveries; it has no key of this gateway.
		r.POST("/v1/cloud/webhook", door.Use(openai.Door), cloudAgents.Webhook)
	}
	r.NoRoute(byRequest, func(c *gin.Context) {
		door.WriteError(c, &models.Error{Status: http.StatusNotFound, Kind: models.KindNotFound, Code: "not_found",
			Message: fmt.Sprintf("no route %s %s: this gateway serves GET /v1/models, POST /v1/chat/completions, POST /v1/responses (or its WebSocket, GET with Upgrade: websocket), POST /v1/messages, POST /v1/messages/count_tokens and the Gemini API under /v1beta/models", utils.Clip(c.Request.Method, utils.QuoteLen), utils.Clip(c.Request.URL.Path, utils.QuoteLen))})
	})
	r.NoMethod(byRequest, func(c *gin.Context) {
		door.WriteError(c, &models.Error{Status: http.StatusMethodNotAllowed, Kind: models.KindInvalidRequest, Code: "method_not_allowed",
			Message: fmt.Sprintf("%s is not allowed on %s", utils.Clip(c.Request.Method, utils.QuoteLen), utils.Clip(c.Request.URL.Path, utils.QuoteLen))})
	})
	return &Handler{Handler: stripTrailingSlash(r), console: cs}
}

// doorByRequest marks a request on a route the doors share (GET
// /v1/models) or on no route as the door whose prefix its path has, else
// as Anthropic's when it speaks the Anthropic API, else as OpenAI's.
func doorByRequest(doors []frontDoor) gin.HandlerFunc {
	return func(c *gin.Context) {
		d := openai.Door
		for _, fd := range doors {
			if strings.HasPrefix(c.Request.URL.Path, fd.prefix) {
				d = fd.Door
				break
			}
		}
		if d == openai.Door && anthropic.Speaks(c.Request) {
			d = anthropic.Door
		}
		c.Set(door.KeyDoor, d)
		c.Next()
	}
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
	if door.Of(c) == anthropic.Door {
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

// socketLimits are the Responses WebSocket's limits, the defaults for
// those opts leaves zero.
func socketLimits(opts Options) responses.SocketLimits {
	l := opts.ResponsesSocket
	if l.Idle == 0 {
		l.Idle = responses.DefaultSocketIdle
	}
	if l.MaxTurns == 0 {
		l.MaxTurns = responses.DefaultSocketMaxTurns
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = responses.DefaultSocketMaxBytes
	}
	if l.PingInterval == 0 {
		l.PingInterval = opts.PingInterval
	}
	return l
}

// consoleRoutes serves the operator's console at /console when ADMIN_KEY
// is set, and returns it; without it the console is off: a 404 in
// OpenAI's shape.
func (s *server) consoleRoutes(r *gin.Engine) *console.Console {
	if s.AdminKey == "" {
		off := func(c *gin.Context) {
			door.WriteError(c, &models.Error{Status: http.StatusNotFound, Kind: models.KindNotFound, Code: "not_found",
				Message: "the console is off: set ADMIN_KEY on the gateway to serve it at /console"})
		}
		r.Any(console.Prefix, door.Use(openai.Door), off)
		r.Any(console.Prefix+"/*path", door.Use(openai.Door), off)
		return nil
	}
	o := console.Options{AdminKey: s.AdminKey, Version: s.Version, Started: time.Unix(s.started, 0), Backend: s.Backend,
		Usage: s.Usage, Errors: s.errors, Settings: s.Settings, Keys: s.ConsoleKeys, Logger: s.Logger, Attempts: s.admins}
	if s.Readiness != nil {
		o.Ready = func(ctx context.Context) readiness.Report {
			ctx, cancel := context.WithTimeout(ctx, readyTimeout)
			defer cancel()
			return s.Readiness.Report(ctx)
		}
	}
	for _, k := range s.APIKeys {
		o.ClientKeys = append(o.ClientKeys, usage.KeyID(k))
	}
	cs := console.New(o)
	cs.Routes(r.Group(console.Prefix, door.Use(openai.Door)))
	return cs
}

// consoleKeys lists the client keys in force for the console: names,
// limits and how much of each is used now, within a bound on the store.
func consoleKeys(keys *clientkeys.Set, limits clientkeys.Counter) func() []console.KeyView {
	return func() []console.KeyView {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		listed := clientkeys.List(ctx, keys, limits, time.Now())
		views := make([]console.KeyView, 0, len(listed))
		for _, k := range listed {
			v := console.KeyView{ID: k.Fingerprint, Name: k.Name}
			for _, l := range []console.Limit{
				{Name: "rpm", Used: k.Use.RPM, Max: k.Limits.RPM},
				{Name: "tokens_per_day", Used: k.Use.TokensToday, Max: k.Limits.TokensPerDay},
				{Name: "concurrent", Used: k.Use.Concurrent, Max: k.Limits.Concurrent},
			} {
				if l.Max > 0 {
					v.Limits = append(v.Limits, l)
				}
			}
			views = append(views, v)
		}
		return views
	}
}
