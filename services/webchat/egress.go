package webchat

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// EgressPool spreads upstream traffic over outbound proxies one at a time:
// requests stick to the active proxy until it fails (a 403, 407 or 429
// answer, or a connection error), which then cools down for Cooldown
// while the next available proxy takes over. It is safe for concurrent
// use.
type EgressPool struct {
	proxies  []*egress
	cooldown time.Duration
	logger   *slog.Logger
	// Now is the clock (tests set it); nil means time.Now.
	Now func() time.Time
	// OnFailure, when set, is told the label of a proxy put in cooldown.
	OnFailure func(label string)
	// Exempt, when set, spares the proxy the cooldown for an answer that
	// is not its fault (the Vercel checkpoint, which the gateway passes
	// through the same proxy).
	Exempt func(*http.Response) bool

	mu     sync.Mutex
	active int
}

type egress struct {
	url       *url.URL
	label     string
	coolUntil time.Time
	lastError string
}

// EgressState is what /ready shows of one proxy.
type EgressState struct {
	Label      string
	Active     bool
	Available  bool
	CoolingFor time.Duration
	LastError  string
}

// NewEgressPool returns a pool of the given proxies, used in order.
func NewEgressPool(proxies []*url.URL, cooldown time.Duration, logger *slog.Logger) *EgressPool {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &EgressPool{cooldown: cooldown, logger: logger}
	for _, u := range proxies {
		p.proxies = append(p.proxies, &egress{url: u, label: ProxyLabel(u)})
	}
	return p
}

// ProxyLabel names a proxy without its credentials: scheme://host:port.
func ProxyLabel(u *url.URL) string { return u.Scheme + "://" + u.Host }

func (p *EgressPool) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// pick returns the proxy for a new request: the active one unless it is
// cooling down, else the next available one (which becomes active), else,
// with every proxy cooling down, the one that recovers first.
func (p *EgressPool) pick() *egress {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	n := len(p.proxies)
	for i := range n {
		j := (p.active + i) % n
		if !now.Before(p.proxies[j].coolUntil) {
			if j != p.active {
				p.logger.Info("egress proxy switched", "proxy", p.proxies[j].label, "after", p.proxies[p.active].label)
				p.active = j
			}
			return p.proxies[j]
		}
	}
	soonest := p.proxies[0]
	for _, e := range p.proxies[1:] {
		if e.coolUntil.Before(soonest.coolUntil) {
			soonest = e
		}
	}
	return soonest
}

// report records the outcome of a request through e.
func (p *EgressPool) report(ctx context.Context, e *egress, resp *http.Response, err error) {
	var cause string
	switch {
	case err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled):
		cause = err.Error()
	case err == nil && p.Exempt != nil && p.Exempt(resp):
		return
	case err == nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusProxyAuthRequired || resp.StatusCode == http.StatusTooManyRequests):
		cause = resp.Status
	default:
		return
	}
	p.mu.Lock()
	e.coolUntil, e.lastError = p.now().Add(p.cooldown), cause
	p.mu.Unlock()
	p.logger.Warn("egress proxy failed; cooling down", "proxy", e.label, "cooldown", p.cooldown, "error", cause)
	if p.OnFailure != nil {
		p.OnFailure(e.label)
	}
}

// egressKey carries the proxy chosen for a request to Proxy.
type egressKey struct{}

// Proxy is the transport's proxy function: the proxy Transport chose for
// the request, or the pool's pick for a request that did not go through
// it.
func (p *EgressPool) Proxy(req *http.Request) (*url.URL, error) {
	if e, ok := req.Context().Value(egressKey{}).(*egress); ok {
		return e.url, nil
	}
	return p.pick().url, nil
}

// Transport wraps next, a transport whose proxy function is p.Proxy, so
// that every request goes through the pool's pick and its outcome is
// reported to the pool.
func (p *EgressPool) Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		ctx := req.Context()
		e, pinned := ctx.Value(egressKey{}).(*egress)
		if !pinned {
			e = p.pick()
			req = req.WithContext(context.WithValue(ctx, egressKey{}, e))
		}
		resp, err := next.RoundTrip(req)
		p.report(ctx, e, resp, err)
		return resp, err
	})
}

// Pin picks the proxy for a unit of work (an upstream attempt and the
// checkpoint solving it may need) and returns ctx carrying it, with its
// label: every request made with the returned context goes out through
// that proxy, so that a cookie bound to the proxy's IP is sent from it.
func (p *EgressPool) Pin(ctx context.Context) (context.Context, string) {
	e := p.pick()
	return context.WithValue(ctx, egressKey{}, e), e.label
}

// State is the pool's state, proxy by proxy, in order.
func (p *EgressPool) State() []EgressState {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	out := make([]EgressState, len(p.proxies))
	for i, e := range p.proxies {
		cooling := max(e.coolUntil.Sub(now), 0)
		out[i] = EgressState{Label: e.label, Active: i == p.active, Available: cooling == 0, CoolingFor: cooling, LastError: e.lastError}
	}
	return out
}

// Available reports whether the proxy labelled label may take requests.
func (p *EgressPool) Available(label string) bool {
	for _, s := range p.State() {
		if s.Label == label {
			return s.Available
		}
	}
	return false
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
