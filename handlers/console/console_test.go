package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/readiness"
	"cursor2api/services/state"
	"cursor2api/services/usage"
)

const admin = "adm-0123456789abcdef"

func newConsole(t *testing.T, o Options) (http.Handler, *Console) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	o.AdminKey = admin
	cs := New(o)
	r := gin.New()
	// As the gateway's router without TRUSTED_PROXIES: the peer is the client.
	require.NoError(t, r.SetTrustedProxies(nil))
	cs.Routes(r.Group(Prefix))
	return r, cs
}

func do(h http.Handler, method, target, body string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// signedOut is what a page shows to whoever has not signed in: the form
// and nothing of the panels.
func signedOut(t *testing.T, body string) {
	t.Helper()
	assert.Contains(t, body, `id="signin"`)
	for _, panel := range []string{`id="traffic"`, `id="health"`, `id="config"`, "key_", "LOG_LEVEL"} {
		assert.NotContains(t, body, panel)
	}
}

func TestSignIn(t *testing.T) {
	h, cs := newConsole(t, Options{Settings: []Setting{{Name: "LOG_LEVEL", Value: "info"}}})
	good := cs.token(time.Now().Add(time.Hour))
	cases := []struct {
		name     string
		hdr      map[string]string
		signedIn bool
	}{
		{"nothing", nil, false},
		{"bearer", map[string]string{"Authorization": "Bearer " + admin}, true},
		{"wrong bearer", map[string]string{"Authorization": "Bearer " + admin + "x"}, false},
		{"session", map[string]string{"Cookie": CookieName + "=" + good}, true},
		{"the key as cookie", map[string]string{"Cookie": CookieName + "=" + admin}, false},
		{"tampered", map[string]string{"Cookie": CookieName + "=" + strings.Replace(good, ".", "0.", 1)}, false},
		{"expired", map[string]string{"Cookie": CookieName + "=" + cs.token(time.Now().Add(-time.Second))}, false},
		{"another admin key's", map[string]string{"Cookie": CookieName + "=" + New(Options{AdminKey: "other"}).token(time.Now().Add(time.Hour))}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := do(h, "GET", "/console", "", tc.hdr)
			assert.Equal(t, http.StatusOK, w.Code)
			assert.Contains(t, w.Header().Get("Content-Security-Policy"), "default-src 'none'")
			assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
			if tc.signedIn {
				assert.Contains(t, w.Body.String(), `id="traffic"`)
				assert.Contains(t, w.Body.String(), "LOG_LEVEL")
			} else {
				signedOut(t, w.Body.String())
			}
		})
	}
}

func TestLoginForm(t *testing.T) {
	h, _ := newConsole(t, Options{})
	form := url.Values{"admin_key": {admin}}.Encode()

	w := do(h, "POST", "/console/login", url.Values{"admin_key": {"nope"}}.Encode(), map[string]string{"Origin": "http://example.com"})
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Empty(t, w.Result().Cookies())
	signedOut(t, w.Body.String())

	w = do(h, "POST", "/console/login", form, map[string]string{"Origin": "http://evil.example"})
	assert.Equal(t, http.StatusForbidden, w.Code, "another site's form")
	assert.Empty(t, w.Result().Cookies())

	w = do(h, "POST", "/console/login", form, map[string]string{"Origin": "http://example.com"})
	require.Equal(t, http.StatusSeeOther, w.Code)
	cookies := w.Result().Cookies()
	require.Len(t, cookies, 1)
	c := cookies[0]
	assert.True(t, c.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
	assert.False(t, c.Secure, "plain HTTP")
	assert.NotContains(t, c.Value, admin)
	w = do(h, "GET", "/console", "", map[string]string{"Cookie": c.Name + "=" + c.Value})
	assert.Contains(t, w.Body.String(), `id="traffic"`)

	w = do(h, "POST", "/console/login", form, map[string]string{"X-Forwarded-Proto": "https"})
	require.Len(t, w.Result().Cookies(), 1)
	assert.True(t, w.Result().Cookies()[0].Secure, "behind a TLS proxy")

	w = do(h, "POST", "/console/logout", "", map[string]string{"Origin": "http://example.com", "Cookie": c.Name + "=" + c.Value})
	require.Equal(t, http.StatusSeeOther, w.Code)
	out := w.Result().Cookies()
	require.Len(t, out, 1)
	assert.Empty(t, out[0].Value)
	assert.Negative(t, out[0].MaxAge)
}

func TestTrafficPanels(t *testing.T) {
	l := usage.New(state.NewQueue(state.NewMemory(nil), 0, nil), 0, nil)
	now := time.Now()
	l.Add(usage.Record{Time: now, KeyID: "key_aaaa", Door: "openai", Model: "gpt-5", Usage: usage.Counts{Requests: 3, InputTokens: 1200, OutputTokens: 34, CachedTokens: 7}})
	l.Add(usage.Record{Time: now, KeyID: "key_bbbb", Door: "anthropic", Model: "claude", Usage: usage.Counts{Requests: 2, Errors: 1, InputTokens: 50}})
	l.Add(usage.Record{Time: now.Add(-48 * time.Hour), KeyID: "key_aaaa", Door: "openai", Model: "gpt-5", Usage: usage.Counts{Requests: 10, InputTokens: 100000}})
	l.Flush(t.Context())
	errs := &Errors{}
	errs.Add(ErrorEntry{Time: now, Status: 401, Door: "openai", Message: "bad key sk-live-abcdef1234567890 in Authorization: Bearer abc.def"})
	ready := func(context.Context) readiness.Report {
		return readiness.Report{Ready: true, Config: "web chat", Keys: []readiness.Key{{Key: "crsr_f00d", State: "cooling", CoolingFor: "42s"}},
			State: &readiness.State{Engine: "memory", Status: "ok"}}
	}
	h, _ := newConsole(t, Options{Usage: l, Errors: errs, Ready: ready, ClientKeys: []string{"key_cccc"}, Version: "v9.9",
		Keys: func() []KeyView {
			return []KeyView{{ID: "key_aaaa", Name: "alice", Limits: []Limit{{Name: "rpm", Used: 3, Max: 60}}}}
		}})
	body := do(h, "GET", "/console", "", map[string]string{"Authorization": "Bearer " + admin}).Body.String()
	row := func(id string) string {
		i := strings.Index(body, id)
		require.GreaterOrEqual(t, i, 0, "%s in the page", id)
		j := strings.Index(body[i:], "</tr>")
		return body[i : i+j]
	}
	// last 24 h: 5 requests, 1 error, 1250 input; 30 days: 15 requests
	assert.Regexp(t, `>5</td><td class="n">1</td><td class="n">1,250</td><td class="n">34</td><td class="n">7</td>`, row(`id="total-24h"`))
	assert.Regexp(t, `>15</td><td class="n">1</td><td class="n">101,250</td>`, row(`id="total-30d"`))
	assert.Regexp(t, `(?s)alice</td>\s*<td class="n">3</td>.*<td class="n">13</td>.*rpm 3/60 \(5%\)`, row(`data-name="key_aaaa"`))
	assert.Regexp(t, `<td class="n">2</td><td class="n">1</td><td class="n">50</td>`, row(`data-name="key_bbbb"`))
	assert.Contains(t, row(`data-name="key_cccc"`), `<td class="n">0</td>`, "a configured key with no traffic")
	assert.Contains(t, row(`data-name="anthropic"`), `<td class="n">2</td>`)
	assert.Contains(t, row(`data-name="claude"`), `<td class="n">2</td>`)
	assert.Contains(t, body, "<svg")
	assert.Contains(t, body, "crsr_f00d")
	assert.Contains(t, body, "resting for 42s")
	assert.Contains(t, body, "v9.9")
	assert.Contains(t, body, "Bearer [redacted]")
	assert.NotContains(t, body, "abcdef1234567890")
	assert.NotContains(t, body, "abc.def")
}

func TestErrorsKeepTheLast100(t *testing.T) {
	var es Errors
	for i := range 250 {
		es.Add(ErrorEntry{Status: i})
	}
	got := es.List()
	require.Len(t, got, MaxErrors)
	assert.Equal(t, 249, got[0].Status)
	assert.Equal(t, 150, got[99].Status)
}

func TestScrub(t *testing.T) {
	for _, tc := range []struct{ in, gone string }{
		{"upstream said: invalid key sk-proj-AbCdEf0123456789xyz", "AbCdEf0123456789"},
		{"Authorization: Bearer eyJhbGciOiJ.x.y refused", "eyJhbGciOiJ"},
		{"dial http://bob:hunter2@proxy:8080 failed", "hunter2"},
		{`{"api_key": "plainsecret"}`, "plainsecret"},
		{"cookie=WorkosCursorSessionToken%3Dabc failed", "WorkosCursorSessionToken%3Dabc"},
		{"hex 0123456789abcdef0123456789abcdef01 here", "0123456789abcdef0123456789abcdef01"},
	} {
		got := Scrub(tc.in)
		assert.NotContains(t, got, tc.gone, tc.in)
		assert.Contains(t, got, "[redacted]", tc.in)
	}
	assert.Equal(t, "model not found: gpt-9", Scrub("model not found: gpt-9"))
	assert.LessOrEqual(t, len(Scrub(strings.Repeat("a b ", 1000))), errorClip+3)
}

func TestSettingsOfMasksSecrets(t *testing.T) {
	type cfg struct {
		APIKeys   []string          `env:"API_KEY" envSeparator:","`
		Admin     string            `env:"ADMIN_KEY"`
		Empty     string            `env:"CLOUD_WEBHOOK_SECRET"`
		Cookie    string            `env:"CURSOR_COOKIE"`
		Proxy     string            `env:"PROXY_URL"`
		Proxies   []string          `env:"EGRESS_PROXIES"`
		StateURL  string            `env:"STATE_URL"`
		Port      int               `env:"PORT"`
		Timeout   time.Duration     `env:"TIMEOUT"`
		Map       map[string]string `env:"MODEL_MAP"`
		Internal  string            `env:"-"`
		unexposed string
	}
	got := SettingsOf(cfg{APIKeys: []string{"sk-a", "sk-b"}, Admin: "adm", Cookie: "c=1", Proxy: "http://u:pw1@p:1",
		Proxies: []string{"socks5://u2:pw2@q:2", "http://r:3"}, StateURL: "redis://:pw3@redis:6379/0", Port: 8002,
		Timeout: time.Minute, Map: map[string]string{"a": "b"}, Internal: "x", unexposed: "y"})
	m := map[string]string{}
	for _, s := range got {
		m[s.Name] = s.Value
	}
	assert.Equal(t, map[string]string{"API_KEY": Masked, "ADMIN_KEY": Masked, "CLOUD_WEBHOOK_SECRET": "(not set)", "CURSOR_COOKIE": Masked,
		"PROXY_URL": "http://%E2%80%A2%E2%80%A2%E2%80%A2%E2%80%A2@p:1", "EGRESS_PROXIES": "socks5://%E2%80%A2%E2%80%A2%E2%80%A2%E2%80%A2@q:2,http://r:3",
		"STATE_URL": "redis://%E2%80%A2%E2%80%A2%E2%80%A2%E2%80%A2@redis:6379/0", "PORT": "8002", "TIMEOUT": "1m0s", "MODEL_MAP": "a=b"}, m)
}

// TestKeyNamesFromTheLedger: a key the keys file no longer names shows
// the name its records were kept under (its latest); the file's name
// comes first.
func TestKeyNamesFromTheLedger(t *testing.T) {
	l := usage.New(state.NewQueue(state.NewMemory(nil), 0, nil), 0, nil)
	now := time.Now()
	for _, r := range []usage.Record{
		{Time: now.Add(-72 * time.Hour), KeyID: "key_dddd", KeyName: "dora-before"},
		{Time: now.Add(-2 * time.Hour), KeyID: "key_dddd", KeyName: "dora"},
		{Time: now, KeyID: "key_dddd"}, // a record older than names, or of API_KEY: no name
		{Time: now, KeyID: "key_aaaa", KeyName: "alice-before"},
	} {
		r.Door, r.Model, r.Usage = "openai", "gpt-5", usage.Counts{Requests: 1}
		l.Add(r)
	}
	l.Flush(t.Context())
	h, _ := newConsole(t, Options{Usage: l, Keys: func() []KeyView { return []KeyView{{ID: "key_aaaa", Name: "alice"}} }})
	body := do(h, "GET", "/console", "", map[string]string{"Authorization": "Bearer " + admin}).Body.String()
	assert.Regexp(t, `data-name="key_dddd"><td><code>key_dddd</code> dora</td>`, body)
	assert.Regexp(t, `data-name="key_aaaa"><td><code>key_aaaa</code> alice</td>`, body)
	assert.NotContains(t, body, "-before")
}
