package handlers

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/config"
	"cursor2api/services"
	"cursor2api/services/cloud/cloudtest"
	"cursor2api/services/native/nativetest"
)

// forwardProxy is a loopback forward proxy for http:// targets: it sends
// each request on to the absolute URL it names, streaming the answer,
// and counts the paths it forwarded.
type forwardProxy struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func newForwardProxy(t *testing.T) *forwardProxy {
	p := &forwardProxy{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			p.mu.Lock()
			p.paths = append(p.paths, r.In.URL.Path)
			p.mu.Unlock()
			r.Out.URL, r.Out.Host = r.In.URL, r.In.Host
		},
		FlushInterval: -1,
	}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Full duplex, as a real forward proxy is: otherwise net/http
		// discards what is left of the request body when the answer's
		// headers come first (a Connect stream's do), racing the copy
		// of that body upstream and cutting the answer (about 1 run in 50).
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			panic(err)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *forwardProxy) forwarded() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.paths...)
}

// deadAddress is a loopback address nothing listens on.
func deadAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// PROXY_URL lists several proxies: the native back door leaves through
// them all, one at a time, as the web chat does. A dead first proxy cools
// down and the next takes over; /ready says which.
func TestNativeLeavesThroughTheProxyPool(t *testing.T) {
	live := newForwardProxy(t)
	dead := "http://" + deadAddress(t)
	s, up := newNativeStackWith(t, nativetest.Options{}, map[string]string{
		"CURSOR_TRANSPORT": "sse", "PROXY_URL": dead + "," + live.URL, "PROXY_COOLDOWN": "300",
	})
	for range 2 {
		r := s.chat(t, `{"model":"composer-2","messages":[{"role":"user","content":"hi"}]}`)
		require.Equal(t, http.StatusOK, r.status, r.body)
		assert.Equal(t, "ok", gjson.Get(r.body, "choices.0.message.content").String(), r.body)
	}
	require.NotEmpty(t, up.Runs(), "the runs reached Cursor")
	assert.Contains(t, live.forwarded(), "/agent.v1.AgentService/RunSSE", "the run left through the live proxy")
	assert.Contains(t, live.forwarded(), "/aiserver.v1.BidiService/BidiAppend")

	ready := s.do(t, http.MethodGet, "/ready", "")
	egress := gjson.Get(ready.body, "egress")
	require.Len(t, egress.Array(), 2, ready.body)
	assert.False(t, egress.Get("0.available").Bool(), "the dead proxy cools down: %s", ready.body)
	assert.Contains(t, egress.Get("0.last_error").String(), "connection refused", ready.body)
	assert.True(t, egress.Get("1.active").Bool(), ready.body)
	assert.True(t, egress.Get("1.available").Bool(), ready.body)
}

// Cursor's own 429 (a Connect error: here the version gate's
// resource_exhausted) is the key's or the client's matter: the proxy it
// came through stays in use.
func TestNativeRefusalDoesNotCoolTheProxy(t *testing.T) {
	live := newForwardProxy(t)
	s, _ := newNativeStackWith(t, nativetest.Options{MinClientVersion: "999"}, map[string]string{
		"CURSOR_TRANSPORT": "sse", "PROXY_URL": live.URL,
	})
	r := s.chat(t, `{"model":"composer-2","messages":[{"role":"user","content":"hi"}]}`)
	require.GreaterOrEqual(t, r.status, 400, r.body)
	assert.Contains(t, r.body, "Update Required", "Cursor's answer came through the proxy")
	require.NotEmpty(t, live.forwarded())

	ready := s.do(t, http.MethodGet, "/ready", "")
	assert.True(t, gjson.Get(ready.body, "egress.0.available").Bool(), "Cursor's refusal is not the proxy's failure: %s", ready.body)
	assert.Empty(t, gjson.Get(ready.body, "egress.0.last_error").String(), ready.body)
}

// Cloud Agents' API calls leave through PROXY_URL too.
func TestCloudLeavesThroughTheProxy(t *testing.T) {
	live := newForwardProxy(t)
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	env := cloudEnv(fake, "PROXY_URL", live.URL, "CURSOR_API_URL", "http://127.0.0.1:9/never", "STATE_URL", "memory:")
	cfg, err := config.FromMap(env)
	require.NoError(t, err)
	gw, err := services.FromConfig(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.NotEmpty(t, gw.Cloud.ModelNames(ctx), "the fake's models, through the proxy")
	assert.NotEmpty(t, live.forwarded(), "the Cloud Agents API was called through PROXY_URL")
}
