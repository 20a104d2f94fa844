package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeProxy is a loopback HTTP proxy that answers every request itself
// with its status (which the test changes), naming itself in the body.
type fakeProxy struct {
	*httptest.Server
	name   string
	status atomic.Int32
	hits   atomic.Int32
}

func newFakeProxy(t *testing.T, name string, status int) *fakeProxy {
	p := &fakeProxy{name: name}
	p.status.Store(int32(status))
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		w.WriteHeader(int(p.status.Load()))
		fmt.Fprintf(w, "via %s to %s", p.name, r.URL.Host)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *fakeProxy) url(t *testing.T) *url.URL {
	u, err := url.Parse(p.URL)
	require.NoError(t, err)
	return u
}

func TestPoolFailover(t *testing.T) {
	a := newFakeProxy(t, "a", http.StatusTooManyRequests)
	b := newFakeProxy(t, "b", http.StatusOK)
	now := time.Unix(1_700_000_000, 0)
	pool := NewPool([]*url.URL{a.url(t), b.url(t)}, time.Minute, nil)
	pool.Now = func() time.Time { return now }
	var failures []string
	pool.OnFailure = func(label string) { failures = append(failures, label) }
	client := &http.Client{Transport: pool.Transport(&http.Transport{Proxy: pool.Proxy}, nil), Timeout: 10 * time.Second}

	// get sends one request to a host the proxies never reach and says
	// which proxy answered with which status ("" for a connection error).
	get := func() (via string, status int) {
		resp, err := client.Get("http://upstream.invalid/api/chat")
		if err != nil {
			return "", 0
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body), resp.StatusCode
	}

	via, status := get()
	assert.Equal(t, "via a to upstream.invalid", via, "the first proxy is tried first")
	assert.Equal(t, http.StatusTooManyRequests, status, "the failure reaches the caller (the client's retry policy decides)")
	assert.Equal(t, []string{Label(a.url(t))}, failures)
	state := pool.State()
	assert.False(t, state[0].Available)
	assert.Equal(t, time.Minute, state[0].CoolingFor)
	assert.Contains(t, state[0].LastError, "429")

	via, status = get()
	assert.Equal(t, "via b to upstream.invalid", via, "the next proxy takes over")
	assert.Equal(t, http.StatusOK, status)
	assert.True(t, pool.State()[1].Active)

	now = now.Add(2 * time.Minute) // a has cooled down...
	a.status.Store(http.StatusOK)
	via, _ = get()
	assert.Equal(t, "via b to upstream.invalid", via, "...but requests stick to b until it fails")
	assert.True(t, pool.Available(Label(a.url(t))))

	b.Close() // b now refuses connections
	via, status = get()
	assert.Equal(t, "via a to upstream.invalid", via, "the request that could not reach b goes through a")
	assert.Equal(t, http.StatusOK, status)
	assert.False(t, pool.State()[1].Available)
	assert.True(t, pool.State()[0].Active)
	assert.Equal(t, []string{Label(a.url(t)), Label(b.url(t))}, failures)
	assert.EqualValues(t, 2, a.hits.Load())
}

func TestPoolAllCooling(t *testing.T) {
	a := newFakeProxy(t, "a", http.StatusForbidden)
	b := newFakeProxy(t, "b", http.StatusForbidden)
	now := time.Unix(1_700_000_000, 0)
	pool := NewPool([]*url.URL{a.url(t), b.url(t)}, time.Minute, nil)
	pool.Now = func() time.Time { return now }
	client := &http.Client{Transport: pool.Transport(&http.Transport{Proxy: pool.Proxy}, nil), Timeout: 10 * time.Second}
	get := func() {
		resp, err := client.Get("http://upstream.invalid/")
		require.NoError(t, err)
		resp.Body.Close()
	}
	get() // a fails at t0, cools until t0+60s
	now = now.Add(10 * time.Second)
	get() // b fails at t0+10s, cools until t0+70s
	now = now.Add(51 * time.Second)
	get() // a is back at t0+61s, and fails again: cools until t0+121s
	for _, s := range pool.State() {
		assert.False(t, s.Available, s.Label)
	}
	get()
	assert.EqualValues(t, 2, a.hits.Load())
	assert.EqualValues(t, 2, b.hits.Load(), "with every proxy cooling, the one that recovers first (b) is used")
}

func TestLabelHidesCredentials(t *testing.T) {
	u, err := url.Parse("http://user:secret@proxy.example:3128")
	require.NoError(t, err)
	assert.Equal(t, "http://proxy.example:3128", Label(u))
}

func TestPinnedEgressSticks(t *testing.T) {
	a := newFakeProxy(t, "a", http.StatusOK)
	b := newFakeProxy(t, "b", http.StatusOK)
	pool := NewPool([]*url.URL{a.url(t), b.url(t)}, time.Minute, nil)
	client := &http.Client{Transport: pool.Transport(&http.Transport{Proxy: pool.Proxy}, nil)}
	ctx, label := pool.Pin(context.Background())
	assert.Equal(t, Label(a.url(t)), label)
	a.status.Store(http.StatusForbidden)
	for range 3 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://upstream.invalid/", nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	assert.EqualValues(t, 3, a.hits.Load(), "a pinned context stays on its proxy though it cools down")
	assert.Zero(t, b.hits.Load())
	_, label = pool.Pin(context.Background())
	assert.Equal(t, Label(b.url(t)), label, "a new pin takes the next available proxy")
}

// deadProxy is the URL of a loopback address nothing listens on.
func deadProxy(t *testing.T) *url.URL {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &url.URL{Scheme: "http", Host: l.Addr().String()}
	require.NoError(t, l.Close())
	return u
}

// A request that cannot reach its proxy goes out again through the next
// one, when its body can be sent again and it is not pinned.
func TestUnreachedProxyIsSkipped(t *testing.T) {
	newBody := func() io.Reader { return strings.NewReader(`{"q":1}`) }
	cases := []struct {
		name    string
		request func(ctx context.Context) *http.Request
		pin     bool
		dead    int // dead proxies before the live one
		via     string
	}{
		{name: "a GET", dead: 1, via: "b",
			request: func(ctx context.Context) *http.Request {
				r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://upstream.invalid/", nil)
				return r
			}},
		{name: "a POST whose body can be sent again", dead: 2, via: "b",
			request: func(ctx context.Context) *http.Request {
				r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://upstream.invalid/", newBody())
				return r
			}},
		{name: "a body read once", dead: 1,
			request: func(ctx context.Context) *http.Request {
				r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://upstream.invalid/", io.NopCloser(newBody()))
				return r
			}},
		{name: "a pinned request", dead: 1, pin: true,
			request: func(ctx context.Context) *http.Request {
				r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://upstream.invalid/", nil)
				return r
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeProxy(t, "b", http.StatusOK)
			var proxies []*url.URL
			for range tc.dead {
				proxies = append(proxies, deadProxy(t))
			}
			pool := NewPool(append(proxies, b.url(t)), time.Minute, nil)
			client := &http.Client{Transport: pool.Transport(&http.Transport{Proxy: pool.Proxy}, nil), Timeout: 10 * time.Second}
			ctx := context.Background()
			if tc.pin {
				ctx, _ = pool.Pin(ctx)
			}
			resp, err := client.Do(tc.request(ctx))
			if tc.via == "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "proxyconnect")
				assert.Zero(t, b.hits.Load())
				return
			}
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			assert.Equal(t, "via b to upstream.invalid", string(body))
			for i, s := range pool.State()[:tc.dead] {
				assert.False(t, s.Available, "dead proxy %d cools down", i)
				assert.Contains(t, s.LastError, "connection refused")
			}
			assert.True(t, pool.State()[tc.dead].Active)
		})
	}
}

// With every proxy unreachable, each is tried once and the caller gets
// the error.
func TestEveryProxyUnreached(t *testing.T) {
	pool := NewPool([]*url.URL{deadProxy(t), deadProxy(t)}, time.Minute, nil)
	var inner countingTransport
	inner.next = &http.Transport{Proxy: pool.Proxy}
	client := &http.Client{Transport: pool.Transport(&inner, nil), Timeout: 10 * time.Second}
	_, err := client.Get("http://upstream.invalid/")
	require.Error(t, err)
	assert.EqualValues(t, 2, inner.n.Load(), "each proxy once")
	for _, s := range pool.State() {
		assert.False(t, s.Available)
	}
	_, err = client.Get("http://upstream.invalid/")
	require.Error(t, err)
	assert.EqualValues(t, 3, inner.n.Load(), "with all cooling, one try on the one that recovers first")
}

type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}
