// Package server runs the gateway a configuration describes: the handler,
// the listener limits, the metrics listener, background jobs and graceful
// shutdown. The command (main) and the benchmark (bench) both run their
// gateway through it, so what is measured is what users run.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"

	"cursor2api/config"
	"cursor2api/handlers"
	"cursor2api/handlers/responses"
	"cursor2api/services"
	"cursor2api/services/webchat"
)

// Options are what differs between the programs that run a gateway; the
// rest comes from the configuration.
type Options struct {
	// Version is reported by /health and the start-up line.
	Version string
}

// lastWordsTimeout bounds the wait, after SHUTDOWN_TIMEOUT, for the answers
// still open to write their error event and end.
const lastWordsTimeout = 2 * time.Second

// Server is a gateway built from its configuration, ready to serve once.
type Server struct {
	cfg     *config.Config
	logger  *slog.Logger
	version string
	gw      *services.Gateway
	handler http.Handler
	// endDrain ends the drain context the handler watches: the answers
	// still open then end with an error event instead of being cut
	// mid-chunk.
	endDrain context.CancelFunc
}

// New builds the gateway cfg describes. It opens no listener and starts
// nothing; Serve does.
func New(cfg *config.Config, logger *slog.Logger, opts Options) (*Server, error) {
	gw, err := services.FromConfig(cfg, logger)
	if err != nil {
		return nil, err
	}
	drain, endDrain := context.WithCancel(context.Background())
	handler := handlers.New(handlers.Options{
		Chat: gw.Chat, Catalog: gw.Catalog, Aliases: gw.Aliases, APIKeys: cfg.APIKeys,
		MaxBodyBytes: cfg.MaxBodyBytes, PingInterval: cfg.PingInterval.Duration(), Version: opts.Version, Logger: logger,
		Responses: responses.NewStore(responses.StoreLimits{
			Max: cfg.ResponsesStoreMax, MaxBytes: cfg.ResponsesStoreBytes, TTL: cfg.ResponsesStoreTTL.Duration(),
		}),
		Metrics: gw.Metrics, Readiness: gw.Readiness, TrustedProxies: cfg.TrustedProxies,
		AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins, BodyReadTimeout: cfg.BodyReadTimeout.Duration(), Drain: drain,
		XIsHuman: xIsHumanHealth(gw), Tools: gw.MCPTools(),
	})
	return &Server{cfg: cfg, logger: logger, version: opts.Version, gw: gw, handler: handler, endDrain: endDrain}, nil
}

// Serve answers on ln until ctx ends, then drains in-flight requests for
// at most SHUTDOWN_TIMEOUT before ending what is left. It also serves
// METRICS_ADDR and runs the gateway's background jobs until then. It
// returns nil after a shutdown, and an error when a listener failed. ln is
// closed when Serve returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	cfg, logger := s.cfg, s.logger
	defer s.endDrain()
	// Connections past MAX_CONNECTIONS wait in the kernel's backlog.
	ln = netutil.LimitListener(ln, cfg.MaxConnections)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	if !cfg.Loopback() && len(cfg.APIKeys) == 0 {
		logger.Warn("listening beyond loopback with no API_KEY: anyone who can reach this port can use the gateway", "addr", ln.Addr().String())
	}
	logger.Info("cursor2api listening", append([]any{"addr", ln.Addr().String(), "version", s.version}, banner(cfg, s.gw.Catalog.Names())...)...)
	stopMetrics, err := serveMetrics(cfg.MetricsAddr, s.gw.Metrics.Handler(), logger)
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer stopMetrics()

	// Under MODELS=auto the gateway's Background learns the list instead.
	if interval := cfg.ModelCheck.Duration(); interval > 0 && s.gw.Web != nil && !cfg.ModelsAuto() {
		go webchat.WatchModels(ctx, s.gw.Web, s.gw.Catalog, interval, logger)
	}
	if s.gw.Background != nil {
		go s.gw.Background(ctx)
	}
	// MCP servers stay up while the answers drain, and go with the server.
	s.gw.StartMCP(context.WithoutCancel(ctx))
	defer s.gw.StopMCP()
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
		s.endDrain()
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

// xIsHumanHealth is what /health reports of the x-is-human check: nothing
// on a backend without one.
func xIsHumanHealth(gw *services.Gateway) func() any {
	if gw.Human == nil {
		return nil
	}
	return func() any { return gw.Human.Health() }
}
