package services

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"

	"cursor2api/config"
	"cursor2api/services/human"
)

// FromConfig builds the upstream client and the chat service that the
// configuration describes: the transport with its fingerprint and proxy,
// a cookie jar, the x-is-human provider, and the chat settings.
func FromConfig(cfg *config.Config, logger *slog.Logger) (*CursorClient, *ChatService, error) {
	var proxy *url.URL
	if cfg.ProxyURL != "" {
		var err error
		if proxy, err = url.Parse(cfg.ProxyURL); err != nil {
			return nil, nil, fmt.Errorf("PROXY_URL: %w", err)
		}
	}
	transport, err := NewTransport(cfg.Fingerprint, proxy, nil)
	if err != nil {
		return nil, nil, err
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("cookie jar: %w", err)
	}
	httpClient := &http.Client{Transport: transport, Jar: jar}
	mode, err := human.ParseMode(cfg.XIsHumanMode)
	if err != nil {
		return nil, nil, fmt.Errorf("X_IS_HUMAN_MODE=%w", err)
	}
	browser := human.DefaultBrowser
	browser.UserAgent = cfg.UserAgent
	client := &CursorClient{
		HTTP:        httpClient,
		URL:         cfg.CursorAPIURL,
		UserAgent:   cfg.UserAgent,
		IdleTimeout: cfg.Timeout.Duration(),
		MaxDuration: cfg.MaxDuration.Duration(),
		Cookie:      cfg.Cookie,
		Human: human.NewProvider(human.Options{
			Mode: mode, ScriptURL: cfg.ScriptURL, Browser: browser, TTL: cfg.XIsHumanTTL.Duration(),
			Fetch: human.HTTPFetcher(httpClient, BrowserHeaders(cfg.UserAgent)), Logger: logger,
		}),
		Logger: logger,
	}
	refusals, err := CompileRefusals(cfg.RefusalPatterns)
	if err != nil {
		return nil, nil, err
	}
	chat := NewChatService(ChatSettings{
		Catalog:           cfg.Catalog,
		MaxInputLength:    cfg.MaxInputLength,
		MaxToolCallBytes:  cfg.MaxToolCallBytes,
		KiloToolStrict:    cfg.KiloToolStrict,
		ToolLoopMaxRepeat: cfg.ToolLoopMax,
		ExposeThinking:    cfg.ExposeThinking,
		Refusals:          refusals,
	}, client, logger)
	return client, chat, nil
}
