// Command cursor2api is a gateway that serves the OpenAI chat-completions,
// Anthropic Messages and OpenAI Responses APIs, with real tool calls for
// coding agents, in front of Cursor's web chat or the Cursor Agent CLI.
//
// Subcommands: healthcheck (the container's HEALTHCHECK), xih (run the
// x-is-human check and say what it read), version.
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
	"golang.org/x/net/netutil"

	"cursor2api/config"
	"cursor2api/handlers"
	"cursor2api/handlers/responses"
	"cursor2api/services"
	"cursor2api/services/webchat"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "--version", "-version", "version":
			fmt.Println("cursor2api", version)
			return
		case "healthcheck":
			// The image's HEALTHCHECK: scratch has no shell or curl.
			if err := healthcheck(os.Getenv("HOST"), os.Getenv("PORT")); err != nil {
				fmt.Fprintln(os.Stderr, "cursor2api healthcheck:", err)
				os.Exit(1)
			}
			return
		case "xih":
			os.Exit(xih(os.Args[2:], os.Stdout, os.Stderr))
		}
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
	logger := newLogger(cfg, os.Stderr, level)
	gin.SetMode(gin.ReleaseMode)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr(), err)
	}
	return serve(ctx, cfg, logger, ln)
}

// lastWordsTimeout bounds the wait, after SHUTDOWN_TIMEOUT, for the answers
// still open to write their error event and end.
const lastWordsTimeout = 2 * time.Second

// serve answers on ln until ctx ends, then drains in-flight requests for
// at most SHUTDOWN_TIMEOUT before closing what is left.
func serve(ctx context.Context, cfg *config.Config, logger *slog.Logger, ln net.Listener) error {
	gw, err := services.FromConfig(cfg, logger)
	if err != nil {
		return err
	}
	// drain ends when the drain time is up: the answers still open then
	// end with an error event instead of being cut mid-chunk.
	drain, endDrain := context.WithCancel(context.Background())
	defer endDrain()
	handler := handlers.New(handlers.Options{
		Chat: gw.Chat, Catalog: gw.Catalog, Aliases: gw.Aliases, APIKeys: cfg.APIKeys,
		MaxBodyBytes: cfg.MaxBodyBytes, PingInterval: cfg.PingInterval.Duration(), Version: version, Logger: logger,
		Responses: responses.NewStore(responses.StoreLimits{
			Max: cfg.ResponsesStoreMax, MaxBytes: cfg.ResponsesStoreBytes, TTL: cfg.ResponsesStoreTTL.Duration(),
		}),
		Metrics: gw.Metrics, Readiness: gw.Readiness, TrustedProxies: cfg.TrustedProxies,
		AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins, BodyReadTimeout: cfg.BodyReadTimeout.Duration(), Drain: drain,
		XIsHuman: xIsHumanHealth(gw),
	})
	// Connections past MAX_CONNECTIONS wait in the kernel's backlog.
	ln = netutil.LimitListener(ln, cfg.MaxConnections)
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	if !cfg.Loopback() && len(cfg.APIKeys) == 0 {
		logger.Warn("listening beyond loopback with no API_KEY: anyone who can reach this port can use the gateway", "addr", ln.Addr().String())
	}
	logger.Info("cursor2api listening", append([]any{"addr", ln.Addr().String(), "version", version}, banner(cfg, gw.Catalog.Names())...)...)
	stopMetrics, err := serveMetrics(cfg.MetricsAddr, gw.Metrics.Handler(), logger)
	if err != nil {
		return err
	}
	defer stopMetrics()

	if interval := cfg.ModelCheck.Duration(); interval > 0 && gw.Web != nil {
		go webchat.WatchModels(ctx, gw.Web, gw.Catalog, interval, logger)
	}
	if gw.Background != nil {
		go gw.Background(ctx)
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
		logger.Warn("drain timed out; ending the remaining answers", "error", err)
		endDrain()
		// The answers end at once; give their last events a moment to go out.
		lastWords, cancelLast := context.WithTimeout(context.Background(), lastWordsTimeout)
		defer cancelLast()
		if err := srv.Shutdown(lastWords); err != nil {
			_ = srv.Close()
		}
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
