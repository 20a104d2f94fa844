// Package services wires the gateway's parts from its configuration: the
// model catalog, the web-chat back door with its transport, cookie jar and
// x-is-human provider, and the core chat service on top of it. It is the
// only package that reads config; everything it builds takes plain values.
package services

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"time"

	"cursor2api/config"
	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/services/human"
	"cursor2api/services/metrics"
	"cursor2api/services/readiness"
	"cursor2api/services/webchat"
)

// Gateway is the wired gateway, ready for the front doors.
type Gateway struct {
	Catalog *models.Catalog
	Chat    *chat.Service
	// Web is the web-chat back door, for the model watch (and for tests,
	// which replace its x-is-human provider).
	Web *webchat.Client
	// Metrics are the gateway's Prometheus metrics, on their own registry.
	Metrics *metrics.Metrics
	// Readiness answers /ready.
	Readiness *readiness.Tracker
	// Egress is the pool of PROXY_URL's proxies; nil without proxies.
	Egress *webchat.EgressPool
}

// FromConfig builds the gateway the configuration describes.
func FromConfig(cfg *config.Config, logger *slog.Logger) (*Gateway, error) {
	catalog, err := models.NewCatalog(cfg.Models, cfg.ModelMap)
	if err != nil {
		return nil, fmt.Errorf("configuration: MODELS: %w", err)
	}
	m := metrics.New()
	ready := &readiness.Tracker{}
	var pool *webchat.EgressPool
	var proxyFunc func(*http.Request) (*url.URL, error)
	if proxies := cfg.ProxyURLs(); len(proxies) > 0 {
		urls := make([]*url.URL, len(proxies))
		for i, p := range proxies {
			if urls[i], err = url.Parse(p); err != nil {
				return nil, fmt.Errorf("PROXY_URL: %w", err)
			}
		}
		pool = webchat.NewEgressPool(urls, cfg.ProxyCooldown.Duration(), logger)
		pool.OnFailure = m.EgressFailure
		for _, u := range urls {
			label := webchat.ProxyLabel(u)
			m.EgressProxy(label, func() bool { return pool.Available(label) })
		}
		ready.Egress = func() []readiness.Proxy { return egressReport(pool.State()) }
		proxyFunc = pool.Proxy
	}
	transport, err := webchat.NewTransportFunc(cfg.Fingerprint, proxyFunc, nil)
	if err != nil {
		return nil, err
	}
	if pool != nil {
		transport = pool.Transport(transport)
	}
	transport = m.Transport(transport)
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, fmt.Errorf("cookie jar: %w", err)
	}
	httpClient := &http.Client{Transport: transport, Jar: jar}
	browser := human.DefaultBrowser
	browser.UserAgent = cfg.UserAgent
	fetch := human.HTTPFetcher(httpClient, webchat.BrowserHeaders(cfg.UserAgent))
	countedFetch := func(ctx context.Context, url string) (string, error) {
		body, err := fetch(ctx, url)
		if err != nil && ctx.Err() == nil {
			m.HumanFailure()
		}
		return body, err
	}
	provider := human.NewProvider(human.Options{
		Mode:      human.Mode{Kind: cfg.XIsHuman.Kind, Static: cfg.XIsHuman.Static},
		ScriptURL: cfg.ScriptURL, Browser: browser, TTL: cfg.XIsHumanTTL.Duration(),
		Fetch: countedFetch, Logger: logger,
	})
	failing := func() bool { return time.Now().Before(provider.FailingUntil()) }
	m.HumanEvaluations(provider.Evaluations, failing)
	ready.Human = func() readiness.Human {
		return readiness.Human{Mode: cfg.XIsHuman.Kind, Evaluations: provider.Evaluations(), Failing: failing()}
	}
	web := &webchat.Client{
		HTTP:        httpClient,
		URL:         cfg.CursorAPIURL,
		UserAgent:   cfg.UserAgent,
		IdleTimeout: cfg.Timeout.Duration(),
		MaxDuration: cfg.MaxDuration.Duration(),
		Cookie:      cfg.Cookie,
		Human:       provider,
		Logger:      logger,
	}
	refusals, err := chat.CompileRefusals(cfg.RefusalPatterns)
	if err != nil {
		return nil, err
	}
	core := chat.New(chat.Settings{
		Catalog:           catalog,
		MaxInputLength:    cfg.MaxInputLength,
		MaxToolCallBytes:  cfg.MaxToolCallBytes,
		KiloToolStrict:    cfg.KiloToolStrict,
		ToolLoopMaxRepeat: cfg.ToolLoopMax,
		ExposeThinking:    cfg.ExposeThinking,
		Refusals:          refusals,
		Observer:          m,
	}, ready.Upstream(m.Upstream(web)), logger)
	return &Gateway{Catalog: catalog, Chat: core, Web: web, Metrics: m, Readiness: ready, Egress: pool}, nil
}

// egressReport is the pool's state as /ready shows it.
func egressReport(states []webchat.EgressState) []readiness.Proxy {
	out := make([]readiness.Proxy, len(states))
	for i, s := range states {
		out[i] = readiness.Proxy{Proxy: s.Label, Active: s.Active, Available: s.Available, LastError: s.LastError}
		if s.CoolingFor > 0 {
			out[i].CoolingFor = s.CoolingFor.Round(time.Second).String()
		}
	}
	return out
}
