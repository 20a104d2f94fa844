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
	"time"

	"cursor2api/config"
	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/services/human"
	"cursor2api/services/webchat"
)

// Gateway is the wired gateway, ready for the front doors.
type Gateway struct {
	Catalog *models.Catalog
	Chat    *chat.Service
	// Web is the web-chat back door, for the model watch (and for tests,
	// which replace its x-is-human provider).
	Web *webchat.Client
	// Human is the x-is-human provider, for health reports and the xih
	// command.
	Human *human.Provider
}

// FromConfig builds the gateway the configuration describes.
func FromConfig(cfg *config.Config, logger *slog.Logger) (*Gateway, error) {
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
	scriptHeaders := webchat.BrowserHeaders(browser.UserAgent)
	for k, v := range profile {
		scriptHeaders[k] = v
	}
	provider := human.NewProvider(human.Options{
		Mode:      human.Mode{Kind: cfg.XIsHuman.Kind, Static: cfg.XIsHuman.Static},
		ScriptURL: cfg.ScriptURL, PageURL: cfg.ScriptPageURL, Browser: browser, TTL: cfg.XIsHumanTTL.Duration(),
		Fetch:     human.HTTPFetcher(httpClient, scriptHeaders),
		FetchPage: human.PageFetcher(httpClient, scriptHeaders),
		Logger:    logger,
	})
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
	}, web, logger)
	return &Gateway{Catalog: catalog, Chat: core, Web: web, Human: provider}, nil
}
