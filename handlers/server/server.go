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
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/netutil"

	"cursor2api/config"
	"cursor2api/handlers"
	"cursor2api/handlers/console"
	"cursor2api/handlers/responses"
	"cursor2api/handlers/socket"
	"cursor2api/services"
	"cursor2api/services/clientkeys"
	"cursor2api/services/metrics"
	"cursor2api/services/readiness"
	"cursor2api/services/state"
	"cursor2api/services/usage"
)

// stateInterval is how often the usage ledger writes its records and the
// state queue retries failed writes (or checks a quiet store).
const stateInterval = time.Second

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
	handler *handlers.Handler
	// endDrain ends the drain context the handler watches: the answers
	// still open then end with an error event instead of being cut
	// mid-chunk.
	endDrain context.CancelFunc
	// sockets are the open WebSockets, which http.Server.Shutdown does
	// not wait for: the shutdown closes them after their turn.
	sockets *socket.Group
	// state is the queue of writes to the state store (STATE_URL), and
	// ledger the usage ledger that writes through it.
	state  *state.Queue
	ledger *usage.Ledger
	// keys are the client keys in force, reloaded while serving.
	keys *clientkeys.Set
	// redisLimits, on Redis, renews the leases of this replica's slots.
	redisLimits *clientkeys.Redis
	closeOnce   sync.Once
}

// New builds the gateway cfg describes and opens its state store (for
// Redis, waiting for it a bounded time). It opens no listener and starts
// nothing; Serve does. A Server that is never served is closed with
// Close.
func New(cfg *config.Config, logger *slog.Logger, opts Options) (*Server, error) {
	// A bad keys file stops the start, with its line, before anything opens.
	keys, keysErr := clientkeys.Load(cfg.APIKeysFile, cfg.APIKeys)
	if keysErr != nil {
		return nil, keysErr
	}
	// The store first: the gateway keeps some of its state there (the
	// native back door's key rests).
	store, err := state.Open(context.Background(), state.Options{URL: cfg.StateURL, Dir: cfg.StateDir, Sync: cfg.StateSync, ConnectTimeout: cfg.StateConnectTimeout.Duration(), Logger: logger})
	if err != nil {
		return nil, err
	}
	q := state.NewQueue(store, 0, logger)
	gw, err := services.FromConfigState(cfg, logger, q)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	ledger := usage.New(q, cfg.UsageRetention.Duration(), logger)
	gw.Metrics.State(store.Engine(), func() metrics.StateStats {
		st := q.Stats()
		return metrics.StateStats{Failed: st.Failed, Dropped: st.Dropped + ledger.Dropped(), Queued: st.Queued, Degraded: st.Status != "ok"}
	})
	if gw.Readiness != nil {
		gw.Readiness.State = func() readiness.State {
			st := q.Stats()
			return readiness.State{Engine: st.Engine, Status: st.Status, Queued: st.Queued, FailedWrites: st.Failed, LastError: st.LastError}
		}
	}
	// The keys' limits are counted where the state is shared: in Redis
	// across replicas, else in this process.
	var limits clientkeys.Counter = clientkeys.NewMemory()
	var redisLimits *clientkeys.Redis
	if rs, ok := store.(*state.Redis); ok {
		redisLimits = clientkeys.NewRedis(rs.Client(), cfg.LimitsSlotLease.Duration())
		limits = redisLimits
	}
	drain, endDrain := context.WithCancel(context.Background())
	sockets := socket.NewGroup()
	handler := handlers.New(handlers.Options{
		Chat: gw.Chat, Catalog: gw.Catalog, Aliases: gw.Aliases, APIKeys: cfg.APIKeys, ClientKeys: keys, Limits: limits,
		MaxBodyBytes: cfg.MaxBodyBytes, PingInterval: cfg.PingInterval.Duration(), Version: opts.Version, Logger: logger,
		Responses: responses.NewStore(q, responses.StoreLimits{
			Max: cfg.ResponsesStoreMax, MaxBytes: cfg.ResponsesStoreBytes, TTL: cfg.ResponsesStoreTTL.Duration(),
		}),
		ResponsesSocket: responses.SocketLimits{Idle: cfg.ResponsesWSIdle.Duration(), MaxTurns: cfg.ResponsesWSMaxTurns,
			MaxBytes: cfg.ResponsesWSMaxBytes, PingInterval: cfg.PingInterval.Duration(), Group: sockets},
		Usage: ledger, AdminKey: cfg.AdminKey, Backend: cfg.Backend, CompactionSecret: cfg.CompactionKey(),
		Metrics: gw.Metrics, Readiness: gw.Readiness, TrustedProxies: cfg.TrustedProxies,
		AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins, BodyReadTimeout: cfg.BodyReadTimeout.Duration(), Drain: drain,
		XIsHuman: xIsHumanHealth(gw), Cloud: gw.Cloud, Tools: gw.MCPTools(), Settings: console.SettingsOf(cfg),
	})
	return &Server{cfg: cfg, logger: logger, version: opts.Version, gw: gw, handler: handler, endDrain: endDrain, sockets: sockets, state: q, ledger: ledger, keys: keys, redisLimits: redisLimits}, nil
}

// Close waits for the writes of the native back door's key rests under
// way, writes the usage records not written yet and closes the state
// store, within a bound. Serve closes on its way out; Close is for a
// Server never served.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*state.DefaultWriteTimeout)
		defer cancel()
		// One write's bound for the key rests (a write under way ends by
		// then), and the rest of ctx's for the usage records.
		if err := s.gw.Shutdown(ctx); err != nil {
			s.logger.Warn("state: a key rest was not written at shutdown", "engine", s.state.Store().Engine(), "error", err)
		}
		s.ledger.Flush(ctx)
		if st := s.state.Stats(); st.Queued > 0 {
			s.logger.Warn("state: writes not done at shutdown", "engine", st.Engine, "queued", st.Queued, "last_error", st.LastError)
		}
		err = s.state.Store().Close()
	})
	return err
}

// Serve answers on ln, and on METRICS_ADDR, with the background jobs
// running, until ctx ends; then it drains requests for at most
// SHUTDOWN_TIMEOUT. It returns nil after a shutdown, or a listener's
// error, and closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	cfg, logger := s.cfg, s.logger
	defer s.endDrain()
	// The state's background work ends after the last request, and the
	// store closes after it.
	stateCtx, stopState := context.WithCancel(context.Background())
	var stateJobs sync.WaitGroup
	stateJobs.Go(func() { s.state.Run(stateCtx, stateInterval) })
	stateJobs.Go(func() { s.ledger.Run(stateCtx, stateInterval) })
	if s.redisLimits != nil {
		stateJobs.Go(func() { s.redisLimits.Run(stateCtx) })
	}
	// The console reads the ledger ahead of its first page.
	stateJobs.Go(func() { s.handler.Run(stateCtx) })
	if cfg.APIKeysFile != "" {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		stateJobs.Go(func() { s.keys.Watch(stateCtx, clientkeys.DefaultPoll, hup, logger) })
	}
	defer func() {
		stopState()
		stateJobs.Wait()
		_ = s.Close()
	}()
	// Connections past MAX_CONNECTIONS wait in the kernel's backlog.
	ln = netutil.LimitListener(ln, cfg.MaxConnections)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	if !cfg.Loopback() && s.keys.Empty() {
		logger.Warn("listening beyond loopback with no API_KEY: anyone who can reach this port can use the gateway", "addr", ln.Addr().String())
	}
	logger.Info("cursor2api listening", append([]any{"addr", ln.Addr().String(), "version", s.version}, banner(cfg, s.gw.Catalog.Names())...)...)
	stopMetrics, err := serveMetrics(cfg.MetricsAddr, s.gw.Metrics.Handler(), logger)
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer stopMetrics()

	// The model watch ends with ctx; the MCP servers stay up while the
	// answers drain, and go with the server.
	s.gw.Start(ctx)
	defer s.gw.Close()
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
	socketsDone := make(chan error, 1)
	go func() { socketsDone <- s.sockets.Shutdown(shutdownCtx) }()
	err = srv.Shutdown(shutdownCtx)
	if sockErr := <-socketsDone; err == nil {
		err = sockErr
	}
	if err != nil {
		logger.Warn("drain timed out; ending the remaining answers", "error", err)
		s.endDrain()
		// The answers end at once; give their last events a moment to go out.
		lastWords, cancelLast := context.WithTimeout(context.Background(), lastWordsTimeout)
		defer cancelLast()
		if err := srv.Shutdown(lastWords); err != nil {
			_ = srv.Close()
		}
		_ = s.sockets.Shutdown(lastWords)
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
