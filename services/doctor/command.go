package doctor

import (
	"context"
	"io"
	"time"

	"cursor2api/config"
)

// Command is `cursor2api doctor`: the steps against the configured
// upstream. It returns the exit status: 2 for a usage or configuration
// error, else Run's.
func Command(args []string, stdout, stderr io.Writer) int {
	c := config.NewCommand("doctor", stderr)
	// The steps report what the log would say; only errors go to stderr.
	c.ErrorsOnly = true
	budget := c.Flags.Duration("budget", 30*time.Second, "the time limit of each step")
	cfg, ok := c.Load(args)
	if !ok {
		return 2
	}
	state, err := NewState(cfg, c.Logger(cfg))
	if err != nil {
		return c.Fail(err)
	}
	return Run(context.Background(), stdout, state, Steps(), *budget)
}
