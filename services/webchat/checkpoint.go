package webchat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"cursor2api/models"
	"cursor2api/services/upstream"
	"cursor2api/services/vercel"
	"cursor2api/utils"
)

// maxCheckpointPasses bounds how often one turn passes the checkpoint and
// tries again; an upstream that keeps asking after that is not let in.
const maxCheckpointPasses = 2

// checkpointPassed is an attempt refused by the Vercel checkpoint that
// has since been passed: the attempt is worth making again at once.
type checkpointPassed struct{ egress string }

func (e *checkpointPassed) Error() string {
	return "the Vercel checkpoint was passed through egress " + e.egress + "; try again"
}

// pinEgress chooses the egress of one attempt, so that the attempt and
// the checkpoint it may need leave from the same IP.
func (c *Client) pinEgress(ctx context.Context) (context.Context, string) {
	if c.Egress == nil {
		return ctx, vercel.Direct
	}
	return c.Egress.Pin(ctx)
}

// setCookie sets the request's Cookie header: the checkpoint cookie kept
// for egress with CURSOR_COOKIE (whose own _vcrcs, if any, gives way to a
// kept one). It returns the checkpoint cookie sent ("" for none).
func (c *Client) setCookie(ctx context.Context, h http.Header, egress string) string {
	kept := ""
	if c.Checkpoint != nil {
		kept = c.Checkpoint.Cookie(ctx, egress)
	}
	var parts []string
	if kept != "" {
		parts = append(parts, kept)
	}
	for _, p := range strings.Split(c.Cookie, ";") {
		p = strings.TrimSpace(p)
		if p == "" || kept != "" && strings.HasPrefix(p, vercel.CookieName+"=") {
			continue
		}
		parts = append(parts, p)
	}
	if len(parts) > 0 {
		h.Set("Cookie", strings.Join(parts, "; "))
	} else {
		h.Del("Cookie")
	}
	return kept
}

// refused maps a non-200 answer. A checkpoint (a challenge, or a bare 403
// whose page holds one) is passed when the keeper is set and mayPass, giving
// *checkpointPassed; else it is a 503 naming CURSOR_COOKIE. Everything else
// goes to statusError.
func (c *Client) refused(ctx context.Context, req upstream.Request, egress, sent string, resp *http.Response, mayPass bool) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusal))
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	if c.Checkpoint == nil {
		return c.statusError(req, resp)
	}
	v := vercel.Inspect(resp.StatusCode, resp.Header, raw)
	if v.Kind == vercel.NotCheckpoint {
		return c.statusError(req, resp)
	}
	if !mayPass {
		if v.Kind == vercel.Denied {
			return c.statusError(req, resp) // the bot check's, then
		}
		return checkpointError(resp.StatusCode, egress,
			fmt.Errorf("the upstream still asked for the checkpoint after it was passed %d times", maxCheckpointPasses))
	}
	c.log(ctx, req, slog.LevelInfo, "upstream asks for the Vercel checkpoint", "upstream_status", resp.StatusCode, "egress", egress, "answer", v.Kind.String())
	err := c.Checkpoint.Solve(ctx, egress, sent, v.Token)
	switch {
	case err == nil:
		return &checkpointPassed{egress: egress}
	case ctx.Err() != nil:
		return c.transportError(ctx, ctx.Err())
	case errors.Is(err, vercel.ErrNoCheckpoint):
		// The answer carried no token and the site's page asks for no
		// checkpoint: a 403 is the bot check's, a 429 a rate limit.
		return c.statusError(req, resp)
	}
	return checkpointError(resp.StatusCode, egress, err)
}

// checkpointError is the 503 of a checkpoint the gateway could not pass.
func checkpointError(status int, egress string, err error) *models.Error {
	return models.Upstream(http.StatusServiceUnavailable, "vercel_checkpoint", err,
		"the upstream is behind Vercel's security checkpoint (%d) and the gateway could not pass it (egress %s: %s); try again later, "+
			"or set CURSOR_COOKIE to the _vcrcs cookie of a browser that opened https://cursor.com from the same IP with the same "+
			"user agent (USER_AGENT/BROWSER_PROFILE): in the browser's developer tools, Application > Cookies > https://cursor.com, "+
			"copy its value as CURSOR_COOKIE=_vcrcs=(the value)",
		status, egress, utils.Clip(err.Error(), 200))
}
