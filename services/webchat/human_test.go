package webchat

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/cursortest"
	"cursor2api/services/human"
	"cursor2api/services/upstream"
)

// challengeScript reads browser globals and answers with a value derived
// from them, so the test can tell a computed header from a fallback.
const challengeScript = `
var src = document.currentScript.src; // null once the script has run, as in Chrome
window.V_C = [function () {
  var gl = document.createElement("canvas").getContext("webgl");
  var dbg = gl.getExtension("WEBGL_debug_renderer_info");
  return new Promise(function (resolve) {
    setTimeout(function () {
      resolve({b: navigator.userAgent.indexOf("Chrome") > 0, v: src.slice(-4), e: gl.getParameter(dbg.UNMASKED_VENDOR_WEBGL), n: crypto.getRandomValues(new Uint8Array(4)).length});
    }, 10);
  });
}];`

func TestXIsHumanFromTheScript(t *testing.T) {
	var scriptHits atomic.Int64
	script := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scriptHits.Add(1)
		_, _ = w.Write([]byte(challengeScript))
	}))
	t.Cleanup(script.Close)

	var mu sync.Mutex
	forbidFirst := true
	up := cursortest.NewServer(t, func(n int, req cursortest.Request) cursortest.Response {
		mu.Lock()
		defer mu.Unlock()
		if req.Header.Get("x-is-human") == "" {
			return cursortest.Response{Status: 403, Body: `{"error":"Access denied"}`}
		}
		if forbidFirst && n == 100 {
			forbidFirst = false
			return cursortest.Response{Status: 403, Body: `{"error":"Access denied"}`}
		}
		return cursortest.Text(nil, "ok")
	})
	provider := human.NewProvider(human.Options{
		Mode: human.Mode{Kind: "script"}, ScriptURL: script.URL + "/c.js", TTL: time.Minute, Budget: 5 * time.Second,
		Fetch: human.HTTPFetcher(script.Client(), BrowserHeaders("Mozilla/5.0 Chrome/142.0.0.0")),
	})
	client := &Client{HTTP: up.Client(), URL: up.URL, UserAgent: "Mozilla/5.0 Chrome/142.0.0.0", IdleTimeout: 5 * time.Second,
		Human: provider, Logger: slog.New(slog.DiscardHandler)}

	// 100 concurrent requests share one evaluation.
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := client.Stream(context.Background(), hiRequest, func(upstream.Delta) error { return nil })
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, provider.Evaluations())
	assert.EqualValues(t, 1, scriptHits.Load())
	reqs := up.Requests()
	require.Len(t, reqs, 100)
	want := `{"b":true,"v":"c.js","e":"Google Inc. (NVIDIA)","n":4}`
	for _, r := range reqs {
		assert.Equal(t, want, r.Header.Get("x-is-human"))
	}

	// A 403 drops the value: the retry carries a freshly computed one.
	_, err := client.Stream(context.Background(), hiRequest, func(upstream.Delta) error { return nil })
	require.NoError(t, err)
	assert.EqualValues(t, 2, provider.Evaluations())
	reqs = up.Requests()
	require.Len(t, reqs, 102)
	assert.Equal(t, want, reqs[101].Header.Get("x-is-human"))
	assert.True(t, strings.HasPrefix(reqs[101].Header.Get("x-is-human"), `{"b":true`))
}

// hiRequest is the smallest conversation.
var hiRequest = upstream.Request{Model: "m/x", Messages: []models.Turn{{Role: models.RoleUser, Text: "hi"}}}
