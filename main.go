// Command cursor2api is a gateway that serves the OpenAI chat-completions,
// Anthropic Messages, OpenAI Responses and Gemini APIs, with real tool
// calls for coding agents, in front of Cursor's web chat, the Cursor Agent
// CLI or Cursor's native agent API.
//
// Subcommands: healthcheck (the container's HEALTHCHECK), doctor (run the
// web chat's handshake step by step and say what to set), xih (run the
// x-is-human check and say what it read), version.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/gin-gonic/gin"

	"cursor2api/config"
	"cursor2api/handlers/server"
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
		case "doctor":
			os.Exit(doctorCommand(os.Args[2:], os.Stdout, os.Stderr))
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
	logger := server.NewLogger(cfg, os.Stderr)
	gin.SetMode(gin.ReleaseMode)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := server.New(cfg, logger, server.Options{Version: version})
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
