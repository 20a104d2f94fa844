package human

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// challenge is a stand-in for the upstream's script: it reads the browser
// globals a real one fingerprints and answers through window.V_C[0] with a
// Promise that settles after timers and a crypto.subtle digest.
const challenge = `
(function () {
  var src = document.currentScript.src; // null once the script has run, as in Chrome
  var canvas = document.createElement("canvas");
  var gl = canvas.getContext("webgl");
  var dbg = gl.getExtension("WEBGL_debug_renderer_info");
  var ctx = document.createElement("canvas").getContext("2d");
  ctx.fillText("cursor", 2, 2);
  var iframe = document.createElement("iframe");
  document.body.appendChild(iframe);
  var rnd = crypto.getRandomValues(new Uint8Array(8));
  window.V_C = [function () {
    return new Promise(function (resolve) {
      setTimeout(function () {
        crypto.subtle.digest("SHA-256", new TextEncoder().encode(navigator.userAgent)).then(function (buf) {
          resolve({
            b: btoa(String.fromCharCode.apply(null, new Uint8Array(buf))).length,
            v: src,
            e: gl.getParameter(dbg.UNMASKED_RENDERER_WEBGL),
            s: ctx.canvas.toDataURL().slice(0, 22),
            d: rnd.length + (iframe.contentWindow !== window && iframe.contentWindow.top === window ? 1 : 0),
            vr: navigator.userAgentData.brands[0].brand + "/" + location.hostname + "/" + screen.width,
            t: performance.now() >= 50
          });
        });
      }, 50);
    });
  }];
})();
`

const scriptURL = "https://cursor.com/aaaa/bbbb/a-4-a/c.js?i=0&v=3&h=cursor.com"

func TestEvaluateRunsTheChallenge(t *testing.T) {
	out, err := Evaluate(context.Background(), challenge, scriptURL, DefaultBrowser, 5*time.Second)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, float64(44), got["b"], "base64 of a SHA-256 digest")
	assert.Equal(t, scriptURL, got["v"])
	assert.Equal(t, DefaultBrowser.GLRenderer, got["e"])
	assert.Equal(t, "data:image/png;base64,", got["s"])
	assert.Equal(t, float64(9), got["d"])
	assert.Equal(t, "Chromium/cursor.com/1920", got["vr"])
	assert.Equal(t, true, got["t"], "timers advance the clock the script sees")
}

func TestEvaluateFailures(t *testing.T) {
	cases := []struct {
		name, script string
		budget       time.Duration
		want         string
	}{
		{"throws", `throw new Error("boom")`, time.Second, "boom"},
		{"endless loop", `while (true) {}`, 200 * time.Millisecond, ErrTimeout.Error()},
		{"endless loop in entry", `window.V_C = [function () { for (;;) {} }]`, 200 * time.Millisecond, ErrTimeout.Error()},
		{"no entry point", `var x = 1`, time.Second, "no window.V_C[0]"},
		{"rejects", `window.V_C = [function () { return Promise.reject("nope") }]`, time.Second, "rejected: nope"},
		{"never settles", `window.V_C = [function () { return new Promise(function () {}) }]`, time.Second, "never settled"},
		{"interval forever", `window.V_C = [function () { return new Promise(function () { setInterval(function () {}, 1) }) }]`, 3 * time.Second, "timer"},
		{"syntax error", `function (`, time.Second, "running challenge script"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Evaluate(context.Background(), tc.script, scriptURL, DefaultBrowser, tc.budget)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Less(t, time.Since(start), tc.budget+2*time.Second, "the budget bounds the evaluation")
		})
	}
}

func TestEvaluateHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := Evaluate(ctx, `while (true) {}`, scriptURL, DefaultBrowser, time.Minute)
	require.ErrorIs(t, err, context.Canceled)
}

// scriptServer serves the challenge and counts the downloads.
func scriptServer(t *testing.T, body string) (*httptest.Server, *atomic.Int64, *http.Header) {
	var hits atomic.Int64
	var mu sync.Mutex
	seen := http.Header{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mu.Lock()
		seen = r.Header.Clone()
		mu.Unlock()
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits, &seen
}

// newProvider's budget is a bound, not a target: a loaded two-core
// machine under -race has taken over 3 s for the small challenge.
func newProvider(t *testing.T, url string, ttl time.Duration) *Provider {
	return NewProvider(Options{
		Mode: Mode{Kind: "script"}, ScriptURL: url, TTL: ttl, Budget: 30 * time.Second,
		Fetch: HTTPFetcher(http.DefaultClient, http.Header{"User-Agent": {DefaultBrowser.UserAgent}}),
	})
}

func TestProviderSharesOneEvaluation(t *testing.T) {
	srv, hits, seen := scriptServer(t, challenge)
	p := newProvider(t, srv.URL+"/c.js", time.Minute)
	var wg sync.WaitGroup
	values := make([]string, 100)
	for i := range values {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := p.Value(context.Background())
			assert.NoError(t, err)
			values[i] = v
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, p.Evaluations())
	assert.EqualValues(t, 1, hits.Load())
	for _, v := range values {
		assert.Equal(t, values[0], v)
		assert.True(t, strings.HasPrefix(v, `{"b":44,`), v)
	}
	assert.Equal(t, "script", seen.Get("Sec-Fetch-Dest"))
	assert.Equal(t, "no-cors", seen.Get("Sec-Fetch-Mode"))
}

func TestProviderRefreshesAfterTTLAndInvalidate(t *testing.T) {
	srv, _, _ := scriptServer(t, challenge)
	// The value must stay fresh from the first call to the second (a
	// stalled runner can take a good part of a second between them), and
	// the test then sleeps past 80% of the TTL, no longer.
	const ttl = time.Second
	p := newProvider(t, srv.URL+"/c.js", ttl)
	ctx := context.Background()
	_, err := p.Value(ctx)
	computed := time.Now() // the value was cached before Value returned
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Evaluations())

	// Cached: no new evaluation.
	_, _ = p.Value(ctx)
	assert.EqualValues(t, 1, p.Evaluations())

	// Past 80% of the TTL a request gets the cached value and starts a
	// background refresh.
	time.Sleep(time.Until(computed.Add(ttl*4/5)) + 20*time.Millisecond)
	_, _ = p.Value(ctx)
	require.Eventually(t, func() bool { return p.Evaluations() == 2 }, 3*time.Second, 10*time.Millisecond)

	// A 403 upstream invalidates: the next request computes again.
	require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.inflight == nil }, 3*time.Second, 10*time.Millisecond)
	p.Invalidate()
	_, _ = p.Value(ctx)
	assert.EqualValues(t, 3, p.Evaluations())
}

func TestProviderFallsBackWhenTheScriptFails(t *testing.T) {
	for _, script := range []string{`throw new Error("x")`, `while(true){}`} {
		srv, _, _ := scriptServer(t, script)
		p := NewProvider(Options{Mode: Mode{Kind: "script"}, ScriptURL: srv.URL, Budget: 300 * time.Millisecond, Backoff: time.Hour,
			Fetch: HTTPFetcher(http.DefaultClient, nil)})
		v, err := p.Value(context.Background())
		require.NoError(t, err)
		assert.Regexp(t, `^[0-9a-f]{64}$`, v, "random fallback")
		// Within the backoff the script is not run again.
		_, _ = p.Value(context.Background())
		assert.EqualValues(t, 1, p.Evaluations())
	}
}

func TestProviderModes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		mode Mode
		want string // regexp
	}{
		{Mode{Kind: "off"}, `^$`},
		{Mode{Kind: "random"}, `^[0-9a-f]{64}$`},
		{Mode{Kind: "static", Static: "abc"}, `^abc$`},
		{Mode{Kind: "script"}, `^[0-9a-f]{64}$`}, // no SCRIPT_URL: nothing to run
	} {
		p := NewProvider(Options{Mode: tc.mode, Fetch: func(context.Context, string) (string, error) { return "", errors.New("unused") }})
		v, err := p.Value(ctx)
		require.NoError(t, err)
		assert.Regexp(t, tc.want, v, tc.mode.Kind)
		assert.EqualValues(t, 0, p.Evaluations())
	}
}

func BenchmarkEvaluateCold(b *testing.B) {
	for b.Loop() {
		if _, err := Evaluate(context.Background(), challenge, scriptURL, DefaultBrowser, 5*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValueCached(b *testing.B) {
	p := NewProvider(Options{Mode: Mode{Kind: "script"}, ScriptURL: scriptURL, TTL: time.Hour,
		Fetch: func(context.Context, string) (string, error) { return challenge, nil }})
	if _, err := p.Value(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Value(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// TestProviderReady: the fixed modes are always at hand; the script's
// value is at hand once evaluated and until it expires, not before.
func TestProviderReady(t *testing.T) {
	for _, m := range []Mode{{Kind: "off"}, {Kind: "random"}, {Kind: "static", Static: "abc"}} {
		_, ok := NewProvider(Options{Mode: m}).Ready()
		assert.True(t, ok, m.Kind)
	}
	srv, _, _ := scriptServer(t, challenge)
	p := newProvider(t, srv.URL+"/c.js", time.Minute)
	_, ok := p.Ready()
	assert.False(t, ok, "nothing evaluated yet: Value must wait")
	want, err := p.Value(context.Background())
	require.NoError(t, err)
	got, ok := p.Ready()
	assert.True(t, ok)
	assert.Equal(t, want, got, "the cached value")
}
