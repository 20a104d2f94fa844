package doctor

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"cursor2api/config"
)

// Command is `cursor2api doctor`: the steps against the configured
// upstream. It returns the exit status: 2 for a usage or configuration
// error, else Run's.
func Command(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	budget := fs.Duration("budget", 30*time.Second, "the time limit of each step")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "cursor2api doctor:", err)
		return 2
	}
	// The steps report what the log would say; only errors go to stderr.
	level, _ := cfg.SlogLevel()
	state, err := NewState(cfg, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: max(level, slog.LevelError)})))
	if err != nil {
		fmt.Fprintln(stderr, "cursor2api doctor:", err)
		return 2
	}
	return Run(context.Background(), stdout, state, Steps(), *budget)
}
