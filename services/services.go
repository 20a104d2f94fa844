// Package services wires the gateway's parts from its configuration: the
// model catalog, the web-chat back door with its transport, cookie jar and
// x-is-human provider, and the core chat service on top of it. It is the
// only package that reads config; everything it builds takes plain values.
package services

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"

	"cursor2api/config"
	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/services/human"
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
	// which replace its x-is-human provider).
	Web *webchat.Client
}

// FromConfig builds the gateway the configuration describes.
func FromConfig(cfg *config.Config, logger *slog.Logger) (*Gateway, error) {
	catalog, err := models.NewCatalog(cfg.Models, cfg.ModelMap)
	if err != nil {
		return nil, fmt.Errorf("configuration: MODELS: %w", err)
	}
	aliases, err := models.ParseAliases(cfg.ModelAliases)
	if err != nil {
		return nil, fmt.Errorf("configuration: MODEL_ALIASES: %w", err)
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
	refusals, err := chat.CompileRefusals(cfg.RefusalPatterns)
	if err != nil {
		return nil, err
	}
	core := chat.New(chat.Settings{
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
	}, web, logger)
	return &Gateway{Catalog: catalog, Aliases: aliases, Chat: core, Web: web}, nil
}
