// Package services wires the gateway's parts from its configuration: the
// model catalog and aliases, the back door (the web chat with its
// transport, egress pool, cookie jar and x-is-human provider, the Cursor
// Agent CLI, or Cursor's native agent API with its key pool), the MCP
// servers, Cloud Agents, the metrics and readiness that watch them, and
// the core chat service on top; or, for the commands that check it, the
// web chat alone (NewWebChat). It is the one package that turns config
// into parts; everything it builds takes plain values.
package services

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"cursor2api/config"
	"cursor2api/models"
	"cursor2api/services/agentcli"
	"cursor2api/services/chat"
	"cursor2api/services/cloud"
	"cursor2api/services/egress"
	"cursor2api/services/human"
	"cursor2api/services/mcp"
	"cursor2api/services/metrics"
	"cursor2api/services/native"
	"cursor2api/services/native/keys"
	"cursor2api/services/readiness"
	"cursor2api/services/state"
	"cursor2api/services/upstream"
	"cursor2api/services/vercel"
	"cursor2api/services/webchat"
	"cursor2api/utils"
)

// Gateway is the wired gateway, ready for the front doors.
type Gateway struct {
	Catalog *models.Catalog
	// Aliases map other model names (Claude Code's dated ids) to
	// published ones.
	Aliases models.Aliases
	Chat    *chat.Service
	// The back door BACKEND picks, one of the three, for services alone:
	// what runs the gateway goes through Start, Close and Shutdown, and
	// the commands on the web chat build theirs with NewWebChat.
	web    *webchat.Client
	agent  *agentcli.CLI
	native *native.Client
	// background runs what the backend keeps up to date (its model list)
	// until ctx ends; nil when there is nothing. Start runs it.
	background func(ctx context.Context)
	// Metrics are the gateway's Prometheus metrics, on their own registry.
	Metrics *metrics.Metrics
	// Readiness answers /ready.
	Readiness *readiness.Tracker
	// Egress is the pool of PROXY_URL's proxies; nil without proxies.
	Egress *egress.Pool
	// Cloud serves Cursor Cloud Agents (CLOUD_AGENTS=on); nil when off.
	Cloud *cloud.Service
	// Human is the x-is-human provider, for health reports and the xih
	// command.
	Human *human.Provider
	// MCP is the bridge to MCP_SERVERS; nil without them.
	MCP *mcp.Bridge
	// Drift lists what the upstreams sent that this version does not
	// know and passed over (unknown frames, fields, statuses), for doctor.
	Drift *utils.Drift
}

// cloudService is the Cloud Agents service CLOUD_AGENTS=on asks for, on
// CURSOR_API_KEY's first key. Its response ids are signed with
// CLOUD_ID_SECRET, or else with a key derived from API_KEY and
// CURSOR_API_KEY, so that every replica of one deployment reads them.
func cloudService(cfg *config.Config, pool *egress.Pool, drift *utils.Drift, logger *slog.Logger) *cloud.Service {
	secret := cfg.CloudIDSecret
	if secret == "" {
		secret = strings.Join(cfg.APIKeys, ",") + "\x00" + cfg.CursorAPIKey
	}
	// No total timeout: a run's stream lasts minutes; every call is
	// bounded by its request's context and CLOUD_MAX_WAIT.
	client := cloud.NewClient(cfg.CloudAPIURL, cfg.CursorAPIKeys()[0], &http.Client{Transport: throughPool(pool, apiTransport(pool))})
	client.Drift = drift
	return cloud.New(cloud.Config{IDSecret: secret, MaxWait: cfg.CloudMaxWait.Duration(), PollInterval: cfg.CloudPollInterval.Duration(),
		ModelsTTL: cfg.CursorModelsTTL.Duration(), WebhookSecret: cfg.CloudWebhookSecret, Logger: logger}, client)
}

// FromConfig builds the gateway the configuration describes, with what
// outlives a request kept in this process only (see FromConfigState).
func FromConfig(cfg *config.Config, logger *slog.Logger, opts ...Option) (*Gateway, error) {
	return FromConfigState(cfg, logger, nil, opts...)
}

// FromConfigState builds the gateway the configuration describes, on the
// gateway's state store (nil: none): the native back door's key rests
// are kept there, shared by the replicas and kept over a restart.
func FromConfigState(cfg *config.Config, logger *slog.Logger, q *state.Queue, opts ...Option) (*Gateway, error) {
	aliases, err := models.ParseAliases(cfg.ModelAliases)
	if err != nil {
		return nil, fmt.Errorf("configuration: MODEL_ALIASES: %w", err)
	}
	m := metrics.New()
	ready := &readiness.Tracker{}
	var pool *egress.Pool
	if cfg.Backend != "agent" || cfg.CloudOn() {
		// The Agent CLI gets none of the gateway's settings: without Cloud
		// Agents, nothing would leave through the pool.
		if pool, err = egressPool(cfg, m, ready, logger); err != nil {
			return nil, err
		}
	}
	// One notice of format drift per component and kind, for the log and
	// doctor, whichever upstream it comes from.
	drift := utils.NewDrift(logger)
	var gw *Gateway
	switch cfg.Backend {
	case "agent":
		gw, err = agentGateway(cfg, m, ready, drift, logger)
	case "cursor":
		gw, err = cursorGateway(cfg, pool, m, ready, q, drift, logger)
		if err == nil && !cfg.AliasesSet {
			// Cursor's own spellings of the families clients send come
			// first; the defaults stay behind them.
			aliases = append(native.DefaultAliases(gw.Catalog.Names()), aliases...)
		}
	default:
		gw, err = webGateway(cfg, pool, m, ready, drift, logger)
	}
	if err != nil {
		return nil, err
	}
	gw.Aliases, gw.Metrics, gw.Readiness, gw.Egress, gw.Drift = aliases, m, ready, pool, drift
	if cfg.CloudOn() {
		gw.Cloud = cloudService(cfg, pool, drift, logger)
	}
	if err := withMCP(cfg, gw, m, ready, logger); err != nil {
		return nil, err
	}
	if gw.web != nil {
		var o options
		for _, opt := range opts {
			opt(&o)
		}
		o.apply(gw.web)
	}
	return gw, nil
}

// egressPool is the pool of PROXY_URL's proxies, counted in the metrics
// and shown by /ready; nil without proxies.
func egressPool(cfg *config.Config, m *metrics.Metrics, ready *readiness.Tracker, logger *slog.Logger) (*egress.Pool, error) {
	proxies := cfg.ProxyURLs()
	if len(proxies) == 0 {
		return nil, nil
	}
	urls := make([]*url.URL, len(proxies))
	for i, p := range proxies {
		var err error
		if urls[i], err = url.Parse(p); err != nil {
			return nil, fmt.Errorf("PROXY_URL: %w", err)
		}
	}
	pool := egress.NewPool(urls, cfg.ProxyCooldown.Duration(), logger)
	pool.OnFailure = m.EgressFailure
	labels := make([]string, len(urls))
	for i, u := range urls {
		labels[i] = egress.Label(u)
	}
	ready.Egress = func() []readiness.Proxy { return egressReport(pool.State()) }
	m.Egress(labels, ready.Egress)
	return pool, nil
}

// apiTransport is a transport for Cursor's APIs (the native agent API,
// Cloud Agents), with Go's defaults: through pool's proxies, or direct
// without a pool.
func apiTransport(pool *egress.Pool) *http.Transport {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if pool != nil {
		base.Proxy = pool.Proxy
	}
	return base
}

// throughPool has the pool pick the proxy of every request next sends,
// and hear how it went; next itself without a pool. For Cursor's APIs,
// an answer of theirs is never the proxy's failure: a 429 there is a
// key's quota, which another proxy does not lift.
func throughPool(pool *egress.Pool, next http.RoundTripper) http.RoundTripper {
	if pool == nil {
		return next
	}
	return pool.Transport(next, apiAnswer)
}

// apiAnswer reports whether resp is an answer of Cursor's APIs, which
// speak Connect (application/proto, application/connect+proto) and JSON,
// rather than a forward proxy's own page (407, 403 or 429 in text/html or
// text/plain). Only an http:// upstream lets the proxy answer at all;
// through an https:// one its refusals are errors of the tunnel.
func apiAnswer(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "application/")
}

// webGateway builds the gateway on Cursor's web chat.
func webGateway(cfg *config.Config, pool *egress.Pool, m *metrics.Metrics, ready *readiness.Tracker, drift *utils.Drift, logger *slog.Logger) (*Gateway, error) {
	w, err := webChat(cfg, pool, m, ready, drift, logger)
	if err != nil {
		return nil, err
	}
	catalog, up, background, err := webModels(cfg, w.Client, ready, logger)
	if err != nil {
		return nil, err
	}
	core, err := newCore(cfg, catalog, ready.Upstream(m.Upstream(up)), m, logger)
	if err != nil {
		return nil, err
	}
	return &Gateway{Catalog: catalog, Chat: core, web: w.Client, Human: w.Human, background: background}, nil
}

// WebChat is Cursor's web chat alone, wired as the gateway wires it, for
// the commands that check it (doctor, xih): none of the gateway around it
// (core, MCP, Cloud Agents, the other back doors) is built, and nothing
// runs in the background.
type WebChat struct {
	// Client is the back door: its transport (TLS fingerprint, PROXY_URL's
	// pool), cookie jar, browser profile and checkpoint keeper.
	Client *webchat.Client
	// Human is its x-is-human provider.
	Human *human.Provider
	// Catalog is what the gateway publishes at start: MODELS, or under
	// MODELS=auto the fallback (the list is learned by Start, not here).
	Catalog *models.Catalog
	// Drift lists what the upstream sent that this version does not know.
	Drift *utils.Drift
}

// NewWebChat builds the web chat cfg describes, whatever BACKEND says. The
// chat goes out through PROXY_URL's proxies as the gateway's would. It
// serves no /metrics nor /ready: what its parts count and report goes to
// a registry and a tracker of its own that nobody reads.
func NewWebChat(cfg *config.Config, logger *slog.Logger) (*WebChat, error) {
	m, ready := metrics.New(), &readiness.Tracker{}
	pool, err := egressPool(cfg, m, ready, logger)
	if err != nil {
		return nil, err
	}
	w, err := webChat(cfg, pool, m, ready, utils.NewDrift(logger), logger)
	if err != nil {
		return nil, err
	}
	// The background refresh MODELS=auto or MODEL_CHECK_INTERVAL asks for
	// is the gateway's; the commands ask the upstream themselves.
	if w.Catalog, _, _, err = webModels(cfg, w.Client, ready, logger); err != nil {
		return nil, err
	}
	return w, nil
}

// webChat wires the web chat on pool: its transport (counted as upstream
// attempts in m), cookie jar, browser profile, x-is-human provider and
// checkpoint keeper, reported to m and ready. The catalog is the
// caller's (webModels).
func webChat(cfg *config.Config, pool *egress.Pool, m *metrics.Metrics, ready *readiness.Tracker, drift *utils.Drift, logger *slog.Logger) (*WebChat, error) {
	var proxyFunc func(*http.Request) (*url.URL, error)
	if pool != nil {
		proxyFunc = pool.Proxy
	}
	transport, err := webchat.NewTransportFunc(cfg.Fingerprint, proxyFunc, nil)
	if err != nil {
		return nil, err
	}
	if pool != nil {
		var exempt func(*http.Response) bool
		if cfg.Checkpoint != "off" {
			// A checkpoint is passed through the proxy it met, not a
			// reason to leave it.
			exempt = vercel.IsChallenge
		}
		transport = pool.Transport(transport, exempt)
	}
	// The checkpoint's requests go out like the chat's (fingerprint,
	// egress) but are not upstream attempts for the metrics.
	checkpointTransport := transport
	transport = m.Transport(transport)
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, fmt.Errorf("cookie jar: %w", err)
	}
	httpClient := &http.Client{Transport: transport, Jar: jar}
	browser, err := human.ProfileByName(cfg.BrowserProfile)
	if err != nil {
		return nil, fmt.Errorf("configuration: BROWSER_PROFILE: %w", err)
	}
	if cfg.UserAgent != "" && cfg.UserAgent != browser.UserAgent {
		// An explicit USER_AGENT wins; the profile's other values stay.
		browser.UserAgent = cfg.UserAgent
		logger.Warn("USER_AGENT overrides the browser profile's; keep it consistent with BROWSER_PROFILE", "profile", browser.Name)
	}
	if ok, err := browser.ZoneAgrees(time.Now()); err == nil && !ok && cfg.XIsHuman.Kind == "script" {
		logger.Warn("the host's time zone differs from the browser profile's: scripts comparing Date with Intl see the difference; run with TZ set to the profile's zone",
			"profile", browser.Name, "profile_time_zone", browser.TimeZone)
	}
	profile := browser.Headers()
	scriptHeaders := webchat.ProfileHeaders(browser.UserAgent, profile)
	fetch := human.HTTPFetcher(httpClient, scriptHeaders)
	countedFetch := func(ctx context.Context, url string) (string, error) {
		body, err := fetch(ctx, url)
		if err != nil && ctx.Err() == nil {
			m.HumanFailure()
		}
		return body, err
	}
	provider := human.NewProvider(human.Options{
		Mode:      human.Mode{Kind: cfg.XIsHuman.Kind, Static: cfg.XIsHuman.Static},
		ScriptURL: cfg.ScriptURL, PageURL: cfg.ScriptPageURL, Browser: browser, TTL: cfg.XIsHumanTTL.Duration(),
		Fetch:     countedFetch,
		FetchPage: human.PageFetcher(httpClient, scriptHeaders),
		// The upstream stopped checking the value: without one the header
		// goes out empty, as other clients send it.
		EmptyFallback: true,
		Logger:        logger,
	})
	ready.Human = func() readiness.Human {
		return readiness.Human{Mode: cfg.XIsHuman.Kind, Evaluations: provider.Evaluations(), Failing: time.Now().Before(provider.FailingUntil())}
	}
	m.Human(ready.Human)
	if cfg.XIsHuman.Kind == "script" {
		why := "SCRIPT_URL"
		switch {
		case cfg.ScriptURL == human.AutoScriptURL:
			why = "SCRIPT_URL=auto: taken from the page's <script src>"
		case cfg.ScriptURL == human.DefaultScriptURL:
			why = "the default (the public reference gateways' URL); set SCRIPT_URL when it changes"
		}
		logger.Info("x-is-human challenge script", "script_url", cfg.ScriptURL, "why", why, "page", cfg.ScriptPageURL, "profile", browser.Name)
	}
	keeper := newCheckpoint(cfg, checkpointTransport, scriptHeaders, pool, m, ready, drift, logger)
	web := &webchat.Client{
		HTTP:        httpClient,
		URL:         cfg.CursorAPIURL,
		UserAgent:   browser.UserAgent,
		IdleTimeout: cfg.Timeout.Duration(),
		MaxDuration: cfg.MaxDuration.Duration(),
		Cookie:      cfg.Cookie,
		Profile:     profile,
		Human:       provider,
		Logger:      logger,
		Checkpoint:  keeper,
		Egress:      pool,
		Drift:       drift,
	}
	web.MaxContinuations = cfg.MaxContinuations
	return &WebChat{Client: web, Human: provider, Drift: drift}, nil
}

// Pauses of the model list's refresh under MODELS=auto: between checks
// when MODEL_CHECK_INTERVAL is 0, and after a failed check.
const (
	defaultModelCheck = 10 * time.Minute
	modelRetry        = 30 * time.Second
)

// webModels builds the web chat's catalog. MODELS=auto publishes what the
// upstream accepts: a fallback at once (start-up never waits for the
// upstream), then the list learned in the background, refreshed every
// MODEL_CHECK_INTERVAL (default 10 minutes) and whenever a request finds
// it changed. Explicit MODELS are published as configured, and checked
// against the upstream every MODEL_CHECK_INTERVAL when it is set.
func webModels(cfg *config.Config, web *webchat.Client, ready *readiness.Tracker, logger *slog.Logger) (*models.Catalog, upstream.Upstream, func(context.Context), error) {
	if !cfg.ModelsAuto() {
		catalog, err := models.NewCatalog(cfg.Models, cfg.ModelMap)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("configuration: MODELS: %w", err)
		}
		ready.Models = func() readiness.Models { return readiness.Models{Source: "configured", Served: catalog.Names()} }
		var watch func(context.Context)
		if interval := cfg.ModelCheck.Duration(); interval > 0 {
			watch = func(ctx context.Context) { webchat.WatchModels(ctx, web, catalog, interval, logger) }
		}
		return catalog, web, watch, nil
	}
	interval := cfg.ModelCheck.Duration()
	if interval <= 0 {
		interval = defaultModelCheck
	}
	learned, err := webchat.NewLearnedModels(web, interval, modelRetry, cfg.Timeout.Duration(), logger)
	if err != nil {
		return nil, nil, nil, err
	}
	ready.Models = func() readiness.Models {
		st := learned.State()
		r := readiness.Models{Source: st.Source, Served: learned.Catalog.Names(), Upstream: st.Allowed, LastError: st.LastError}
		if !st.LearnedAt.IsZero() {
			r.LearnedAge = time.Since(st.LearnedAt).Round(time.Second).String()
		}
		return r
	}
	return learned.Catalog, learned.Guard(web), learned.Run, nil
}

// agentGateway builds the gateway on the Cursor Agent CLI. Its models are
// what `agent models` lists (restricted to MODELS when MODELS is set),
// learned at start within TIMEOUT and refreshed every AGENT_MODELS_TTL.
// When the CLI cannot list them at start (not installed, not logged in)
// the gateway still starts, publishing MODELS when set and else "auto",
// and the refresh fixes the list once the CLI works.
func agentGateway(cfg *config.Config, m *metrics.Metrics, ready *readiness.Tracker, drift *utils.Drift, logger *slog.Logger) (*Gateway, error) {
	cli := agentcli.New(agentcli.Options{
		Bin:          cfg.AgentBin,
		Env:          cfg.AgentEnv,
		MaxProcs:     cfg.AgentMaxProcs,
		QueueTimeout: cfg.AgentQueueTimeout.Duration(),
		IdleTimeout:  cfg.Timeout.Duration(),
		WorkDir:      cfg.AgentWorkDir,
		ModelsTTL:    cfg.AgentModelsTTL.Duration(),
		Logger:       logger,
		Drift:        drift,
	})
	catalog, allowed, err := startCatalog(cfg, cli.Catalog, models.NewUpstreamCatalog, "agent: could not learn the CLI's models; publishing a fallback until the next refresh", logger)
	if err != nil {
		return nil, err
	}
	ready.Check = func(ctx context.Context) error { _, err := cli.Ready(ctx); return err }
	ready.Models = func() readiness.Models { return readiness.Models{Source: "agent", Served: catalog.Names()} }
	core, err := newCore(cfg, catalog, ready.Upstream(m.Upstream(cli)), m, logger)
	if err != nil {
		return nil, err
	}
	return &Gateway{
		Catalog: catalog, Chat: core, agent: cli,
		background: func(ctx context.Context) {
			cli.WatchModels(ctx, catalog, allowed, cfg.AgentModelsTTL.Duration())
		},
	}, nil
}

// startCatalog learns a back door's models (restricted to MODELS when
// set, which it returns as allowed) within TIMEOUT. When it cannot, the
// gateway still starts: it publishes MODELS when set, else "auto", built
// by fallback, and warns with why until the refresh fixes the list.
func startCatalog(cfg *config.Config, learn func(ctx context.Context, allowed []string) (*models.Catalog, error),
	fallback func(ids []string) (*models.Catalog, error), why string, logger *slog.Logger) (catalog *models.Catalog, allowed []string, err error) {
	if cfg.ModelsSet {
		allowed = cfg.Models
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout.Duration())
	catalog, err = learn(ctx, allowed)
	cancel()
	if err == nil {
		return catalog, allowed, nil
	}
	ids := []string{"auto"}
	if cfg.ModelsSet {
		ids = cfg.Models
	}
	logger.Warn(why, "error", err, "models", ids)
	if catalog, err = fallback(ids); err != nil {
		return nil, nil, fmt.Errorf("configuration: MODELS: %w", err)
	}
	return catalog, allowed, nil
}

// cursorGateway builds the gateway on Cursor's native agent API. Its
// models are the account's, learned at start within TIMEOUT and refreshed
// every CURSOR_MODELS_TTL. A missing or refused key, an unreachable Cursor
// or a version gate never stops the gateway: it serves, /ready says what
// is wrong, and requests get the error.
func cursorGateway(cfg *config.Config, pool *egress.Pool, m *metrics.Metrics, ready *readiness.Tracker, q *state.Queue, drift *utils.Drift, logger *slog.Logger) (*Gateway, error) {
	connectURL, restURL := models.CursorConnectURL, models.CursorAPIURL
	if cfg.CursorBackendURL != "" {
		connectURL, restURL = cfg.CursorBackendURL, cfg.CursorBackendURL
	}
	base := apiTransport(pool)
	h2 := native.HTTP2Client(base)
	h2.Transport = throughPool(pool, h2.Transport)
	client := native.New(native.Options{
		APIKeys:    cfg.CursorAPIKeys(),
		State:      q,
		ConnectURL: connectURL, RESTURL: restURL,
		ClientVersion: cfg.CursorClientVersion, ClientType: cfg.CursorClientType,
		Transport:   cfg.CursorTransport,
		HTTP:        &http.Client{Transport: m.Transport(throughPool(pool, native.HTTPTransport(base)))},
		HTTP2:       h2,
		IdleTimeout: cfg.Timeout.Duration(),
		ParkMax:     cfg.CursorParkMax, ParkTTL: cfg.CursorParkTTL.Duration(), ParkBytes: cfg.CursorParkBytes,
		Logger: logger, Drift: drift,
	})
	named := func(ids []string) (*models.Catalog, error) {
		list := make([]models.NamedModel, len(ids))
		for i, id := range ids {
			list[i] = models.NamedModel{ID: id}
		}
		return models.NewNamedCatalog(list)
	}
	catalog, allowed, err := startCatalog(cfg, client.Catalog, named, "cursor: could not learn the account's models; publishing a fallback until the next refresh", logger)
	if err != nil {
		return nil, err
	}
	ready.Check = client.Ready
	ready.Keys = func() []readiness.Key { return keysReport(client.Keys()) }
	m.Keys(ready.Keys)
	core, err := newCore(cfg, catalog, ready.Upstream(m.Upstream(client)), m, logger)
	if err != nil {
		return nil, err
	}
	return &Gateway{
		Catalog: catalog, Chat: core, native: client,
		background: func(ctx context.Context) {
			client.WatchModels(ctx, catalog, allowed, cfg.CursorModelsTTL.Duration())
			client.Close()
		},
	}, nil
}

// keysReport is the native back door's keys for /ready and /metrics:
// fingerprints, states and clipped errors, never a key.
func keysReport(states []keys.KeyState) []readiness.Key {
	out := make([]readiness.Key, len(states))
	for i, s := range states {
		k := readiness.Key{
			Key: s.Name, State: string(s.State), Reason: s.Reason, Failures: s.Failures,
			Requests: s.Requests, Cooldowns: s.Cooldowns, LastError: utils.Clip(s.LastError, 300),
		}
		if s.State == keys.StateCooling {
			until := s.CoolingUntil
			k.CoolingUntil, k.CoolingFor = &until, time.Until(until).Round(time.Second).String()
		}
		if !s.LastErrorAt.IsZero() {
			at := s.LastErrorAt
			k.LastErrorAt = &at
		}
		out[i] = k
	}
	return out
}

// newCore builds the core on a back door.
func newCore(cfg *config.Config, catalog *models.Catalog, up upstream.Upstream, observer chat.Observer, logger *slog.Logger) (*chat.Service, error) {
	refusals, err := chat.CompileRefusals(cfg.RefusalPatterns)
	if err != nil {
		return nil, err
	}
	return chat.New(chat.Settings{
		Catalog:           catalog,
		MaxInputLength:    cfg.MaxInputLength,
		MaxToolCallBytes:  cfg.MaxToolCallBytes,
		MaxAnswerBytes:    cfg.MaxAnswerBytes,
		Strict:            map[string]chat.StrictMode{"auto": chat.StrictAuto, "true": chat.StrictOn, "false": chat.StrictOff}[cfg.KiloToolStrict],
		StrictAgents:      cfg.StrictAgents,
		TurnEndingTools:   cfg.TurnEndingTools,
		StreamArgsAfter:   cfg.StreamArgsAfter,
		ToolLoopMaxRepeat: cfg.ToolLoopMax,
		ExposeThinking:    cfg.ExposeThinking,
		Refusals:          refusals,
		Observer:          observer,
	}, up, logger), nil
}

// newCheckpoint builds the keeper of Vercel's checkpoint cookie (nil with
// CHECKPOINT=off), on the chat's transport and browser headers, without a
// cookie jar: the cookie is kept per egress, since it is bound to the IP
// (and User-Agent) that solved it.
func newCheckpoint(cfg *config.Config, transport http.RoundTripper, headers http.Header, pool *egress.Pool,
	m *metrics.Metrics, ready *readiness.Tracker, drift *utils.Drift, logger *slog.Logger) *vercel.Keeper {
	if cfg.Checkpoint == "off" {
		return nil
	}
	egresses := []string{vercel.Direct}
	if pool != nil {
		egresses = egresses[:0]
		for _, s := range pool.State() {
			egresses = append(egresses, s.Label)
		}
	}
	var keeper *vercel.Keeper
	report := func() readiness.Checkpoint { return checkpointReport(cfg.Checkpoint, keeper.State()) }
	onSolve := m.Checkpoint(egresses, report)
	keeper = vercel.New(vercel.Options{
		HTTP:     &http.Client{Transport: transport},
		Headers:  headers,
		PageURL:  cfg.CheckpointPageURL,
		SolveURL: cfg.CheckpointURL,
		Egresses: egresses,
		Logger:   logger,
		OnSolve:  onSolve,
		Drift:    drift,
	})
	ready.Checkpoint = report
	return keeper
}

// checkpointReport is the keeper's state as /ready and /metrics read it.
func checkpointReport(mode string, states []vercel.State) readiness.Checkpoint {
	r := readiness.Checkpoint{Mode: mode, Egress: make([]readiness.CheckpointEgress, len(states))}
	for i, s := range states {
		e := readiness.CheckpointEgress{Egress: s.Egress, HasCookie: s.HasCookie, Solves: s.Solves, Failures: s.Failures,
			LastError: s.LastError, NoCheckpoint: s.NoCheckpoint}
		if s.HasCookie {
			e.ExpiresIn = s.ExpiresIn.Round(time.Second).String()
		}
		if !s.LastSolve.IsZero() {
			at := s.LastSolve
			e.LastSolve, e.LastSolveTook = &at, s.LastSolveDuration.Round(time.Millisecond).String()
		}
		r.Egress[i] = e
	}
	return r
}

// egressReport is the pool's state as /ready and /metrics read it.
func egressReport(states []egress.State) []readiness.Proxy {
	out := make([]readiness.Proxy, len(states))
	for i, s := range states {
		out[i] = readiness.Proxy{Proxy: s.Label, Active: s.Active, Available: s.Available, LastError: s.LastError}
		if s.CoolingFor > 0 {
			out[i].CoolingFor = s.CoolingFor.Round(time.Second).String()
		}
	}
	return out
}
