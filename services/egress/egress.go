// Package egress spreads upstream traffic over the outbound proxies of
// PROXY_URL, one at a time, so that a proxy list means the same to every
// back door.
package egress

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Pool sends upstream traffic through one proxy until it fails (a 403, 407
// or 429, or a connection error); it then cools down while the next takes
// over. It is safe for concurrent use.
type Pool struct {
	proxies  []*proxy
	cooldown time.Duration
	logger   *slog.Logger
	// Now is the clock (tests set it); nil means time.Now.
	Now func() time.Time
	// OnFailure, when set, is told the label of a proxy put in cooldown.
	OnFailure func(label string)

	mu     sync.Mutex
	active int
}

type proxy struct {
	url       *url.URL
	label     string
	coolUntil time.Time
	lastError string
}

// State is what /ready shows of one proxy.
type State struct {
	Label      string
	Active     bool
	Available  bool
	CoolingFor time.Duration
	LastError  string
}

// NewPool returns a pool of the given proxies, used in order.
func NewPool(proxies []*url.URL, cooldown time.Duration, logger *slog.Logger) *Pool {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Pool{cooldown: cooldown, logger: logger}
	for _, u := range proxies {
		p.proxies = append(p.proxies, &proxy{url: u, label: Label(u)})
	}
	return p
}

// Label names a proxy without its credentials: scheme://host:port.
func Label(u *url.URL) string { return u.Scheme + "://" + u.Host }

func (p *Pool) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// pick returns the proxy for a new request: the active one unless it is
// cooling down, else the next available one (which becomes active), else,
// with every proxy cooling down, the one that recovers first.
func (p *Pool) pick() *proxy {
	e, _ := p.pickAvailable()
	return e
}

// pickAvailable is pick, and whether the proxy it returns is available.
func (p *Pool) pickAvailable() (*proxy, bool) {
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
			return p.proxies[j], true
		}
	}
	soonest := p.proxies[0]
	for _, e := range p.proxies[1:] {
		if e.coolUntil.Before(soonest.coolUntil) {
			soonest = e
		}
	}
	return soonest, false
}

// report records the outcome of a request through e.
func (p *Pool) report(ctx context.Context, e *proxy, resp *http.Response, err error, exempt func(*http.Response) bool) {
	var cause string
	switch {
	case err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled):
		cause = err.Error()
	case err == nil && exempt != nil && exempt(resp):
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

// pinKey carries the proxy chosen for a request to Proxy.
type pinKey struct{}

// Proxy is the transport's proxy function: the proxy Transport chose for
// the request, or the pool's pick for a request that did not go through
// it.
func (p *Pool) Proxy(req *http.Request) (*url.URL, error) {
	if e, ok := req.Context().Value(pinKey{}).(*proxy); ok {
		return e.url, nil
	}
	return p.pick().url, nil
}

// Transport wraps next (whose proxy function is p.Proxy) so each request's
// outcome is reported to the pool. exempt spares the proxy the cooldown for
// answers that are not its fault (a Vercel checkpoint, an API's 429). A
// request that never reached its proxy is resent through the next one, if
// its body allows: callers without retries never see a dead proxy while a
// live one is listed. A pinned request stays on its proxy.
func (p *Pool) Transport(next http.RoundTripper, exempt func(*http.Response) bool) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		ctx := req.Context()
		if e, pinned := ctx.Value(pinKey{}).(*proxy); pinned {
			resp, err := next.RoundTrip(req)
			p.report(ctx, e, resp, err, exempt)
			return resp, err
		}
		e := p.pick()
		for tries := 1; ; tries++ {
			out := req.WithContext(context.WithValue(ctx, pinKey{}, e))
			resp, err := next.RoundTrip(out)
			p.report(ctx, e, resp, err, exempt)
			if err == nil || !unreached(err) || tries == len(p.proxies) || ctx.Err() != nil {
				return resp, err
			}
			again, ok := p.pickAvailable()
			if !ok || again == e {
				return resp, err
			}
			if req.Body != nil && req.Body != http.NoBody {
				if req.GetBody == nil {
					return resp, err
				}
				body, gerr := req.GetBody()
				if gerr != nil {
					return resp, err
				}
				req = req.Clone(ctx)
				req.Body = body
			}
			e = again
		}
	})
}

// unreached reports whether err says the request never reached its proxy
// (no connection to it, or no TLS with it), so that nothing was sent on.
func unreached(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "proxyconnect"
}

// Pin picks the proxy for a unit of work (an upstream attempt and the
// checkpoint solving it may need) and returns ctx carrying it, with its
// label: every request made with the returned context goes out through
// that proxy, so that a cookie bound to the proxy's IP is sent from it.
func (p *Pool) Pin(ctx context.Context) (context.Context, string) {
	e := p.pick()
	return context.WithValue(ctx, pinKey{}, e), e.label
}

// State is the pool's state, proxy by proxy, in order.
func (p *Pool) State() []State {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	out := make([]State, len(p.proxies))
	for i, e := range p.proxies {
		cooling := max(e.coolUntil.Sub(now), 0)
		out[i] = State{Label: e.label, Active: i == p.active, Available: cooling == 0, CoolingFor: cooling, LastError: e.lastError}
	}
	return out
}

// Available reports whether the proxy labelled label may take requests.
func (p *Pool) Available(label string) bool {
	for _, s := range p.State() {
		if s.Label == label {
			return s.Available
		}
	}
	return false
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
