package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"cursor2api/config"
	"cursor2api/services/state"
)

// NewLogger is the gateway's logger at LOG_LEVEL: LOG_FORMAT=json writes
// one JSON object per line (for log collectors), text writes key=value
// lines.
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	level, _ := cfg.SlogLevel() // config validated it
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// stateBanner says where the state is kept, without a password.
func stateBanner(cfg *config.Config) string {
	switch {
	case cfg.StateURL == "":
		dir := cfg.StateDir
		if dir == "" {
			dir, _ = state.DefaultDir()
		}
		return "file " + filepath.Join(dir, state.FileName)
	case strings.HasPrefix(cfg.StateURL, "memory"):
		return "memory (lost on restart, not shared between replicas)"
	default:
		return state.Redact(cfg.StateURL)
	}
}

// banner is the settings in force, for the start-up line: what an operator
// needs to see that the configuration took. Keys, cookies and proxy
// passwords are masked.
func banner(cfg *config.Config, models []string) []any {
	proxies := make([]string, 0, len(cfg.ProxyURLs()))
	for _, p := range cfg.ProxyURLs() {
		if u, err := url.Parse(p); err == nil {
			p = u.Redacted()
		}
		proxies = append(proxies, p)
	}
	keys := make([]string, len(cfg.APIKeys))
	for i, k := range cfg.APIKeys {
		keys[i] = maskSecret(k)
	}
	backend := []any{"backend", "web", "upstream", cfg.CursorAPIURL}
	switch cfg.Backend {
	case "agent":
		backend = []any{"backend", "agent", "agent_bin", cfg.AgentBin, "agent_max_procs", cfg.AgentMaxProcs, "cursor_api_key", maskSecret(cfg.CursorAPIKey)}
	case "cursor":
		cursorKeys := make([]string, 0, len(cfg.CursorAPIKeys()))
		for _, k := range cfg.CursorAPIKeys() {
			cursorKeys = append(cursorKeys, maskSecret(k))
		}
		upstream := cfg.CursorBackendURL
		if upstream == "" {
			upstream = "Cursor's own hosts"
		}
		backend = []any{"backend", "cursor", "upstream", upstream, "cursor_transport", cfg.CursorTransport, "cursor_api_keys", cursorKeys}
	}
	return append(backend,
		"models", models,
		"doors", []string{
			"openai: POST /v1/chat/completions, GET /v1/models",
			"anthropic: POST /v1/messages, POST /v1/messages/count_tokens",
			"responses: POST /v1/responses, GET and DELETE /v1/responses/{id}",
			"gemini: POST /v1beta/models/{model}:generateContent, :streamGenerateContent and :countTokens, GET /v1beta/models",
		},
		"api_keys", keys,
		"state", stateBanner(cfg),
		"usage_endpoint", cfg.AdminKey != "",
		"cookie", maskSecret(cfg.Cookie),
		"x_is_human", cfg.XIsHuman.Kind,
		"tls_fingerprint", cfg.Fingerprint,
		"egress_proxies", proxies,
		"trusted_proxies", cfg.TrustedProxies,
		"metrics_addr", cfg.MetricsAddr,
		"strict_tools", cfg.KiloToolStrict,
		"timeout", cfg.Timeout.Duration(),
		"ping_interval", cfg.PingInterval.Duration(),
		"shutdown_timeout", cfg.ShutdownTimeout.Duration(),
		"log_format", cfg.LogFormat,
	)
}

// maskSecret keeps enough of a secret to tell two apart: its first four
// characters of a long one, and its length.
func maskSecret(s string) string {
	switch {
	case s == "":
		return ""
	case len(s) < 12:
		return fmt.Sprintf("*** (%d chars)", len(s))
	}
	return fmt.Sprintf("%s*** (%d chars)", s[:4], len(s))
}

// serveMetrics serves /metrics on addr too, when set, until stop is
// called. It returns an error when addr cannot be listened on.
func serveMetrics(addr string, h http.Handler, logger *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("METRICS_ADDR: listening on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("metrics listener stopped", "addr", addr, "error", err)
		}
	}()
	logger.Info("metrics listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
