package handlers

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/handlers/console"
	"cursor2api/services/cursortest"
	"cursor2api/services/state"
	"cursor2api/services/usage"
)

// TestConsoleIsOffWithoutAdminKey: no ADMIN_KEY, no console: a 404 in
// OpenAI's shape, as the usage endpoint.
func TestConsoleIsOffWithoutAdminKey(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "sk-alice"}, script(t, []string{"ok"}))
	for _, path := range []string{"/console", "/console/login", "/console/console.css"} {
		r := s.do(t, http.MethodGet, path, "")
		assertAPIError(t, r, http.StatusNotFound, "invalid_request_error", "", "not_found", "ADMIN_KEY")
	}
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func postForm(t *testing.T, target, origin string, form url.Values, cookie *http.Cookie) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// TestConsoleThroughTheGateway: the sign-in form passes the router's
// guard from the console's own origin and not from another site's; a
// failed request shows among the last errors, scrubbed.
func TestConsoleThroughTheGateway(t *testing.T) {
	reply := func(n int, _ cursortest.Request) cursortest.Response {
		return cursortest.Response{Status: http.StatusBadRequest, Body: `{"error":"refused: token sk-upstream-0123456789abcdef is not allowed"}`}
	}
	s := newStack(t, map[string]string{"API_KEY": "sk-alice", "ADMIN_KEY": "adm-secret-1"}, reply)
	s.chat(t, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer sk-alice")

	resp, _ := postForm(t, s.URL+"/console/login", "http://evil.example", url.Values{"admin_key": {"adm-secret-1"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "another site's form")
	assert.Empty(t, resp.Cookies())

	resp, body := postForm(t, s.URL+"/console/login", s.URL, url.Values{"admin_key": {"adm-secret-1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Len(t, resp.Cookies(), 1)
	cookie := resp.Cookies()[0]

	req, err := http.NewRequest(http.MethodGet, s.URL+"/console", nil)
	require.NoError(t, err)
	req.AddCookie(cookie)
	got, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(got.Body)
	got.Body.Close()
	page := string(b)
	assert.Contains(t, page, `id="errors"`)
	assert.Contains(t, page, "error-row")
	for _, secret := range []string{"0123456789abcdef", "adm-secret-1", "sk-alice"} {
		assert.False(t, strings.Contains(page, secret), "the page shows %q", secret)
	}
	assert.Contains(t, page, "ADMIN_KEY</code></td><td><code>"+console.Masked)
}

// TestConsoleShowsNamedKeysAndTheirLimits: a key of API_KEYS_FILE shows on
// the console by its name, beside its fingerprint, with each limit and how
// much of it the traffic used.
func TestConsoleShowsNamedKeysAndTheirLimits(t *testing.T) {
	file := writeKeys(t, "keys:\n  - {name: alice, key: sk-alice, limits: {rpm: 5, concurrent: 2}}\n")
	s := newStack(t, map[string]string{"API_KEYS_FILE": file, "ADMIN_KEY": "adm-secret-1"}, script(t, []string{"one"}, []string{"two"}))
	for range 2 {
		r := s.chat(t, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer sk-alice")
		require.Equal(t, http.StatusOK, r.status, r.body)
	}
	req, err := http.NewRequest(http.MethodGet, s.URL+"/console", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer adm-secret-1")
	got, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(got.Body)
	got.Body.Close()
	page := string(b)
	require.Equal(t, http.StatusOK, got.StatusCode, page)
	assert.Contains(t, page, "alice", "the key's name")
	assert.Regexp(t, `rpm 2/5 \(`, page, "the minute's two requests against its limit")
	assert.Contains(t, page, "concurrent 0/2", "no request in flight")
	assert.NotContains(t, page, "sk-alice")
}

// readCounting is a store that counts the ledger's hour reads.
type readCounting struct {
	state.Store
	reads atomic.Int64
}

func (s *readCounting) Counters(ctx context.Context, table, key string) (map[string]int64, error) {
	s.reads.Add(1)
	return s.Store.Counters(ctx, table, key)
}

// TestHandlerRunReadsAheadForTheConsole: the handler's Run has the
// console read the ledger's last 30 days; without ADMIN_KEY, nothing.
func TestHandlerRunReadsAheadForTheConsole(t *testing.T) {
	for _, adminKey := range []string{"admin", ""} {
		store := &readCounting{Store: state.NewMemory(nil)}
		h := New(Options{Usage: usage.New(state.NewQueue(store, 0, nil), 0, nil), AdminKey: adminKey})
		h.Run(t.Context())
		if adminKey == "" {
			assert.Zero(t, store.reads.Load(), "no console, nothing read")
		} else {
			assert.GreaterOrEqual(t, store.reads.Load(), int64(29*24), "the settled hours of 30 days")
		}
	}
}
