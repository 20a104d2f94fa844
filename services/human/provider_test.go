package human

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const autoPage = `<!doctype html><html><head>
<script src="/_next/static/chunks/main-app.js" async></script>
<script src="/149e9513-01fa-4fb0-aad4-566afd725d1b/2d206a39-8ed7-437e-a3be-862e0f06eea3/a-4-a/c.js?i=0&amp;v=3&amp;h=cursor.com" async></script>
</head><body></body></html>`

// SCRIPT_URL=auto: the page is fetched like a navigation, the challenge's
// <script src> is resolved against it, and the script runs as that URL.
func TestProviderFindsTheScriptOnThePage(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.RequestURI()+" "+r.Header.Get("Sec-Fetch-Dest")+" "+r.Header.Get("User-Agent"))
		mu.Unlock()
		if r.URL.Path == "/chat" {
			_, _ = w.Write([]byte(autoPage))
			return
		}
		_, _ = w.Write([]byte(`window.V_C = [function () { return Promise.resolve({src: document.scripts[0].src, host: location.host}); }];`))
	}))
	defer srv.Close()
	headers := DefaultBrowser.Headers()
	var logs strings.Builder
	p := NewProvider(Options{ScriptURL: AutoScriptURL, PageURL: srv.URL + "/chat",
		Fetch: HTTPFetcher(srv.Client(), headers), FetchPage: PageFetcher(srv.Client(), headers),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	v, err := p.Value(context.Background())
	require.NoError(t, err)
	want := srv.URL + "/149e9513-01fa-4fb0-aad4-566afd725d1b/2d206a39-8ed7-437e-a3be-862e0f06eea3/a-4-a/c.js?i=0&v=3&h=cursor.com"
	host := strings.TrimPrefix(srv.URL, "http://")
	assert.Equal(t, `{"src":"`+want+`","host":"`+host+`"}`, v)
	mu.Lock()
	assert.Equal(t, []string{
		"/chat document " + DefaultBrowser.UserAgent,
		strings.TrimPrefix(want, srv.URL) + " script " + DefaultBrowser.UserAgent,
	}, seen)
	mu.Unlock()
	assert.Contains(t, logs.String(), "x-is-human script found on the page")
	st := p.LastEvaluation()
	assert.True(t, st.OK)
	assert.Equal(t, want, st.ScriptURL)
	assert.WithinDuration(t, time.Now(), st.At, time.Minute)
}

func TestProviderAutoWithoutTheScriptOnThePage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`<html><script src="/app.js"></script></html>`))
	}))
	defer srv.Close()
	p := NewProvider(Options{ScriptURL: AutoScriptURL, PageURL: srv.URL, Fetch: HTTPFetcher(srv.Client(), nil), Backoff: time.Hour})
	res, _ := p.Check(context.Background(), "", EvalOptions{})
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "has no <script src> of the challenge's shape")
}

// A failed evaluation is reported by LastEvaluation and logged with the
// globals the script missed.
func TestProviderReportsAFailedEvaluation(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`window.V_C = [async function () { return new WebTransport("x"); }];`))
	}))
	defer srv.Close()
	var logs strings.Builder
	var mu sync.Mutex
	p := NewProvider(Options{ScriptURL: srv.URL + "/c.js", Fetch: HTTPFetcher(srv.Client(), nil), Backoff: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))})
	assert.True(t, p.LastEvaluation().At.IsZero(), "nothing ran yet")
	v, err := p.Value(context.Background())
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{64}$`, v, "the fallback value")
	st := p.LastEvaluation()
	assert.False(t, st.OK)
	assert.Contains(t, st.Error, "WebTransport is not defined")
	assert.Equal(t, []string{"WebTransport"}, st.Misses)
	assert.Equal(t, srv.URL+"/c.js", st.ScriptURL)
	h := p.Health()
	assert.Equal(t, "script", h.Mode)
	assert.True(t, h.Evaluated)
	assert.False(t, h.OK)
	assert.Equal(t, []string{"WebTransport"}, h.Missing)
	assert.Contains(t, h.Error, "WebTransport is not defined")
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logs.String(), "missing_globals=[WebTransport]")
}

type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func TestProfiles(t *testing.T) {
	for _, b := range Profiles {
		t.Run(b.Name, func(t *testing.T) {
			got, err := ProfileByName(strings.ToUpper(b.Name))
			require.NoError(t, err)
			assert.Equal(t, b.Name, got.Name)
			assert.Equal(t, b, b.withDefaults(), "a profile is complete")
			h := b.Headers()
			v := b.MajorVersion()
			assert.Contains(t, b.UserAgent, "Chrome/"+v+".0.0.0")
			assert.True(t, strings.HasPrefix(b.FullVersion, v+"."))
			assert.Equal(t, b.UserAgent, h.Get("User-Agent"))
			assert.Equal(t, `"Chromium";v="`+v+`", "Not-A.Brand";v="24", "Google Chrome";v="`+v+`"`, h.Get("Sec-Ch-Ua"))
			assert.Equal(t, `"`+b.UAPlatform+`"`, h.Get("Sec-Ch-Ua-Platform"))
			assert.Equal(t, "?0", h.Get("Sec-Ch-Ua-Mobile"))
			assert.True(t, strings.HasPrefix(h.Get("Accept-Language"), b.Languages[0]+","))
			mac := strings.Contains(b.UserAgent, "Macintosh")
			assert.Equal(t, mac, b.Platform == "MacIntel" && b.UAPlatform == "macOS")
			assert.Equal(t, mac, strings.Contains(b.GLRenderer, "Apple"), "the GPU fits the platform")
		})
	}
	_, err := ProfileByName("netscape")
	assert.ErrorContains(t, err, "use one of chrome-macos, chrome-windows, chrome-windows-intel")
}

func TestZoneAgrees(t *testing.T) {
	ny := DefaultBrowser // America/New_York
	winter := time.Date(2026, 1, 15, 12, 0, 0, 0, time.FixedZone("EST", -5*3600))
	ok, err := ny.ZoneAgrees(winter)
	require.NoError(t, err)
	assert.True(t, ok, "same offset in January")
	ok, err = ny.ZoneAgrees(winter.In(time.UTC))
	require.NoError(t, err)
	assert.False(t, ok)
	ny.TimeZone = "Nowhere/Special"
	_, err = ny.ZoneAgrees(winter)
	assert.Error(t, err)
}

// With EmptyFallback a request that has no computed value at hand gets
// ErrFallback at once (a failed script) or after Wait (a slow one), never
// a made-up value.
func TestProviderEmptyFallback(t *testing.T) {
	cases := []struct {
		name    string
		script  string
		maxWait time.Duration
	}{
		{"the script throws", `window.V_C = [async function () { throw new Error("no"); }];`, 5 * time.Second},
		{"the script never settles", `window.V_C = [function () { return new Promise(function () {}); }];`, 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(tc.script))
			}))
			defer srv.Close()
			p := NewProvider(Options{ScriptURL: srv.URL + "/c.js", Fetch: HTTPFetcher(srv.Client(), nil), Backoff: time.Hour,
				Wait: 300 * time.Millisecond, Budget: time.Second, EmptyFallback: true})
			start := time.Now()
			v, err := p.Value(context.Background())
			assert.ErrorIs(t, err, ErrFallback)
			assert.Empty(t, v)
			assert.Less(t, time.Since(start), tc.maxWait)
			// Let the background evaluation end before the server closes.
			require.Eventually(t, func() bool { return !p.LastEvaluation().At.IsZero() }, 5*time.Second, 10*time.Millisecond)
		})
	}
}
