package webchat

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"cursor2api/models"
	"cursor2api/services/cursortest"
	"cursor2api/services/egress"
	"cursor2api/services/vercel"
)

const checkpointUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36"

// noLeaks checks, after the test's servers are closed, that the test left
// no goroutine behind.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// testClock is a settable clock.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.Unix(1_780_000_000, 0)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// checkpointClient is a client of up with a checkpoint keeper posing as
// the same browser (keeperUA) as the client (ua), on the clock clk.
func checkpointClient(t *testing.T, up *cursortest.Server, ua, keeperUA string, clk *testClock, mod func(*vercel.Options)) *Client {
	opts := vercel.Options{
		HTTP: up.Client(), Headers: BrowserHeaders(keeperUA),
		PageURL: up.URL + "/", SolveURL: up.URL + vercel.SolvePath, Now: clk.Now, Attempts: 2,
	}
	if mod != nil {
		mod(&opts)
	}
	c, _ := retryClient(t, up, StaticHuman("h"))
	c.URL = up.URL + "/api/chat"
	c.UserAgent = ua
	c.Checkpoint = vercel.New(opts)
	return c
}

func TestCheckpointPassed(t *testing.T) {
	noLeaks(t)
	for _, variant := range []cursortest.CheckpointVariant{cursortest.CheckpointChallenge, cursortest.CheckpointDenied} {
		t.Run(map[cursortest.CheckpointVariant]string{cursortest.CheckpointChallenge: "429 with token", cursortest.CheckpointDenied: "403 access denied"}[variant], func(t *testing.T) {
			clk := newTestClock()
			up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hello")))
			cp := up.EnableCheckpoint(cursortest.CheckpointOptions{Variant: variant, Now: clk.Now})
			c := checkpointClient(t, up, checkpointUA, checkpointUA, clk, nil)

			text, err := collectText(c, context.Background())
			require.NoError(t, err)
			assert.Equal(t, "hello", text)
			st := cp.Stats()
			assert.Equal(t, 1, st.Challenged)
			assert.Equal(t, 1, st.Solved)
			assert.Equal(t, 1, st.Passed)
			if variant == cursortest.CheckpointDenied {
				assert.Equal(t, 1, st.Pages, "the challenge came from the page")
			}

			// The kept cookie lets the next turn straight through.
			_, err = collectText(c, context.Background())
			require.NoError(t, err)
			assert.Equal(t, 1, cp.Stats().Solved)
			assert.Equal(t, 2, cp.Stats().Passed)
			reqs := up.Requests()
			require.Len(t, reqs, 2)
			assert.Contains(t, reqs[1].Header.Get("Cookie"), "_vcrcs=1.")
		})
	}
}

func TestCheckpointExpiredCookieSolvedAgain(t *testing.T) {
	noLeaks(t)
	site, mine := newTestClock(), newTestClock()
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hello")))
	cp := up.EnableCheckpoint(cursortest.CheckpointOptions{TTL: time.Hour, Now: site.Now})
	c := checkpointClient(t, up, checkpointUA, checkpointUA, mine, nil)
	_, err := collectText(c, context.Background())
	require.NoError(t, err)

	// The site's clock runs past the cookie's lifetime while the
	// gateway's still holds it valid: the site asks again, and the
	// gateway solves again and gets its answer.
	site.Advance(61 * time.Minute)
	text, err := collectText(c, context.Background())
	require.NoError(t, err)
	assert.Equal(t, "hello", text)
	assert.Equal(t, 2, cp.Stats().Challenged)
	assert.Equal(t, 2, cp.Stats().Solved)
}

func TestCheckpointRefreshedBeforeExpiry(t *testing.T) {
	noLeaks(t)
	clk := newTestClock()
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hello")))
	cp := up.EnableCheckpoint(cursortest.CheckpointOptions{TTL: time.Hour, Now: clk.Now})
	c := checkpointClient(t, up, checkpointUA, checkpointUA, clk, nil)
	_, err := collectText(c, context.Background())
	require.NoError(t, err)
	clk.Advance(58 * time.Minute)
	_, err = collectText(c, context.Background())
	require.NoError(t, err)
	st := cp.Stats()
	assert.Equal(t, 1, st.Challenged, "the cookie was refreshed before the site asked again")
	assert.Equal(t, 2, st.Solved)
	assert.Equal(t, 1, st.Pages)
}

func TestCheckpointCookieBoundToUserAgent(t *testing.T) {
	noLeaks(t)
	clk := newTestClock()
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hello")))
	cp := up.EnableCheckpoint(cursortest.CheckpointOptions{Now: clk.Now})
	// The keeper solves as another browser than the chat requests pose as:
	// its cookie never lets them through.
	other := strings.Replace(checkpointUA, "Chrome/140", "Chrome/139", 1)
	c := checkpointClient(t, up, checkpointUA, other, clk, nil)
	_, err := collectText(c, context.Background())
	var e *models.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, http.StatusServiceUnavailable, e.Status)
	assert.Equal(t, "vercel_checkpoint", e.Code)
	assert.Contains(t, e.Message, "still asked for the checkpoint")
	assert.Equal(t, maxCheckpointPasses, cp.Stats().Solved, "each pass solved once, then the turn gave up")
	assert.Equal(t, maxCheckpointPasses+1, cp.Stats().Challenged)
	assert.Empty(t, up.Requests(), "no chat request got through")
}

func TestCheckpointNotPassed(t *testing.T) {
	noLeaks(t)
	for _, variant := range []cursortest.CheckpointVariant{cursortest.CheckpointChallenge, cursortest.CheckpointDenied} {
		clk := newTestClock()
		up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hello")))
		cp := up.EnableCheckpoint(cursortest.CheckpointOptions{Variant: variant, Now: clk.Now})
		cp.Refuse(true)
		c := checkpointClient(t, up, checkpointUA, checkpointUA, clk, nil)
		_, err := collectText(c, context.Background())
		var e *models.Error
		require.True(t, errors.As(err, &e), "%v", err)
		assert.Equal(t, http.StatusServiceUnavailable, e.Status)
		assert.Equal(t, models.KindAPI, e.Kind)
		assert.Equal(t, "vercel_checkpoint", e.Code)
		for _, want := range []string{"Vercel's security checkpoint", "CURSOR_COOKIE=_vcrcs=", "refused the solution"} {
			assert.Contains(t, e.Message, want)
		}
		assert.NotContains(t, e.Message, "<", "no HTML is forwarded")
		assert.Equal(t, 2, cp.Stats().Refused, "Attempts bounds the tries")

		// Within the keeper's backoff the next turn fails at once.
		_, err = collectText(c, context.Background())
		require.ErrorAs(t, err, &e)
		assert.Equal(t, http.StatusServiceUnavailable, e.Status)
		assert.Equal(t, 2, cp.Stats().Refused)
	}
}

func TestCheckpointOffKeepsTheRateLimitAnswer(t *testing.T) {
	noLeaks(t)
	clk := newTestClock()
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hello")))
	up.EnableCheckpoint(cursortest.CheckpointOptions{Now: clk.Now})
	c, _ := retryClient(t, up, StaticHuman("h"))
	_, err := collectText(c, context.Background())
	var e *models.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, http.StatusTooManyRequests, e.Status)
	assert.Contains(t, e.Message, "CURSOR_COOKIE")
	assert.Contains(t, e.Message, "HTML page: Vercel Security Checkpoint")
}

// A 403 with nothing behind it on the page is the bot check's: the old
// answer (refresh x-is-human, retry once) stands.
func TestCheckpointDeniedWithoutCheckpoint(t *testing.T) {
	noLeaks(t)
	clk := newTestClock()
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Response{Status: 403, Body: `{"error":"Access denied"}`}))
	human := &countingHuman{}
	c := checkpointClient(t, up, checkpointUA, checkpointUA, clk, nil)
	c.Human = human
	_, err := collectText(c, context.Background())
	var e *models.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, "upstream_forbidden", e.Code)
	assert.Len(t, up.Requests(), 2)
	assert.EqualValues(t, 2, human.invalidated.Load())
	st := c.Checkpoint.State()
	require.Len(t, st, 1)
	assert.True(t, st[0].NoCheckpoint)
}

func TestCheckpointCookieWithManualCookie(t *testing.T) {
	noLeaks(t)
	clk := newTestClock()
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hello")))
	up.EnableCheckpoint(cursortest.CheckpointOptions{Now: clk.Now})
	c := checkpointClient(t, up, checkpointUA, checkpointUA, clk, nil)
	c.Cookie = "a=b; _vcrcs=manual"
	_, err := collectText(c, context.Background())
	require.NoError(t, err)
	cookie := up.Requests()[0].Header.Get("Cookie")
	assert.Contains(t, cookie, "a=b")
	assert.Regexp(t, `^_vcrcs=1\.`, cookie, "the kept cookie is sent first")
	assert.NotContains(t, cookie, "manual", "the kept cookie replaces CURSOR_COOKIE's")

	h := http.Header{}
	c2 := &Client{Cookie: "a=b; _vcrcs=manual"}
	assert.Empty(t, c2.setCookie(context.Background(), h, vercel.Direct))
	assert.Equal(t, "a=b; _vcrcs=manual", h.Get("Cookie"), "without a kept cookie CURSOR_COOKIE goes as is")
}

// forwardingProxy is a loopback HTTP proxy that passes requests on to up,
// naming itself in X-Forwarded-For: the fake checkpoint binds its cookie
// to that address, as Vercel binds it to the IP.
func forwardingProxy(t *testing.T, name string, up *cursortest.Server) *httptest.Server {
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, err := http.NewRequestWithContext(r.Context(), r.Method, up.URL+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		out.Header.Set("X-Forwarded-For", name)
		resp, err := up.Client().Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(p.Close)
	return p
}

func TestCheckpointCookiePerEgress(t *testing.T) {
	noLeaks(t)
	clk := newTestClock()
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hello")))
	cp := up.EnableCheckpoint(cursortest.CheckpointOptions{Now: clk.Now})
	a, b := forwardingProxy(t, "10.0.0.1", up), forwardingProxy(t, "10.0.0.2", up)
	ua, err := url.Parse(a.URL)
	require.NoError(t, err)
	ub, err := url.Parse(b.URL)
	require.NoError(t, err)
	pool := egress.NewPool([]*url.URL{ua, ub}, time.Minute, slog.New(slog.DiscardHandler))
	inner, err := NewTransportFunc(FingerprintOff, pool.Proxy, nil)
	require.NoError(t, err)
	httpClient := &http.Client{Transport: pool.Transport(inner, vercel.IsChallenge)}
	keeper := vercel.New(vercel.Options{HTTP: httpClient, Headers: BrowserHeaders(checkpointUA),
		PageURL: "http://cursor.invalid/", SolveURL: "http://cursor.invalid" + vercel.SolvePath, Now: clk.Now})
	c, _ := retryClient(t, up, StaticHuman("h"))
	c.HTTP, c.URL, c.UserAgent, c.Checkpoint, c.Egress = httpClient, "http://cursor.invalid/api/chat", checkpointUA, keeper, pool

	_, err = collectText(c, context.Background())
	require.NoError(t, err)
	assert.True(t, keeper.Valid(egress.Label(ua)))
	assert.False(t, keeper.Valid(egress.Label(ub)))
	assert.True(t, pool.State()[0].Available, "the checkpoint does not cool the proxy down")

	a.Close() // the first proxy goes away: the retry leaves through the second
	_, err = collectText(c, context.Background())
	require.NoError(t, err)
	assert.True(t, keeper.Valid(egress.Label(ub)), "the second egress passed the checkpoint for itself")
	assert.Equal(t, 2, cp.Stats().Solved)
	reqs := up.Requests()
	require.Len(t, reqs, 2)
	assert.NotEqual(t, reqs[0].Header.Get("Cookie"), reqs[1].Header.Get("Cookie"), "each egress sends its own cookie")
	labels := []string{}
	for _, s := range keeper.State() {
		labels = append(labels, s.Egress)
	}
	assert.ElementsMatch(t, []string{egress.Label(ua), egress.Label(ub)}, labels)
}

// A checkpoint page without a token, while the site's page asks for no
// checkpoint, stays the rate-limit answer it was.
func TestCheckpointPageWithoutToken(t *testing.T) {
	noLeaks(t)
	clk := newTestClock()
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Response{Status: 429, Header: map[string]string{"Retry-After": "7"},
		Body: `<!DOCTYPE html><html><head><title>Vercel Security Checkpoint</title></head></html>`}))
	c := checkpointClient(t, up, checkpointUA, checkpointUA, clk, nil)
	_, err := collectText(c, context.Background())
	var e *models.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, http.StatusTooManyRequests, e.Status)
	assert.Equal(t, 7, e.RetryAfter)
	assert.Len(t, up.Requests(), 1)
	assert.True(t, c.Checkpoint.State()[0].NoCheckpoint)
}
