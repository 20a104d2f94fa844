package agentcli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"cursor2api/models"
	"cursor2api/utils"
)

// maxCommandOutput bounds what a helper command (models, status,
// --version) may print.
const maxCommandOutput = 1 << 20

// commandTimeout bounds a helper command whatever its caller's context.
const commandTimeout = time.Minute

// command runs the CLI with args (models, status, --version) in its own
// process group, killed when ctx ends or after commandTimeout, and
// returns its stdout. These short runs take no process slot: a model
// refresh or a readiness check must not wait behind long answers.
func (c *CLI) command(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.opts.Bin, args...)
	cmd.Env = c.opts.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Dir = c.opts.WorkDir
	if cmd.Dir == "" {
		cmd.Dir = os.TempDir()
	}
	ownGroup(cmd)
	cmd.WaitDelay = waitDelay
	stdout := &boundedBuffer{max: maxCommandOutput, scrub: c.scrub}
	stderr := &boundedBuffer{max: maxStderr, scrub: c.scrub}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return "", startError(c.opts.Bin, err)
	}
	err := cmd.Wait()
	_ = killGroup(cmd.Process.Pid)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("agent %s: %w", strings.Join(args, " "), ctx.Err())
		}
		return stripANSI(stdout.String()), fmt.Errorf("agent %s: %v: %s", strings.Join(args, " "), err,
			orNone(utils.Clip(strings.TrimSpace(stripANSI(stderr.String()+" "+stdout.String())), 300)))
	}
	return stripANSI(stdout.String()), nil
}

// ListModels returns the model ids `agent models` lists, reusing a list
// younger than ModelsTTL.
func (c *CLI) ListModels(ctx context.Context) ([]string, error) {
	c.modelsMu.Lock()
	if c.models != nil && time.Since(c.modelsAt) < c.opts.ModelsTTL {
		ids := append([]string(nil), c.models...)
		c.modelsMu.Unlock()
		return ids, nil
	}
	c.modelsMu.Unlock()
	return c.refreshModels(ctx)
}

// refreshModels runs `agent models` and caches its list.
func (c *CLI) refreshModels(ctx context.Context) ([]string, error) {
	out, err := c.command(ctx, "models")
	if err != nil {
		return nil, err
	}
	ids := ParseModels(out)
	if len(ids) == 0 {
		return nil, fmt.Errorf("agent models listed no model: %q", utils.Clip(out, 200))
	}
	c.modelsMu.Lock()
	c.models, c.modelsAt = ids, time.Now()
	c.modelsMu.Unlock()
	return append([]string(nil), ids...), nil
}

// modelLineRE is a line of `agent models`: "<id> - <name>", the name
// sometimes followed by "(current)" or "(default)".
var modelLineRE = regexp.MustCompile(`^\s*(?:[*>]\s*)?([A-Za-z0-9][A-Za-z0-9._:/-]*)\s+-\s+\S`)

// ParseModels reads the model ids out of the output of `agent models`,
// in order, without duplicates; headings and blank lines are skipped.
func ParseModels(out string) []string {
	var ids []string
	seen := map[string]bool{}
	for _, line := range strings.Split(stripANSI(out), "\n") {
		m := modelLineRE.FindStringSubmatch(line)
		if m == nil || seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		ids = append(ids, m[1])
	}
	return ids
}

// Restrict keeps the ids that MODELS names, directly or by the base
// name of a -thinking entry. An empty restriction keeps every id.
func Restrict(ids, allowed []string) []string {
	if len(allowed) == 0 {
		return ids
	}
	ok := map[string]bool{}
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		ok[a] = true
		ok[strings.TrimSuffix(a, models.ThinkingSuffix)] = true
	}
	var out []string
	for _, id := range ids {
		if ok[id] || ok[strings.TrimSuffix(id, models.ThinkingSuffix)] {
			out = append(out, id)
		}
	}
	return out
}

// Catalog builds the public catalog from `agent models`, restricted to
// allowed (MODELS) when it is not empty.
func (c *CLI) Catalog(ctx context.Context, allowed []string) (*models.Catalog, error) {
	ids, err := c.refreshModels(ctx)
	if err != nil {
		return nil, err
	}
	kept := Restrict(ids, allowed)
	if len(kept) == 0 {
		return nil, fmt.Errorf("the Cursor Agent CLI offers none of MODELS (%s); `agent models` lists: %s",
			strings.Join(allowed, ", "), strings.Join(ids, ", "))
	}
	return models.NewUpstreamCatalog(kept)
}

// WatchModels refreshes catalog from `agent models` every interval until
// ctx ends, so that /v1/models follows the subscription. A failed
// refresh keeps the list the catalog has.
func (c *CLI) WatchModels(ctx context.Context, catalog *models.Catalog, allowed []string, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		c.refreshCatalog(ctx, catalog, allowed, interval)
	}
}

func (c *CLI) refreshCatalog(ctx context.Context, catalog *models.Catalog, allowed []string, bound time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, min(bound, time.Minute))
	defer cancel()
	next, err := c.Catalog(ctx, allowed)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			c.opts.Logger.Warn("agent: could not refresh the model list; keeping the last one", "error", err)
		}
		return
	}
	catalog.Replace(next)
	c.opts.Logger.Log(ctx, slog.LevelDebug, "agent: model list refreshed", "models", next.Names())
}
