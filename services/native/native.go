// Package native is the back door to Cursor's own agent API (BACKEND=cursor),
// the one its IDE, CLI and SDK speak with the user's API key: every model of
// the account, and the client's tools called natively as MCP tools.
//
// A turn is one upstream run (Run over HTTP/2, or RunSSE plus BidiAppend
// over HTTP/1.1). The model's built-in tools are refused: the gateway never
// acts on its own machine for the model. A turn that stops at tool calls is
// parked, keyed by the calls' ids, until the results arrive; results that
// find no parked run are replayed in a fresh run with the whole history.
package native

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"cursor2api/models"
	"cursor2api/services/native/agentv1/agentv1connect"
	"cursor2api/services/native/aiserverv1"
	"cursor2api/services/native/aiserverv1/aiserverv1connect"
	"cursor2api/services/native/keys"
	"cursor2api/services/state"
	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// allowedToolsHeader restricts a run's toolset to the agent proto tool
// names listed (comma-separated); the official SDK sends it for its
// `tools` option, and an empty list means no built-in tool at all. The
// gateway allows the MCP family alone, under which the client's tools are
// declared.
const allowedToolsHeader = "x-cursor-agent-allowed-tools"

// Transports.
const (
	TransportAuto  = "auto"
	TransportHTTP2 = "http2"
	TransportSSE   = "sse"
)

// Options configure a Client.
type Options struct {
	// Keys hands out API keys and their tokens, per conversation; nil: a
	// pool over APIKeys (none when APIKeys is empty: every request then
	// gets an error naming CURSOR_API_KEY).
	Keys    *keys.Pool
	APIKeys []string
	// State is where the pool over APIKeys shares its keys' rests with
	// the other replicas and its next start (keys.Options.State); nil:
	// in this process only.
	State *state.Queue
	// ConnectURL is where Connect calls go, RESTURL where REST calls go.
	ConnectURL, RESTURL string
	// ClientVersion and ClientType are the client the gateway says it is.
	ClientVersion, ClientType string
	// Transport is auto, http2 or sse.
	Transport string
	// HTTP carries REST, unary and SSE calls; HTTP2 the bidi Run (h2c for
	// an http:// URL). Nil: built.
	HTTP, HTTP2 *http.Client
	// IdleTimeout ends a run that sends nothing, heartbeats included,
	// for this long; StallTimeout one that sends only heartbeats.
	IdleTimeout, StallTimeout time.Duration
	// HeartbeatEvery is how often the client says it is alive.
	HeartbeatEvery time.Duration
	// CallSettle is how long a turn stays quiet after its last tool call
	// before the gateway decides it announced them all.
	CallSettle time.Duration
	// ParkMax, ParkTTL and ParkBytes bound the parked runs.
	ParkMax   int
	ParkTTL   time.Duration
	ParkBytes int64
	// RunBlobBytes bounds the blobs one run keeps.
	RunBlobBytes int64
	Logger       *slog.Logger
	// Drift is told of server messages of a kind the generated schema
	// does not know; nil makes one that logs to Logger.
	Drift *utils.Drift
}

// Client is the native back door. It implements upstream.Native.
type Client struct {
	opts   Options
	keys   *keys.Pool                        // nil without a usable key
	agent  agentv1connect.AgentServiceClient // over HTTP
	agent2 agentv1connect.AgentServiceClient // over HTTP/2
	bidi   aiserverv1connect.BidiServiceClient
	config aiserverv1connect.ServerConfigServiceClient
	park   *parking
	log    *slog.Logger

	// keyErr is why there is no pool (a malformed CURSOR_API_KEY).
	keyErr *models.Error

	// systemDenied is set once Cursor refuses custom_system_prompt for
	// this account: system text then goes at the head of the history.
	systemDenied atomic.Bool

	transportMu sync.Mutex
	transport   string // the transport settled on ("" until known)

	modelsMu sync.Mutex
	modelErr error

	// gateAt and gateErr are Ready's last look at the version gate.
	gateMu  sync.Mutex
	gateAt  time.Time
	gateErr error
}

// New returns a Client; it calls nothing until asked.
func New(o Options) *Client {
	if o.ConnectURL == "" {
		o.ConnectURL = models.CursorConnectURL
	}
	if o.RESTURL == "" {
		o.RESTURL = models.CursorAPIURL
	}
	o.ConnectURL, o.RESTURL = strings.TrimRight(o.ConnectURL, "/"), strings.TrimRight(o.RESTURL, "/")
	if o.ClientVersion == "" {
		o.ClientVersion = "sdk-1.0.32"
	}
	if o.ClientType == "" {
		o.ClientType = "sdk"
	}
	if o.Transport == "" {
		o.Transport = TransportAuto
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Transport: HTTPTransport(nil)}
	}
	if o.HTTP2 == nil {
		o.HTTP2 = HTTP2Client(nil)
	}
	o.IdleTimeout = utils.Default(o.IdleTimeout, 60*time.Second)
	o.StallTimeout = utils.Default(o.StallTimeout, 5*time.Minute)
	o.HeartbeatEvery = utils.Default(o.HeartbeatEvery, 5*time.Second)
	o.CallSettle = utils.Default(o.CallSettle, 300*time.Millisecond)
	o.ParkTTL = utils.Default(o.ParkTTL, 5*time.Minute)
	o.ParkBytes = utils.Default(o.ParkBytes, 256<<20)
	o.RunBlobBytes = utils.Default(o.RunBlobBytes, min(o.ParkBytes, 64<<20))
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Drift == nil {
		o.Drift = utils.NewDrift(o.Logger)
	}
	c := &Client{opts: o, log: o.Logger, park: newParking(o.ParkMax, o.ParkTTL, o.ParkBytes)}
	c.keys = o.Keys
	if c.keys == nil && len(o.APIKeys) > 0 {
		h := http.Header{}
		c.clientHeaders(h)
		pool, err := keys.New(keys.Options{Keys: o.APIKeys, BaseURL: o.ConnectURL, HTTP: o.HTTP, Header: h, Logger: o.Logger, State: o.State})
		if err != nil {
			c.keyErr = models.Upstream(http.StatusServiceUnavailable, "cursor_bad_key_config", err, "%v", err)
		} else {
			c.keys = pool
		}
	}
	opts := []connect.ClientOption{connect.WithReadMaxBytes(64 << 20)}
	c.agent = agentv1connect.NewAgentServiceClient(o.HTTP, o.ConnectURL, opts...)
	c.agent2 = agentv1connect.NewAgentServiceClient(o.HTTP2, o.ConnectURL, opts...)
	c.bidi = aiserverv1connect.NewBidiServiceClient(o.HTTP, o.ConnectURL, opts...)
	c.config = aiserverv1connect.NewServerConfigServiceClient(o.HTTP, o.ConnectURL, opts...)
	return c
}

// HTTPTransport is base (the default when nil) for the HTTP/1.1 calls, with
// an idle pool as large as the calls in flight. All go to one host, and with
// the default two idle connections per host nearly every append redialled.
func HTTPTransport(base *http.Transport) *http.Transport {
	t := base
	if t == nil {
		t = http.DefaultTransport.(*http.Transport)
	}
	t = t.Clone()
	t.MaxIdleConns = maxIdleConns
	t.MaxIdleConnsPerHost = maxIdleConns
	return t
}

// maxIdleConns bounds the idle HTTP/1.1 connections kept for reuse.
const maxIdleConns = 512

// HTTP2Client is an HTTP/2 client: TLS for https URLs, h2c (prior
// knowledge) for http ones. base, when not nil, gives the dialer and
// proxy settings.
func HTTP2Client(base *http.Transport) *http.Client {
	t := base
	if t == nil {
		t = http.DefaultTransport.(*http.Transport).Clone()
	} else {
		t = t.Clone()
	}
	p := new(http.Protocols)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	t.Protocols = p
	return &http.Client{Transport: t}
}

// NativeTools implements upstream.Native.
func (c *Client) NativeTools() bool { return true }

// Parked is the number of runs parked at their tool calls.
func (c *Client) Parked() int { return c.park.len() }

// Close aborts every parked run. Runs streaming at the time end with
// their requests.
func (c *Client) Close() { c.park.close() }

// Shutdown ends the client for a stop: it aborts the parked runs (Close)
// and waits, until ctx ends, for the writes of the keys' rests to the
// state store under way (keys.Pool.Wait), so that a rest recorded just
// before the stop is kept. The gateway closes the store after it.
func (c *Client) Shutdown(ctx context.Context) error {
	c.Close()
	if c.keys == nil {
		return nil
	}
	return c.keys.Wait(ctx)
}

// clientHeaders are the headers of every call: who the client is.
func (c *Client) clientHeaders(h http.Header) {
	h.Set("x-cursor-client-type", c.opts.ClientType)
	h.Set("x-cursor-client-version", c.opts.ClientVersion)
	// Privacy mode: Cursor keeps nothing of the gateway's conversations.
	h.Set("x-ghost-mode", "true")
}

// callHeaders are the headers of one run's calls.
func (c *Client) callHeaders(lease *keys.Lease, requestID string, sse bool) func(http.Header) {
	return func(h http.Header) {
		c.clientHeaders(h)
		h.Set("Authorization", "Bearer "+lease.AccessToken())
		h.Set("x-request-id", requestID)
		h.Set("x-original-request-id", requestID)
		h.Set(allowedToolsHeader, "mcp_tool_call")
		if sse {
			h.Set("x-cursor-streaming", "true")
		}
	}
}

// uuid is a random RFC 4122 version 4 id.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Stream implements upstream.Upstream. Results of a parked turn's calls,
// from the tenant that parked it, resume that turn; anything else starts a
// fresh run. A turn that stops at tool calls returns with its run parked.
func (c *Client) Stream(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error) (*models.Usage, error) {
	sent := false
	if ids, results := trailingResults(req.Conversation); len(ids) > 0 {
		if r := c.park.take(ids, req.Tenant); r != nil && r.lacksTools(req) {
			// A run's tools are fixed at its start; these results loaded
			// more (a client's tool search): a fresh run gets them all.
			r.abort(errToolsLoaded)
			c.log.Info("native: the results loaded tools the parked run lacks; replaying the conversation", "request_id", req.RequestID)
		} else if r != nil {
			usage, err := c.resume(ctx, r, results, fn, &sent)
			if !errors.Is(err, errRunGone) || sent {
				return usage, err
			}
			c.log.Info("native: the parked run was gone; replaying the conversation", "request_id", req.RequestID)
		}
	}
	return c.fresh(ctx, req, fn, &sent)
}

// acquire leases a key for a conversation.
func (c *Client) acquire(ctx context.Context, session string) (*keys.Lease, error) {
	if c.keys == nil {
		if c.keyErr != nil {
			return nil, c.keyErr
		}
		return nil, errNoKey
	}
	return c.keys.Acquire(ctx, session)
}

// sessionOf is the conversation's session for the key pool: the client's
// own, else a hash of what starts the conversation (its system text and
// first user message), which stays the same as it grows.
func sessionOf(req upstream.Request) string {
	if req.Session != "" {
		return req.Session
	}
	var system, first string
	for _, m := range req.Conversation {
		if m.Role == models.RoleSystem && system == "" {
			system = m.Text()
		}
		if m.Role == models.RoleUser {
			first = m.Text()
			break
		}
	}
	return keys.SessionHash(req.Model, system, first)
}

// errRunGone is a parked run found closed when its results came.
var errRunGone = errors.New("the parked run is gone")

// errToolsLoaded ends a parked run whose results loaded tools it lacks.
var errToolsLoaded = errors.New("the results loaded tools the run was not given")

// lacksTools reports whether req offers a tool r was not started with.
func (r *run) lacksTools(req upstream.Request) bool {
	if req.Choice.Mode == models.ChoiceNone {
		return false
	}
	for _, t := range req.Tools {
		if _, ok := r.names[t.Name]; !ok {
			return true
		}
	}
	return false
}

// trailingResults are the tool results the conversation ends with, by
// call key, and their ids.
func trailingResults(conv []models.Message) ([]string, map[string]models.Message) {
	var ids []string
	results := map[string]models.Message{}
	for i := len(conv) - 1; i >= 0 && conv[i].Role == models.RoleTool; i-- {
		ids = append(ids, conv[i].ToolCallID)
		results[utils.CallIDKey(conv[i].ToolCallID)] = conv[i]
	}
	return ids, results
}

// resume sends a parked run its results and streams the rest of its turn.
func (c *Client) resume(ctx context.Context, r *run, results map[string]models.Message, fn func(upstream.Delta) error, sent *bool) (*models.Usage, error) {
	if !r.alive() {
		r.abort(errRunGone)
		return nil, errRunGone
	}
	if err := r.resume(results); err != nil {
		r.abort(err)
		return nil, errRunGone
	}
	r.log.Debug("native: resumed a parked run", "run", r.id)
	usage, err := c.follow(ctx, r, fn, sent)
	if errors.Is(err, errCut) && !*sent {
		return nil, errRunGone
	}
	return usage, err
}

// follow consumes a run and settles it: parked, done or failed.
func (c *Client) follow(ctx context.Context, r *run, fn func(upstream.Delta) error, sent *bool) (*models.Usage, error) {
	st, usage, err := r.consume(ctx, fn, sent)
	switch {
	case err != nil:
		if isContext(ctx, err) || ctx.Err() != nil {
			r.finish(ctx.Err(), keys.Outcome{Kind: keys.OK})
			return nil, ctx.Err()
		}
		if errors.Is(err, errCut) {
			r.finish(err, keys.Outcome{Kind: keys.Transient, Err: err})
			return nil, models.Upstream(http.StatusBadGateway, "upstream_incomplete", err, "Cursor's stream ended before the turn did: %v", err)
		}
		var me *models.Error
		if errors.As(err, &me) {
			r.finish(err, keys.Outcome{Kind: keys.Transient, Err: err})
			return nil, err
		}
		if _, ok := readError(err); !ok {
			// fn's own error, or the run's cause: passed on as it is.
			r.finish(err, keys.Outcome{Kind: keys.OK})
			return nil, err
		}
		noteErrorDetails(c.opts.Drift, err)
		e, o := classify(err, r.model, c.opts.ClientVersion)
		o.Err = e
		r.finish(err, o)
		return nil, e
	case st == stepParked:
		ids := make([]string, len(r.calls))
		for i, pc := range r.calls {
			ids[i] = pc.id
		}
		if !c.park.park(r, ids) {
			r.abort(errors.New("parking is off (CURSOR_PARK_MAX=0)"))
		}
		return nil, nil
	}
	r.afterTurn(ctx)
	return usage, nil
}

// fresh runs the conversation in a new run. A run cut before anything
// reached the caller, or refused with unauthenticated (the token is
// refreshed), is tried once more.
func (c *Client) fresh(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error, sent *bool) (*models.Usage, error) {
	var lastErr error
	retried, systemRetried := false, false
	otherKeys := 0
	if c.keys != nil {
		otherKeys = c.keys.Len() - 1
	}
	for {
		usage, err := c.attempt(ctx, req, fn, sent)
		if err == nil || *sent || ctx.Err() != nil {
			return usage, err
		}
		lastErr = err
		var me *models.Error
		switch {
		case errors.Is(err, errSystemPromptDenied) && !systemRetried:
			systemRetried = true
			c.systemDenied.Store(true)
			c.log.Warn("native: Cursor refuses a custom system prompt for this account; system messages go into the history from now on")
			continue
		case errors.Is(err, errCut) && !retried:
			retried = true
			c.log.Info("native: the run was cut before any output; trying once more", "request_id", req.RequestID)
			continue
		case errors.As(err, &me) && me.Code == "cursor_unauthenticated" && !retried:
			retried = true
			continue
		case errors.As(err, &me) && me.Kind == models.KindRateLimit && otherKeys > 0:
			// The pool rests the key; the conversation's next key is tried.
			otherKeys--
			c.log.Info("native: key resting; trying the conversation's next key", "request_id", req.RequestID, "code", me.Code)
			continue
		}
		break
	}
	if errors.Is(lastErr, errCut) {
		return nil, models.Upstream(http.StatusBadGateway, "upstream_incomplete", lastErr, "Cursor ended the run before the turn did, twice; try again")
	}
	if errors.Is(lastErr, errSystemPromptDenied) {
		return nil, models.Upstream(http.StatusBadGateway, "cursor_system_prompt", lastErr, "Cursor refused the system prompt")
	}
	return nil, lastErr
}

// errSystemPromptDenied marks a refusal of custom_system_prompt.
var errSystemPromptDenied = errors.New("custom system prompt refused")

// attempt is one fresh run.
func (c *Client) attempt(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error, sent *bool) (*models.Usage, error) {
	lease, err := c.acquire(ctx, sessionOf(req))
	if err != nil {
		return nil, err
	}
	transport, err := c.transportFor(ctx, lease)
	if err != nil {
		lease.Done(keys.Outcome{Kind: keys.Transient})
		return nil, err
	}
	runID, convID := uuid(), uuid()
	plan, err := buildRun(req, runID, convID, uuid(), c.systemDenied.Load())
	if err != nil {
		lease.Done(keys.Outcome{Kind: keys.NotKeysFault})
		return nil, err
	}
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r := &run{
		c: c, id: runID, convID: convID, model: req.Model, tenant: req.Tenant, lease: lease,
		log: c.log.With("request_id", req.RequestID, "run", runID, "key", lease.Name()),
		ctx: rctx, cancel: cancel, events: make(chan event, 64), done: make(chan struct{}), beating: make(chan struct{}),
		reqCtx: plan.reqCtx, names: plan.names, blobs: newBlobStore(c.opts.RunBlobBytes),
	}
	header := c.callHeaders(lease, runID, transport == TransportSSE)
	if transport == TransportSSE {
		r.conn = openSSE(rctx, c.agent, c.bidi, header, runID)
	} else {
		r.conn = openBidi(rctx, c.agent2, header)
	}
	r.log.Debug("native: run started", "transport", transport, "model", req.Model, "history", plan.history, "tools", len(req.Tools))
	if err := r.start(plan.msg); err != nil {
		// The reason comes on the stream (Receive), if the server gave one.
		r.log.Debug("native: sending the run request failed", "error", err)
	}
	usage, err := c.follow(ctx, r, fn, sent)
	if err != nil {
		var me *models.Error
		if errors.As(err, &me) && me.Err != nil {
			if ce, ok := readError(me.Err); ok && ce.systemPromptRefused() {
				return nil, fmt.Errorf("%w: %v", errSystemPromptDenied, err)
			}
		}
	}
	return usage, err
}

// transportFor is the transport runs use: the configured one, or, for
// auto, the one GetServerConfig's http2_config asks for (asked once).
func (c *Client) transportFor(ctx context.Context, lease *keys.Lease) (string, error) {
	if c.opts.Transport != TransportAuto {
		return c.opts.Transport, nil
	}
	c.transportMu.Lock()
	defer c.transportMu.Unlock()
	if c.transport != "" {
		return c.transport, nil
	}
	req := connect.NewRequest(&aiserverv1.GetServerConfigRequest{})
	c.callHeaders(lease, uuid(), false)(req.Header())
	resp, err := c.config.GetServerConfig(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		// Without the server's word, the SDK's default: HTTP/1.1.
		c.log.Warn("native: GetServerConfig failed; using RunSSE over HTTP/1.1 until it answers", "error", err)
		return TransportSSE, nil
	}
	switch resp.Msg.GetHttp2Config() {
	case aiserverv1.Http2Config_HTTP2_CONFIG_FORCE_ALL_ENABLED, aiserverv1.Http2Config_HTTP2_CONFIG_FORCE_BIDI_ENABLED:
		c.transport = TransportHTTP2
	default:
		c.transport = TransportSSE
	}
	c.log.Info("native: transport from the server's config", "transport", c.transport, "http2_config", resp.Msg.GetHttp2Config().String())
	return c.transport, nil
}
