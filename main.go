// Command cursor2api is an OpenAI-compatible gateway to the models behind
// Cursor's web chat, with real tool calls for coding agents.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/config"
	"cursor2api/handlers"
	"cursor2api/services"
	"cursor2api/services/webchat"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "xih" {
		os.Exit(xih(os.Args[2:], os.Stdout, os.Stderr))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cursor2api:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	level, _ := cfg.SlogLevel()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	gin.SetMode(gin.ReleaseMode)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr(), err)
	}
	return serve(ctx, cfg, logger, ln)
}

// serve answers on ln until ctx ends, then drains in-flight requests for
// at most SHUTDOWN_TIMEOUT before closing what is left.
func serve(ctx context.Context, cfg *config.Config, logger *slog.Logger, ln net.Listener) error {
	gw, err := services.FromConfig(cfg, logger)
	if err != nil {
		return err
	}
	handler := handlers.New(handlers.Options{
		Chat: gw.Chat, Catalog: gw.Catalog, APIKeys: cfg.APIKeys,
		MaxBodyBytes: cfg.MaxBodyBytes, PingInterval: cfg.PingInterval.Duration(), Version: version, Logger: logger,
		XIsHuman: func() any { return gw.Human.Health() },
	})
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	if !cfg.Loopback() && len(cfg.APIKeys) == 0 {
		logger.Warn("listening beyond loopback with no API_KEY: anyone who can reach this port can use the gateway", "addr", ln.Addr().String())
	}
	logger.Info("cursor2api listening", "addr", ln.Addr().String(), "version", version, "models", gw.Catalog.Names(),
		"upstream", cfg.CursorAPIURL, "x_is_human", cfg.XIsHumanMode, "tls_fingerprint", cfg.Fingerprint)

	if interval := cfg.ModelCheck.Duration(); interval > 0 {
		go webchat.WatchModels(ctx, gw.Web, gw.Catalog, interval, logger)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining in-flight requests", "timeout", cfg.ShutdownTimeout.Duration())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout.Duration())
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Warn("drain timed out; closing the remaining connections", "error", err)
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
