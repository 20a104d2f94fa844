package human

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"cursor2api/utils"
)

// Mode is how the header value is obtained.
type Mode struct {
	Kind   string // "script", "random", "static" or "off"; "" is "script"
	Static string // the value for "static"
}

// Fetcher downloads the challenge script.
type Fetcher func(ctx context.Context, url string) (string, error)

// maxScriptBytes bounds the downloaded script.
const maxScriptBytes = 4 << 20

// HTTPFetcher fetches the script the way Chrome loads a <script> from the
// page: same profile, script destination, no-cors.
func HTTPFetcher(client *http.Client, headers http.Header) Fetcher {
	return httpFetcher(client, headers, map[string]string{"Sec-Fetch-Dest": "script", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Site": "same-origin"}, "challenge script")
}

// PageFetcher fetches a page the way Chrome navigates to it, for
// SCRIPT_URL=auto.
func PageFetcher(client *http.Client, headers http.Header) Fetcher {
	return httpFetcher(client, headers, map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
		"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none", "Sec-Fetch-User": "?1",
		"Upgrade-Insecure-Requests": "1"}, "page")
}

func httpFetcher(client *http.Client, headers http.Header, fetchHeaders map[string]string, what string) Fetcher {
	return func(ctx context.Context, url string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return "", fmt.Errorf("script request: %w", err)
		}
		for k, v := range headers {
			req.Header[k] = v
		}
		req.Header.Set("Accept", "*/*")
		req.Header.Del("Content-Type")
		req.Header.Del("Priority")
		req.Header.Del("Origin")
		for k, v := range fetchHeaders {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", fmt.Errorf("fetching the %s: %w", what, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("fetching the %s %s: status %d", what, utils.Clip(url, 200), resp.StatusCode)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxScriptBytes+1))
		if err != nil {
			return "", fmt.Errorf("reading the %s: %w", what, err)
		}
		if len(body) > maxScriptBytes {
			return "", fmt.Errorf("the %s is over %d bytes", what, maxScriptBytes)
		}
		return string(body), nil
	}
}

// AutoScriptURL is the SCRIPT_URL value that finds the script on a page.
const AutoScriptURL = "auto"

// Options configure a Provider.
type Options struct {
	Mode Mode
	// ScriptURL is the challenge script, or AutoScriptURL to take it from
	// the <script src> of PageURL that points at the challenge.
	ScriptURL string
	PageURL   string
	Browser   Browser
	Fetch     Fetcher
	// FetchPage fetches PageURL; Fetch is used when it is nil.
	FetchPage Fetcher
	// TTL is how long a computed value is used; it is refreshed in the
	// background once 80% of it has passed.
	TTL time.Duration
	// Budget bounds one fetch and evaluation of the script.
	Budget time.Duration
	// Wait bounds how long a request waits for a value being computed
	// before it goes on with the fallback.
	Wait time.Duration
	// Backoff is how long the fallback is used after a failed refresh
	// before the script is tried again.
	Backoff time.Duration
	// EmptyFallback makes Value answer ErrFallback, instead of 64 random
	// hex digits, when no computed value is at hand (the script failed or
	// is still running after Wait): the caller then sends the header
	// empty, as clients do since the upstream stopped checking it.
	EmptyFallback bool
	Logger        *slog.Logger
}

// ErrFallback is Value's answer, with EmptyFallback, when no computed
// value is at hand.
var ErrFallback = errors.New("no x-is-human value computed (the challenge script failed or is still running)")

type entry struct {
	value     string
	refreshAt time.Time
	expires   time.Time
}

// Provider supplies x-is-human values. It is safe for concurrent use:
// concurrent requests share one computation, and the cached path takes no
// lock.
type Provider struct {
	opts   Options
	cached atomic.Pointer[entry]

	mu          sync.Mutex
	inflight    chan struct{} // closed when the running refresh ends
	failedUntil time.Time

	evaluations atomic.Int64
	last        atomic.Pointer[Status]
}

// Status is the outcome of the last evaluation, for health reports.
type Status struct {
	At        time.Time     // when it ended; zero before the first one
	OK        bool          // it produced a value
	Error     string        // why not
	Duration  time.Duration // fetch and evaluation
	ScriptURL string        // the script that ran
	Misses    []string      // globals the script read that the environment lacks
}

// LastEvaluation reports the last evaluation's outcome (the zero Status
// before the first ends). Age is time.Since(s.At).
func (p *Provider) LastEvaluation() Status {
	if s := p.last.Load(); s != nil {
		return *s
	}
	return Status{}
}

// Health is the x-is-human part of /health.
type Health struct {
	Mode       string   `json:"mode"`
	Evaluated  bool     `json:"evaluated"` // an evaluation has ended
	OK         bool     `json:"ok"`
	Error      string   `json:"error,omitempty"`
	AgeSeconds float64  `json:"age_seconds,omitempty"`
	TookMS     int64    `json:"took_ms,omitempty"`
	ScriptURL  string   `json:"script_url,omitempty"`
	Missing    []string `json:"missing,omitempty"`
}

// Health reports the mode and the last evaluation's outcome and age.
func (p *Provider) Health() Health {
	h := Health{Mode: p.opts.Mode.Kind}
	if s := p.last.Load(); s != nil {
		h.Evaluated, h.OK, h.Error, h.ScriptURL, h.Missing = true, s.OK, utils.Clip(s.Error, 300), s.ScriptURL, s.Misses
		h.AgeSeconds = time.Since(s.At).Round(time.Second).Seconds()
		h.TookMS = s.Duration.Milliseconds()
	}
	return h
}

// Mode reports how the provider obtains values ("script", "random", ...).
func (p *Provider) Mode() string { return p.opts.Mode.Kind }

// NewProvider returns a Provider; defaults fill the zero durations.
func NewProvider(opts Options) *Provider {
	opts.TTL = utils.Default(opts.TTL, 5*time.Minute)
	opts.Budget = utils.Default(opts.Budget, 15*time.Second)
	opts.Wait = utils.Default(opts.Wait, opts.Budget)
	opts.Backoff = utils.Default(opts.Backoff, 30*time.Second)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Browser = opts.Browser.withDefaults()
	if opts.FetchPage == nil {
		opts.FetchPage = opts.Fetch
	}
	if opts.Mode.Kind == "" {
		opts.Mode.Kind = "script"
	}
	if opts.Mode.Kind == "script" && opts.ScriptURL == "" {
		opts.Mode.Kind = "random" // nothing to run
	}
	return &Provider{opts: opts}
}

// FailingUntil is when the fallback used after a failed refresh ends
// (zero: no refresh failed), for /ready and metrics.
func (p *Provider) FailingUntil() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failedUntil
}

// Evaluations counts the script evaluations started, for tests and metrics.
func (p *Provider) Evaluations() int64 { return p.evaluations.Load() }

// Ready returns the header value when it is at hand, without waiting:
// in the fixed modes, and while the script's cached value is fresh (its
// refresh started in the background once due, as Value does). It is
// false when Value would have to wait for the script.
func (p *Provider) Ready() (string, bool) {
	switch p.opts.Mode.Kind {
	case "off":
		return "", true
	case "static":
		return p.opts.Mode.Static, true
	case "random":
		return randomValue(), true
	}
	now := time.Now()
	if e := p.cached.Load(); e != nil && now.Before(e.expires) {
		if now.After(e.refreshAt) {
			p.refresh()
		}
		return e.value, true
	}
	return "", false
}

// Value returns the header value to send ("" for none).
func (p *Provider) Value(ctx context.Context) (string, error) {
	if v, ok := p.Ready(); ok {
		return v, nil
	}
	if done := p.refresh(); done != nil {
		wait := time.NewTimer(p.opts.Wait)
		defer wait.Stop()
		select {
		case <-done:
		case <-wait.C:
			p.opts.Logger.Warn("x-is-human still computing; sending the fallback value", "waited", p.opts.Wait)
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if e := p.cached.Load(); e != nil && time.Now().Before(e.expires) {
			return e.value, nil
		}
	}
	if p.opts.EmptyFallback {
		return "", ErrFallback
	}
	return randomValue(), nil
}

// Invalidate drops the cached value after the upstream rejected it, so the
// next request computes a fresh one.
func (p *Provider) Invalidate() {
	p.cached.Store(nil)
	p.mu.Lock()
	p.failedUntil = time.Time{}
	p.mu.Unlock()
}

// refresh starts a background computation unless one is running or a
// recent one failed. It returns the channel closed when the running
// computation ends, or nil when none runs.
func (p *Provider) refresh() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight != nil {
		return p.inflight
	}
	if time.Now().Before(p.failedUntil) {
		return nil
	}
	done := make(chan struct{})
	p.inflight = done
	p.evaluations.Add(1)
	go func() {
		// Not tied to any request: one caller going away must not spoil
		// the value the others wait for. The budget bounds it instead.
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.Budget)
		res, scriptURL := p.Check(ctx, "", EvalOptions{})
		cancel()
		value, err := res.Value, res.Err
		p.last.Store(&Status{At: time.Now(), OK: err == nil, Error: errString(err), Duration: res.Duration, ScriptURL: scriptURL, Misses: res.Misses})
		p.mu.Lock()
		if err != nil {
			p.failedUntil = time.Now().Add(p.opts.Backoff)
			p.opts.Logger.Warn("x-is-human script failed; using the fallback value", "error", err, "script_url", scriptURL,
				"missing_globals", res.Misses, "took", res.Duration, "retry_in", p.opts.Backoff,
				"hint", "run `cursor2api doctor` (the whole handshake) or `cursor2api xih` (what the script reads)")
		} else {
			now := time.Now()
			p.cached.Store(&entry{value: value, refreshAt: now.Add(p.opts.TTL * 4 / 5), expires: now.Add(p.opts.TTL)})
			p.opts.Logger.Debug("x-is-human value computed", "bytes", len(value), "took", res.Duration, "script_url", scriptURL)
		}
		p.inflight = nil
		p.mu.Unlock()
		close(done)
	}()
	return done
}

// Check fetches and runs the challenge once, outside the cache and
// whatever the mode: script when given (the xih command's -file), else the
// configured script. It returns the outcome and the URL the script ran as.
func (p *Provider) Check(ctx context.Context, script string, opts EvalOptions) (Result, string) {
	start := time.Now()
	scriptURL := p.opts.ScriptURL
	if script == "" {
		var err error
		if script, scriptURL, err = p.FetchScript(ctx); err != nil {
			return Result{Err: err, Duration: time.Since(start)}, scriptURL
		}
	} else if scriptURL == AutoScriptURL || scriptURL == "" {
		scriptURL = DefaultScriptURL // a file needs some URL to pose as
	}
	// The caller's deadline, when it sets one (xih's -budget), is the
	// bound; else the provider's own.
	budget := p.opts.Budget
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d)
	}
	r := Run(ctx, script, scriptURL, p.opts.Browser, budget, opts)
	r.Duration = time.Since(start)
	return r, scriptURL
}

// FetchScript fetches the configured challenge script, found on PageURL
// first under SCRIPT_URL=auto. It returns the script and its URL (the
// configured one when it could not be found).
func (p *Provider) FetchScript(ctx context.Context) (script, scriptURL string, err error) {
	scriptURL = p.opts.ScriptURL
	if scriptURL == AutoScriptURL {
		u, err := p.findScript(ctx)
		if err != nil {
			return "", scriptURL, err
		}
		scriptURL = u
	}
	if p.opts.Fetch == nil {
		return "", scriptURL, errors.New("no fetcher configured for the challenge script")
	}
	script, err = p.opts.Fetch(ctx, scriptURL)
	return script, scriptURL, err
}

// DefaultScriptURL is the challenge script cursor.com served when this was
// written (the shape is https://cursor.com/<uuid>/<uuid>/a-4-a/c.js?...).
// It changes from time to time: SCRIPT_URL overrides it, and
// SCRIPT_URL=auto finds the current one on a page.
const DefaultScriptURL = "https://cursor.com/149e9513-01fa-4fb0-aad4-566afd725d1b/2d206a39-8ed7-437e-a3be-862e0f06eea3/a-4-a/c.js?i=0&v=3&h=cursor.com"

// challengeSrc matches the <script src> of a BotID-style challenge:
// /<uuid>/<uuid>/.../c.js.
var challengeSrc = regexp.MustCompile(`(?i)<script\b[^>]*\ssrc\s*=\s*["']([^"']*/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/[^"']*\.js[^"']*)["']`)

// findScript fetches PageURL and returns the challenge script's absolute
// URL from its <script src>.
func (p *Provider) findScript(ctx context.Context) (string, error) {
	if p.opts.PageURL == "" {
		return "", errors.New("SCRIPT_URL=auto needs SCRIPT_PAGE_URL, the page that loads the challenge script")
	}
	if p.opts.FetchPage == nil {
		return "", errors.New("no fetcher configured for SCRIPT_PAGE_URL")
	}
	page, err := p.opts.FetchPage(ctx, p.opts.PageURL)
	if err != nil {
		return "", err
	}
	m := challengeSrc.FindStringSubmatch(page)
	if m == nil {
		return "", fmt.Errorf("the page %s has no <script src> of the challenge's shape (/<uuid>/<uuid>/…/c.js)", p.opts.PageURL)
	}
	base, err := url.Parse(p.opts.PageURL)
	if err != nil {
		return "", fmt.Errorf("SCRIPT_PAGE_URL: %w", err)
	}
	ref, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil {
		return "", fmt.Errorf("the challenge <script src> %q: %w", utils.Clip(m[1], 200), err)
	}
	found := base.ResolveReference(ref).String()
	p.opts.Logger.Info("x-is-human script found on the page", "script_url", found, "page", p.opts.PageURL)
	return found, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// randomValue is what reference gateways send when the script cannot run:
// 64 random hex digits.
func randomValue() string { return utils.RandomString(utils.HexDigits, 64) }
