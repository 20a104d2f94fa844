package vercel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"cursor2api/utils"
)

// Direct names the egress of requests that use no proxy.
const Direct = "direct"

// SolvePath is where the solution is sent, on the site's origin.
const SolvePath = "/.well-known/vercel/security/request-challenge"

// Defaults of Options.
const (
	DefaultAttempts = 3
	DefaultTimeout  = 15 * time.Second
	DefaultBackoff  = 30 * time.Second
	DefaultMargin   = 5 * time.Minute
	// DefaultTTL is assumed for a cookie whose lifetime cannot be read.
	DefaultTTL = time.Hour
)

// ErrNoCheckpoint is returned when the site's page asks for no checkpoint:
// a refusal without a token had another cause.
var ErrNoCheckpoint = errors.New("the site's page asks for no Vercel checkpoint")

// Options configure a Keeper.
type Options struct {
	// HTTP sends the keeper's requests through the same transport (TLS
	// fingerprint, egress proxy) as the requests the cookie is for. It
	// should have no cookie jar: the keeper keeps the cookie per egress.
	HTTP *http.Client
	// Headers are the browser's identifying headers (User-Agent,
	// sec-ch-ua*, Accept-Language): the cookie is bound to them.
	Headers http.Header
	// PageURL is fetched for a fresh challenge (e.g. https://cursor.com/).
	PageURL string
	// SolveURL receives the solution (the site's origin + SolvePath).
	SolveURL string
	// Attempts bounds the tries of one solve (each after the first with a
	// fresh token from PageURL); Timeout bounds a whole solve.
	Attempts int
	Timeout  time.Duration
	// Backoff is how long a failed solve is not tried again: requests in
	// between fail at once with its error.
	Backoff time.Duration
	// Margin is how long before its expiry a cookie is refreshed (at most
	// half its lifetime).
	Margin time.Duration
	// Now is the clock (tests set it); nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Egresses are the egresses known from the start (the proxies, or
	// Direct), which State lists before they are used.
	Egresses []string
	// OnSolve, when set, is told the outcome of every solve: "ok",
	// "refused" (the site rejected the solution), "no_checkpoint" or
	// "error".
	OnSolve func(egress, outcome string, took time.Duration)
	// Drift is told of a token layout beyond the known one; nil makes
	// one that logs to Logger.
	Drift *utils.Drift
}

// Keeper passes the checkpoint and keeps its cookie, egress by egress.
// It is safe for concurrent use; solving is single-flight per egress.
type Keeper struct {
	opts Options

	mu       sync.Mutex
	egresses map[string]*egressCookie
}

// egressCookie is the checkpoint state of one egress.
type egressCookie struct {
	mu      sync.Mutex
	cookie  string // "_vcrcs=<value>"
	expires time.Time
	ttl     time.Duration
	flight  *flight

	lastSolve    time.Time
	lastDuration time.Duration
	solves       int64
	failures     int64
	lastError    string
	failedUntil  time.Time // a failed solve is not retried before
	failErr      error
	quietUntil   time.Time // the page asked for no checkpoint
	noCheckpoint bool
}

type flight struct {
	done chan struct{}
	err  error
}

// New returns a keeper; zero options take their defaults.
func New(opts Options) *Keeper {
	opts.Attempts = utils.Default(opts.Attempts, DefaultAttempts)
	opts.Timeout = utils.Default(opts.Timeout, DefaultTimeout)
	opts.Backoff = utils.Default(opts.Backoff, DefaultBackoff)
	opts.Margin = utils.Default(opts.Margin, DefaultMargin)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	if opts.Drift == nil {
		opts.Drift = utils.NewDrift(opts.Logger)
	}
	k := &Keeper{opts: opts, egresses: map[string]*egressCookie{}}
	for _, label := range opts.Egresses {
		k.egress(label)
	}
	return k
}

// SolveURLFor is the request-challenge URL on the origin of siteURL.
func SolveURLFor(siteURL string) (string, error) {
	u, err := url.Parse(siteURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("%q is not an absolute URL", siteURL)
	}
	return u.Scheme + "://" + u.Host + SolvePath, nil
}

func (k *Keeper) now() time.Time {
	if k.opts.Now != nil {
		return k.opts.Now()
	}
	return time.Now()
}

func (k *Keeper) egress(label string) *egressCookie {
	if label == "" {
		label = Direct
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.egresses[label]
	if !ok {
		e = &egressCookie{}
		k.egresses[label] = e
	}
	return e
}

// Cookie returns the cookie ("_vcrcs=…") to send through egress, or "".
// A cookie close to its expiry is refreshed first (within ctx), unless
// another request is refreshing it already; when the refresh fails the
// old cookie is used while it lasts.
func (k *Keeper) Cookie(ctx context.Context, egress string) string {
	e := k.egress(egress)
	e.mu.Lock()
	cookie, expires, ttl, refreshing := e.cookie, e.expires, e.ttl, e.flight != nil
	e.mu.Unlock()
	if cookie == "" {
		return ""
	}
	now := k.now()
	margin := min(k.opts.Margin, ttl/2)
	if now.Before(expires.Add(-margin)) || refreshing && now.Before(expires) {
		return cookie
	}
	if err := k.Solve(ctx, egress, cookie, ""); err != nil {
		k.opts.Logger.Debug("checkpoint cookie refresh failed", "egress", egress, "error", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !k.now().Before(e.expires) {
		e.cookie = ""
		return ""
	}
	return e.cookie
}

// Solve passes the checkpoint for egress and keeps the cookie it sets; calls
// for one egress share a solve. It returns at once when the keeper holds a
// valid cookie other than sent. An empty token is fetched from PageURL
// (ErrNoCheckpoint: the page asked for none).
func (k *Keeper) Solve(ctx context.Context, egress, sent, token string) error {
	if egress == "" {
		egress = Direct
	}
	e := k.egress(egress)
	for {
		e.mu.Lock()
		now := k.now()
		if e.cookie != "" && e.cookie != sent && now.Before(e.expires) {
			e.mu.Unlock()
			return nil
		}
		if f := e.flight; f != nil {
			e.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if f.err != nil && errors.Is(f.err, context.Canceled) && ctx.Err() == nil {
				continue // the solving request left; solve for this one
			}
			if f.err != nil {
				return f.err
			}
			continue
		}
		if now.Before(e.failedUntil) {
			err := e.failErr
			e.mu.Unlock()
			return err
		}
		if token == "" && now.Before(e.quietUntil) {
			e.mu.Unlock()
			return ErrNoCheckpoint
		}
		f := &flight{done: make(chan struct{})}
		e.flight = f
		e.mu.Unlock()

		f.err = k.solve(ctx, egress, e, token)
		e.mu.Lock()
		e.flight = nil
		e.mu.Unlock()
		close(f.done)
		return f.err
	}
}

// solve runs one bounded solve and records its outcome.
func (k *Keeper) solve(ctx context.Context, egress string, e *egressCookie, token string) error {
	ctx, cancel := context.WithTimeout(ctx, k.opts.Timeout)
	defer cancel()
	start := k.now()
	wall := time.Now()
	var err error
	outcome := "error"
	for attempt := 1; attempt <= k.opts.Attempts; attempt++ {
		if token == "" {
			if token, err = k.fetchToken(ctx); err != nil {
				if errors.Is(err, ErrNoCheckpoint) {
					outcome = "no_checkpoint"
					break
				}
				if ctx.Err() != nil {
					break
				}
				continue
			}
		}
		var cookie string
		cookie, err = k.pass(ctx, token)
		token = "" // a token is good for one try
		if err == nil {
			k.keep(e, cookie)
			outcome = "ok"
			break
		}
		if errors.Is(err, errRefused) {
			outcome = "refused"
		}
		if ctx.Err() != nil {
			break
		}
	}
	took := time.Since(wall)
	e.mu.Lock()
	switch {
	case err == nil:
		e.solves++
		e.lastSolve, e.lastDuration, e.lastError = start, took, ""
		e.noCheckpoint, e.failedUntil, e.failErr = false, time.Time{}, nil
	case errors.Is(err, ErrNoCheckpoint):
		e.quietUntil, e.noCheckpoint = k.now().Add(k.opts.Backoff), true
	case errors.Is(err, context.Canceled) && ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		// the request that solved left; nothing was learned
		e.mu.Unlock()
		return err
	default:
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("gave up after %s: %w", k.opts.Timeout, err)
		}
		err = fmt.Errorf("vercel checkpoint (egress %s): %w", egress, err)
		e.failures++
		e.lastError = utils.Clip(err.Error(), 300)
		e.failedUntil, e.failErr = k.now().Add(k.opts.Backoff), err
	}
	e.mu.Unlock()
	if k.opts.OnSolve != nil {
		k.opts.OnSolve(egress, outcome, took)
	}
	if err == nil {
		k.opts.Logger.Info("vercel checkpoint passed", "egress", egress, "took", took.Round(time.Millisecond))
	} else if outcome != "no_checkpoint" {
		k.opts.Logger.Warn("vercel checkpoint not passed", "egress", egress, "outcome", outcome, "error", err)
	}
	return err
}

// keep stores a cookie with its lifetime: the smaller of what its fields
// say (issued + ttl, by the site's clock) and ttl from now.
func (k *Keeper) keep(e *egressCookie, cookie string) {
	now := k.now()
	ttl := DefaultTTL
	expires := now.Add(ttl)
	if issued, life, ok := cookieLifetime(strings.TrimPrefix(cookie, CookieName+"=")); ok {
		ttl = life
		expires = now.Add(life)
		if byFields := issued.Add(life); byFields.Before(expires) {
			expires = byFields
		}
	}
	e.mu.Lock()
	e.cookie, e.expires, e.ttl = cookie, expires, ttl
	e.mu.Unlock()
}

// cookieLifetime reads "1.<issued>.<ttl>.…" (Unix seconds, seconds).
func cookieLifetime(value string) (time.Time, time.Duration, bool) {
	parts := strings.Split(value, ".")
	if len(parts) < 3 {
		return time.Time{}, 0, false
	}
	issued, err1 := strconv.ParseInt(parts[1], 10, 64)
	ttl, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || ttl <= 0 {
		return time.Time{}, 0, false
	}
	return time.Unix(issued, 0), time.Duration(ttl) * time.Second, true
}

// maxPage bounds what is read of a page or answer.
const maxPage = 256 << 10

// fetchToken gets a fresh challenge from the site's page, fetched like a
// browser navigating to it.
func (k *Keeper) fetchToken(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.opts.PageURL, nil)
	if err != nil {
		return "", fmt.Errorf("page request: %w", err)
	}
	k.browser(req.Header)
	for name, value := range map[string]string{
		"Accept":                    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8",
		"Sec-Fetch-Dest":            "document",
		"Sec-Fetch-Mode":            "navigate",
		"Sec-Fetch-Site":            "none",
		"Sec-Fetch-User":            "?1",
		"Upgrade-Insecure-Requests": "1",
		"Priority":                  "u=0, i",
	} {
		req.Header.Set(name, value)
	}
	resp, err := k.opts.HTTP.Do(req)
	if err != nil {
		return "", fmt.Errorf("fetching the checkpoint page: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxPage))
	if resp.StatusCode < 300 {
		return "", ErrNoCheckpoint
	}
	v := Inspect(resp.StatusCode, resp.Header, body)
	switch {
	case v.Kind == Challenged && v.Token != "":
		return v.Token, nil
	case v.Kind == Challenged:
		return "", fmt.Errorf("the checkpoint page (%d) carries no challenge token", resp.StatusCode)
	}
	return "", fmt.Errorf("the checkpoint page answered %d without a challenge", resp.StatusCode)
}

// errRefused marks a solution the site did not accept.
var errRefused = errors.New("the checkpoint refused the solution")

// pass solves token and trades the solution for the cookie.
func (k *Keeper) pass(ctx context.Context, token string) (string, error) {
	c, err := ParseToken(token)
	if err != nil {
		return "", err
	}
	if c.Drift != "" {
		// The site's format changed: worth knowing before a later change
		// stops the solver.
		k.opts.Drift.Note("vercel checkpoint", "challenge token with "+c.Drift)
	}
	solution, err := c.Solve(ctx)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.opts.SolveURL, http.NoBody)
	if err != nil {
		return "", fmt.Errorf("solution request: %w", err)
	}
	k.browser(req.Header)
	h := req.Header
	h.Set("Accept", "*/*")
	if origin, err := SolveURLFor(k.opts.SolveURL); err == nil {
		origin = strings.TrimSuffix(origin, SolvePath)
		h.Set("Origin", origin)
		h.Set("Referer", origin+"/.well-known/vercel/security/static/challenge.v2.min.js")
	}
	h.Set("Sec-Fetch-Dest", "empty")
	h.Set("Sec-Fetch-Mode", "cors")
	h.Set("Sec-Fetch-Site", "same-origin")
	h.Set("Priority", "u=1, i")
	h.Set(HeaderToken, token)
	h.Set(HeaderSolution, solution)
	h.Set(HeaderVersion, TokenVersion)
	resp, err := k.opts.HTTP.Do(req)
	if err != nil {
		return "", fmt.Errorf("sending the solution: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxPage))
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("%w (%d)", errRefused, resp.StatusCode)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == CookieName && ck.Value != "" {
			return CookieName + "=" + ck.Value, nil
		}
	}
	return "", fmt.Errorf("the checkpoint answered %d without a %s cookie", resp.StatusCode, CookieName)
}

// browser copies the browser's identifying headers into h, leaving out
// those of the web chat's API calls (pass sets its own Origin and
// Referer; a navigation sends none).
func (k *Keeper) browser(h http.Header) {
	for name, v := range k.opts.Headers {
		switch http.CanonicalHeaderKey(name) {
		case "Content-Type", "Cookie", "X-Is-Human", "Origin", "Referer":
			continue
		}
		h[http.CanonicalHeaderKey(name)] = append([]string(nil), v...)
	}
}

// State is what /ready and the metrics show of one egress.
type State struct {
	Egress    string `json:"egress"`
	HasCookie bool   `json:"has_cookie"`
	// ExpiresIn is how long the cookie still lasts (0 without one).
	ExpiresIn time.Duration `json:"-"`
	// LastSolve is when the last successful solve started.
	LastSolve         time.Time     `json:"-"`
	LastSolveDuration time.Duration `json:"-"`
	Solves            int64         `json:"solves"`
	Failures          int64         `json:"failures"`
	LastError         string        `json:"last_error,omitempty"`
	// NoCheckpoint is set while the site's page asked for no checkpoint
	// at the last look.
	NoCheckpoint bool `json:"no_checkpoint,omitempty"`
}

// State is the keeper's state, egress by egress, in label order.
func (k *Keeper) State() []State {
	k.mu.Lock()
	labels := make([]string, 0, len(k.egresses))
	for l := range k.egresses {
		labels = append(labels, l)
	}
	k.mu.Unlock()
	sort.Strings(labels)
	now := k.now()
	out := make([]State, 0, len(labels))
	for _, l := range labels {
		e := k.egress(l)
		e.mu.Lock()
		s := State{Egress: l, LastSolve: e.lastSolve, LastSolveDuration: e.lastDuration,
			Solves: e.solves, Failures: e.failures, LastError: e.lastError, NoCheckpoint: e.noCheckpoint}
		if e.cookie != "" && now.Before(e.expires) {
			s.HasCookie, s.ExpiresIn = true, e.expires.Sub(now)
		}
		e.mu.Unlock()
		out = append(out, s)
	}
	return out
}

// Valid reports whether egress holds a cookie that has not expired.
func (k *Keeper) Valid(egress string) bool {
	e := k.egress(egress)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cookie != "" && k.now().Before(e.expires)
}
