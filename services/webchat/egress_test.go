package webchat

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
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

func TestEgressPoolFailover(t *testing.T) {
	a := newFakeProxy(t, "a", http.StatusTooManyRequests)
	b := newFakeProxy(t, "b", http.StatusOK)
	now := time.Unix(1_700_000_000, 0)
	pool := NewEgressPool([]*url.URL{a.url(t), b.url(t)}, time.Minute, nil)
	pool.Now = func() time.Time { return now }
	var failures []string
	pool.OnFailure = func(label string) { failures = append(failures, label) }
	inner, err := NewTransportFunc(FingerprintOff, pool.Proxy, nil)
	require.NoError(t, err)
	client := &http.Client{Transport: pool.Transport(inner), Timeout: 10 * time.Second}

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
	assert.Equal(t, []string{ProxyLabel(a.url(t))}, failures)
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
	assert.True(t, pool.Available(ProxyLabel(a.url(t))))

	b.Close() // b now refuses connections
	via, _ = get()
	assert.Empty(t, via, "a connection error")
	assert.False(t, pool.State()[1].Available)
	via, status = get()
	assert.Equal(t, "via a to upstream.invalid", via, "back to a")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, []string{ProxyLabel(a.url(t)), ProxyLabel(b.url(t))}, failures)
	assert.EqualValues(t, 2, a.hits.Load())
}

func TestEgressPoolAllCooling(t *testing.T) {
	a := newFakeProxy(t, "a", http.StatusForbidden)
	b := newFakeProxy(t, "b", http.StatusForbidden)
	now := time.Unix(1_700_000_000, 0)
	pool := NewEgressPool([]*url.URL{a.url(t), b.url(t)}, time.Minute, nil)
	pool.Now = func() time.Time { return now }
	inner, err := NewTransportFunc(FingerprintOff, pool.Proxy, nil)
	require.NoError(t, err)
	client := &http.Client{Transport: pool.Transport(inner), Timeout: 10 * time.Second}
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

func TestProxyLabelHidesCredentials(t *testing.T) {
	u, err := url.Parse("http://user:secret@proxy.example:3128")
	require.NoError(t, err)
	assert.Equal(t, "http://proxy.example:3128", ProxyLabel(u))
}
