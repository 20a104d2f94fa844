// Package services wires the gateway's parts from its configuration: the
// model catalog, the back door (the web chat with its transport, cookie
// jar and x-is-human provider, or the Cursor Agent CLI), and the core chat
// service on top of it. It is the only package that reads config;
// everything it builds takes plain values.
package services

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"

	"cursor2api/config"
	"cursor2api/models"
	"cursor2api/services/agentcli"
	"cursor2api/services/chat"
	"cursor2api/services/human"
	"cursor2api/services/upstream"
	"cursor2api/services/webchat"
)

// Gateway is the wired gateway, ready for the front doors.
type Gateway struct {
	Catalog *models.Catalog
	// Aliases map other model names (Claude Code's dated ids) to
	// published ones.
	Aliases models.Aliases
	Chat    *chat.Service
	// Web is the web-chat back door, for the model watch (and for tests,
	// which replace its x-is-human provider). Nil on the agent backend.
	Web *webchat.Client
	// Agent is the Cursor Agent CLI back door; nil on the web backend.
	Agent *agentcli.CLI
	// Ready checks that the back door can answer, without a model call;
	// nil when the backend has no such check.
	Ready func(context.Context) error
	// Background runs what the backend keeps up to date (the agent
	// backend's model list) until ctx ends; nil when there is nothing.
	Background func(ctx context.Context)
}

// FromConfig builds the gateway the configuration describes.
func FromConfig(cfg *config.Config, logger *slog.Logger) (*Gateway, error) {
	aliases, err := models.ParseAliases(cfg.ModelAliases)
	if err != nil {
		return nil, fmt.Errorf("configuration: MODEL_ALIASES: %w", err)
	}
	gw, err := backdoor(cfg, logger)
	if err != nil {
		return nil, err
	}
	gw.Aliases = aliases
	return gw, nil
}

// backdoor builds the gateway on the configured back door.
func backdoor(cfg *config.Config, logger *slog.Logger) (*Gateway, error) {
	if cfg.Backend == "agent" {
		return agentGateway(cfg, logger)
	}
	return webGateway(cfg, logger)
}

// webGateway builds the gateway on Cursor's web chat.
func webGateway(cfg *config.Config, logger *slog.Logger) (*Gateway, error) {
	catalog, err := models.NewCatalog(cfg.Models, cfg.ModelMap)
	if err != nil {
		return nil, fmt.Errorf("configuration: MODELS: %w", err)
	}
	var proxy *url.URL
	if cfg.ProxyURL != "" {
		if proxy, err = url.Parse(cfg.ProxyURL); err != nil {
			return nil, fmt.Errorf("PROXY_URL: %w", err)
		}
	}
	transport, err := webchat.NewTransport(cfg.Fingerprint, proxy, nil)
	if err != nil {
		return nil, err
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, fmt.Errorf("cookie jar: %w", err)
	}
	httpClient := &http.Client{Transport: transport, Jar: jar}
	browser := human.DefaultBrowser
	browser.UserAgent = cfg.UserAgent
	web := &webchat.Client{
		HTTP:        httpClient,
		URL:         cfg.CursorAPIURL,
		UserAgent:   cfg.UserAgent,
		IdleTimeout: cfg.Timeout.Duration(),
		MaxDuration: cfg.MaxDuration.Duration(),
		Cookie:      cfg.Cookie,
		Human: human.NewProvider(human.Options{
			Mode:      human.Mode{Kind: cfg.XIsHuman.Kind, Static: cfg.XIsHuman.Static},
			ScriptURL: cfg.ScriptURL, Browser: browser, TTL: cfg.XIsHumanTTL.Duration(),
			Fetch: human.HTTPFetcher(httpClient, webchat.BrowserHeaders(cfg.UserAgent)), Logger: logger,
		}),
		Logger: logger,
	}
	core, err := newCore(cfg, catalog, web, logger)
	if err != nil {
		return nil, err
	}
	return &Gateway{Catalog: catalog, Chat: core, Web: web}, nil
}

// newCore builds the core on a back door.
func newCore(cfg *config.Config, catalog *models.Catalog, up upstream.Upstream, logger *slog.Logger) (*chat.Service, error) {
	refusals, err := chat.CompileRefusals(cfg.RefusalPatterns)
	if err != nil {
		return nil, err
	}
	return chat.New(chat.Settings{
		Catalog:           catalog,
		MaxInputLength:    cfg.MaxInputLength,
		MaxToolCallBytes:  cfg.MaxToolCallBytes,
		Strict:            map[string]chat.StrictMode{"auto": chat.StrictAuto, "true": chat.StrictOn, "false": chat.StrictOff}[cfg.KiloToolStrict],
		StrictAgents:      cfg.StrictAgents,
		TurnEndingTools:   cfg.TurnEndingTools,
		StreamArgsAfter:   cfg.StreamArgsAfter,
		ToolLoopMaxRepeat: cfg.ToolLoopMax,
		ExposeThinking:    cfg.ExposeThinking,
		Refusals:          refusals,
	}, up, logger), nil
}

// agentGateway builds the gateway on the Cursor Agent CLI. Its models are
// what `agent models` lists (restricted to MODELS when MODELS is set),
// learned at start within TIMEOUT and refreshed every AGENT_MODELS_TTL.
// When the CLI cannot list them at start (not installed, not logged in)
// the gateway still starts, publishing MODELS when set and else "auto",
// and the refresh fixes the list once the CLI works.
func agentGateway(cfg *config.Config, logger *slog.Logger) (*Gateway, error) {
	cli := agentcli.New(agentcli.Options{
		Bin:          cfg.AgentBin,
		Env:          cfg.AgentEnv,
		MaxProcs:     cfg.AgentMaxProcs,
		QueueTimeout: cfg.AgentQueueTimeout.Duration(),
		IdleTimeout:  cfg.Timeout.Duration(),
		WorkDir:      cfg.AgentWorkDir,
		ModelsTTL:    cfg.AgentModelsTTL.Duration(),
		Logger:       logger,
	})
	var allowed []string
	if cfg.ModelsSet {
		allowed = cfg.Models
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout.Duration())
	catalog, err := cli.Catalog(ctx, allowed)
	cancel()
	if err != nil {
		fallback := []string{"auto"}
		if cfg.ModelsSet {
			fallback = cfg.Models
		}
		logger.Warn("agent: could not learn the CLI's models; publishing a fallback until the next refresh",
			"error", err, "models", fallback)
		if catalog, err = models.NewUpstreamCatalog(fallback); err != nil {
			return nil, fmt.Errorf("configuration: MODELS: %w", err)
		}
	}
	core, err := newCore(cfg, catalog, cli, logger)
	if err != nil {
		return nil, err
	}
	return &Gateway{
		Catalog: catalog, Chat: core, Agent: cli,
		Ready: func(ctx context.Context) error { _, err := cli.Ready(ctx); return err },
		Background: func(ctx context.Context) {
			cli.WatchModels(ctx, catalog, allowed, cfg.AgentModelsTTL.Duration())
		},
	}, nil
}
