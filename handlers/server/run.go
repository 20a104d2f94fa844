package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/gin-gonic/gin"

	"cursor2api/config"
)

// Run is `cursor2api` without a subcommand: the gateway the environment
// describes, on HOST:PORT, until SIGINT or SIGTERM. The process-level
// tests run it as a process of its own, as the binary does.
func Run(version string) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	logger := NewLogger(cfg, os.Stderr)
	gin.SetMode(gin.ReleaseMode)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := New(cfg, logger, Options{Version: version})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("listening on %s: %w", cfg.Addr(), err)
	}
	return srv.Serve(ctx, ln)
}
