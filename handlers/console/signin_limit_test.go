package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSignInAttemptsAreLimited: after MaxFailedSignIns wrong keys from one
// address in a window, by the form or as a Bearer token, every sign-in
// from it is a 429 with Retry-After and the form saying to wait, the
// right key included, until the window ends. Other addresses and signed-in
// sessions go on.
func TestSignInAttemptsAreLimited(t *testing.T) {
	const attacker, other = "192.0.2.7", "198.51.100.9"
	cases := []struct {
		name     string
		failBy   string        // how the MaxFailedSignIns wrong keys were sent: "form" or "bearer"
		by       string        // the next attempt: "form", "bearer" or "session"
		from     string        // its address
		xff      string        // its X-Forwarded-For (no proxy is trusted)
		right    bool          // with ADMIN_KEY
		later    time.Duration // the clock moved on before it
		want     int
		signedIn bool
	}{
		{name: "form: one more wrong key", failBy: "form", by: "form", from: attacker, want: http.StatusTooManyRequests},
		{name: "form: then the right key", failBy: "form", by: "form", from: attacker, right: true, want: http.StatusTooManyRequests},
		{name: "form, then the right bearer", failBy: "form", by: "bearer", from: attacker, right: true, want: http.StatusTooManyRequests},
		{name: "bearer: one more wrong key", failBy: "bearer", by: "bearer", from: attacker, want: http.StatusTooManyRequests},
		{name: "bearer, then the right key by the form", failBy: "bearer", by: "form", from: attacker, right: true, want: http.StatusTooManyRequests},
		{name: "a forged X-Forwarded-For", failBy: "form", by: "form", from: attacker, xff: "203.0.113.1", right: true, want: http.StatusTooManyRequests},
		{name: "another address", failBy: "form", by: "form", from: other, right: true, want: http.StatusSeeOther},
		{name: "another address, bearer", failBy: "bearer", by: "bearer", from: other, right: true, want: http.StatusOK, signedIn: true},
		{name: "a session signed in before", failBy: "form", by: "session", from: attacker, want: http.StatusOK, signedIn: true},
		{name: "the window over", failBy: "form", by: "form", from: attacker, right: true, later: SignInWindow + time.Second, want: http.StatusSeeOther},
		{name: "the window over, bearer", failBy: "bearer", by: "bearer", from: attacker, right: true, later: SignInWindow + time.Second, want: http.StatusOK, signedIn: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
			h, cs := newConsole(t, Options{Now: func() time.Time { return now }})
			session := cs.token(now.Add(time.Hour))
			try := func(by, from, xff, key string) *httptest.ResponseRecorder {
				var req *http.Request
				switch by {
				case "form":
					req = httptest.NewRequest("POST", "/console/login", strings.NewReader(url.Values{"admin_key": {key}}.Encode()))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				case "bearer":
					req = httptest.NewRequest("GET", "/console", nil)
					req.Header.Set("Authorization", "Bearer "+key)
				case "session":
					req = httptest.NewRequest("GET", "/console", nil)
					req.Header.Set("Cookie", CookieName+"="+session)
				}
				req.RemoteAddr = from + ":40000"
				if xff != "" {
					req.Header.Set("X-Forwarded-For", xff)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				return w
			}
			for i := range MaxFailedSignIns {
				w := try(tc.failBy, attacker, "", fmt.Sprintf("guess-%d", i))
				require.NotEqual(t, http.StatusTooManyRequests, w.Code, "wrong key %d of %d", i+1, MaxFailedSignIns)
				signedOut(t, w.Body.String())
			}
			now = now.Add(tc.later)
			key := "guess-again"
			if tc.right {
				key = admin
			}
			w := try(tc.by, tc.from, tc.xff, key)
			require.Equal(t, tc.want, w.Code, w.Body.String())
			if tc.want == http.StatusTooManyRequests {
				retry, err := strconv.Atoi(w.Header().Get("Retry-After"))
				require.NoError(t, err, "Retry-After: %q", w.Header().Get("Retry-After"))
				assert.True(t, retry >= 1 && retry <= int(SignInWindow/time.Second), "%d", retry)
				signedOut(t, w.Body.String())
				assert.Contains(t, w.Body.String(), "wait "+strconv.Itoa(retry)+" seconds")
				assert.Empty(t, w.Result().Cookies(), "no session")
			}
			if tc.signedIn {
				assert.Contains(t, w.Body.String(), `id="traffic"`)
			}
			if tc.want == http.StatusSeeOther {
				require.Len(t, w.Result().Cookies(), 1, "signed in")
			}
		})
	}
}

// TestSignInAttemptsTableIsBounded: the addresses kept are bounded; those
// the table has no room for share one count, so that many addresses
// cannot guess without a bound either.
func TestSignInAttemptsTableIsBounded(t *testing.T) {
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	a := newAttempts(3, time.Minute, 5)
	for i := range 100 {
		a.Fail(fmt.Sprintf("10.0.0.%d", i), now)
	}
	assert.LessOrEqual(t, len(a.clients), 5+1, "the table and the shared count")
	assert.Positive(t, a.Wait("10.9.9.9", now), "an address without room shares a count that is spent")
	assert.Zero(t, a.Wait("10.0.0.0", now), "kept, one failure")
	// Once their windows are over, the addresses make room again.
	now = now.Add(time.Minute + time.Second)
	assert.Zero(t, a.Wait("10.9.9.9", now))
	a.Fail("10.9.9.9", now)
	assert.LessOrEqual(t, len(a.clients), 5+1)
	_, kept := a.clients["10.9.9.9"]
	assert.True(t, kept, "room made of the windows that ended")
}
