package human

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
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
	return func(ctx context.Context, url string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return "", fmt.Errorf("script request: %w", err)
		}
		for k, v := range headers {
			req.Header[k] = v
		}
		req.Header.Set("Accept", "*/*")
		req.Header.Set("Sec-Fetch-Dest", "script")
		req.Header.Set("Sec-Fetch-Mode", "no-cors")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Del("Content-Type")
		req.Header.Del("Priority")
		resp, err := client.Do(req)
		if err != nil {
			return "", fmt.Errorf("fetching the challenge script: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("fetching the challenge script: status %d", resp.StatusCode)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxScriptBytes+1))
		if err != nil {
			return "", fmt.Errorf("reading the challenge script: %w", err)
		}
		if len(body) > maxScriptBytes {
			return "", fmt.Errorf("the challenge script is over %d bytes", maxScriptBytes)
		}
		return string(body), nil
	}
}

// Options configure a Provider.
type Options struct {
	Mode      Mode
	ScriptURL string
	Browser   Browser
	Fetch     Fetcher
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
	Logger  *slog.Logger
}

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
}

// NewProvider returns a Provider; defaults fill the zero durations.
func NewProvider(opts Options) *Provider {
	if opts.TTL <= 0 {
		opts.TTL = 5 * time.Minute
	}
	if opts.Budget <= 0 {
		opts.Budget = 15 * time.Second
	}
	if opts.Wait <= 0 {
		opts.Wait = opts.Budget
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Browser.UserAgent == "" {
		opts.Browser = DefaultBrowser
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

// Value returns the header value to send ("" for none).
func (p *Provider) Value(ctx context.Context) (string, error) {
	switch p.opts.Mode.Kind {
	case "off":
		return "", nil
	case "static":
		return p.opts.Mode.Static, nil
	case "random":
		return randomValue(), nil
	}
	now := time.Now()
	if e := p.cached.Load(); e != nil && now.Before(e.expires) {
		if now.After(e.refreshAt) {
			p.refresh()
		}
		return e.value, nil
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
		value, err := p.compute(ctx)
		cancel()
		p.mu.Lock()
		if err != nil {
			p.failedUntil = time.Now().Add(p.opts.Backoff)
			p.opts.Logger.Warn("x-is-human script failed; using the fallback value", "error", err, "retry_in", p.opts.Backoff)
		} else {
			now := time.Now()
			p.cached.Store(&entry{value: value, refreshAt: now.Add(p.opts.TTL * 4 / 5), expires: now.Add(p.opts.TTL)})
			p.opts.Logger.Debug("x-is-human value computed", "bytes", len(value))
		}
		p.inflight = nil
		p.mu.Unlock()
		close(done)
	}()
	return done
}

func (p *Provider) compute(ctx context.Context) (string, error) {
	script, err := p.opts.Fetch(ctx, p.opts.ScriptURL)
	if err != nil {
		return "", err
	}
	return Evaluate(ctx, script, p.opts.ScriptURL, p.opts.Browser, p.opts.Budget)
}

// randomValue is what reference gateways send when the script cannot run:
// 64 random hex digits.
func randomValue() string { return utils.RandomString(utils.HexDigits, 64) }
