package agentcli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"cursor2api/utils"
)

// readyTTL is how long a readiness check is reused: `agent status` asks
// Cursor's servers, and a probe may call /ready every few seconds.
const readyTTL = 30 * time.Second

// Readiness is what the last readiness check found.
type Readiness struct {
	Bin     string // the CLI's path
	Version string // `agent --version`
	Status  string // `agent status`, on one line
}

// Ready checks, without spending a model call, that the CLI exists,
// reports its version, and is logged in (`agent status`). A result is
// reused for 30 seconds.
func (c *CLI) Ready(ctx context.Context) (Readiness, error) {
	c.readyMu.Lock()
	defer c.readyMu.Unlock()
	if c.ready != nil && time.Since(c.readyAt) < readyTTL {
		return c.ready.r, c.ready.err
	}
	r, err := c.checkReady(ctx)
	if ctx.Err() == nil { // a check cut short by its caller says nothing
		c.ready, c.readyAt = &readyResult{r, err}, time.Now()
	}
	return r, err
}

// readyResult is a cached readiness check.
type readyResult struct {
	r   Readiness
	err error
}

func (c *CLI) checkReady(ctx context.Context) (Readiness, error) {
	var r Readiness
	path, err := exec.LookPath(c.opts.Bin)
	if err != nil {
		return r, fmt.Errorf("the Cursor Agent CLI %q was not found: install it (curl https://cursor.com/install -fsS | bash) or set AGENT_BIN", c.opts.Bin)
	}
	r.Bin = path
	version, err := c.command(ctx, "--version")
	if err != nil {
		return r, fmt.Errorf("the Cursor Agent CLI does not run: %w", err)
	}
	r.Version = strings.TrimSpace(strings.SplitN(strings.TrimSpace(version), "\n", 2)[0])
	status, err := c.command(ctx, "status")
	r.Status = utils.Clip(strings.Join(strings.Fields(status), " "), 300)
	if err != nil && !notLoggedInRE.MatchString(status) {
		return r, fmt.Errorf("agent status failed: %w", err)
	}
	if notLoggedInRE.MatchString(status) || !strings.Contains(strings.ToLower(status), "logged in") {
		return r, errors.New("the Cursor Agent CLI is not logged in: set CURSOR_API_KEY or run `agent login` on the gateway's host")
	}
	return r, nil
}
