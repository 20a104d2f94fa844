package vercel

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"cursor2api/services/cursortest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a settable clock shared by the keeper and the fake.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Unix(1_780_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

const testUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36"

// fakeSite is the fake web chat behind its checkpoint.
func fakeSite(t *testing.T, clk *clock, opts cursortest.CheckpointOptions) (*cursortest.Server, *cursortest.Checkpoint) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hello")))
	opts.Now = clk.Now
	return up, up.EnableCheckpoint(opts)
}

func newKeeper(up *cursortest.Server, clk *clock, mod func(*Options)) *Keeper {
	opts := Options{
		HTTP:     up.Client(),
		Headers:  http.Header{"User-Agent": {testUA}},
		PageURL:  up.URL + "/",
		SolveURL: up.URL + SolvePath,
		Now:      clk.Now,
	}
	if mod != nil {
		mod(&opts)
	}
	return New(opts)
}

// chat sends a chat request with cookie and ua; it returns the status and
// the challenge token of a refusal.
func chat(t *testing.T, up *cursortest.Server, cookie, ua string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, up.URL+"/api/chat", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("User-Agent", ua)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := up.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(HeaderToken)
}

func TestKeeperPassesTheCheckpoint(t *testing.T) {
	clk := newClock()
	up, cp := fakeSite(t, clk, cursortest.CheckpointOptions{})
	var outcomes []string
	k := newKeeper(up, clk, func(o *Options) {
		o.OnSolve = func(egress, outcome string, _ time.Duration) { outcomes = append(outcomes, egress+":"+outcome) }
	})

	status, token := chat(t, up, "", testUA)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.NotEmpty(t, token)
	assert.Empty(t, k.Cookie(context.Background(), "a"))

	require.NoError(t, k.Solve(context.Background(), "a", "", token))
	cookie := k.Cookie(context.Background(), "a")
	require.True(t, strings.HasPrefix(cookie, CookieName+"=1."), cookie)
	status, _ = chat(t, up, cookie, testUA)
	assert.Equal(t, http.StatusOK, status, "the fake lets the cookie through")
	status, _ = chat(t, up, cookie, strings.Replace(testUA, "Chrome/140", "Chrome/141", 1))
	assert.Equal(t, http.StatusTooManyRequests, status, "the cookie is bound to the User-Agent that solved it")

	// Another egress has no cookie of its own yet.
	assert.Empty(t, k.Cookie(context.Background(), "b"))
	assert.True(t, k.Valid("a"))
	assert.False(t, k.Valid("b"))
	assert.Equal(t, []string{"a:ok"}, outcomes)
	assert.Equal(t, 1, cp.Stats().Solved)

	states := k.State()
	require.Len(t, states, 2)
	assert.Equal(t, "a", states[0].Egress)
	assert.True(t, states[0].HasCookie)
	assert.Equal(t, time.Hour, states[0].ExpiresIn)
	assert.Equal(t, int64(1), states[0].Solves)
	assert.Equal(t, clk.Now(), states[0].LastSolve)
	assert.Positive(t, states[0].LastSolveDuration)
	assert.False(t, states[1].HasCookie)
}

// A token whose payload has more fields than the solver reads is solved;
// its layout is logged once, never its content.
func TestKeeperExtraTokenFields(t *testing.T) {
	clk := newClock()
	up, cp := fakeSite(t, clk, cursortest.CheckpointOptions{ExtraFields: []string{"1", "secretish"}})
	var logs syncBuffer
	k := newKeeper(up, clk, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	for range 2 {
		_, token := chat(t, up, "", testUA)
		require.NotEmpty(t, token)
		require.NoError(t, k.Solve(context.Background(), "a", k.Cookie(context.Background(), "a"), token))
		status, _ := chat(t, up, k.Cookie(context.Background(), "a"), testUA)
		assert.Equal(t, http.StatusOK, status)
	}
	assert.Equal(t, 2, cp.Stats().Solved)
	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, "6 payload fields"), out)
	assert.NotContains(t, out, "secretish", "the token's content is not logged")
}

func TestKeeperFetchesTheChallengeFromThePage(t *testing.T) {
	clk := newClock()
	up, cp := fakeSite(t, clk, cursortest.CheckpointOptions{Variant: cursortest.CheckpointDenied})
	k := newKeeper(up, clk, nil)
	status, token := chat(t, up, "", testUA)
	require.Equal(t, http.StatusForbidden, status)
	require.Empty(t, token)
	require.NoError(t, k.Solve(context.Background(), Direct, "", ""))
	assert.Equal(t, 1, cp.Stats().Pages)
	status, _ = chat(t, up, k.Cookie(context.Background(), ""), testUA)
	assert.Equal(t, http.StatusOK, status)
}

func TestKeeperNoCheckpoint(t *testing.T) {
	clk := newClock()
	var pages atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pages.Add(1)
		_, _ = w.Write([]byte("<html><title>Cursor</title></html>"))
	}))
	defer site.Close()
	var outcomes []string
	k := New(Options{HTTP: site.Client(), PageURL: site.URL, SolveURL: site.URL + SolvePath, Now: clk.Now,
		OnSolve: func(_, outcome string, _ time.Duration) { outcomes = append(outcomes, outcome) }})
	require.ErrorIs(t, k.Solve(context.Background(), Direct, "", ""), ErrNoCheckpoint)
	require.ErrorIs(t, k.Solve(context.Background(), Direct, "", ""), ErrNoCheckpoint)
	assert.EqualValues(t, 1, pages.Load(), "the page is not fetched again while it asked for no checkpoint")
	assert.Equal(t, []string{"no_checkpoint"}, outcomes)
	assert.True(t, k.State()[0].NoCheckpoint)
	assert.Zero(t, k.State()[0].Failures)

	clk.Advance(DefaultBackoff)
	require.ErrorIs(t, k.Solve(context.Background(), Direct, "", ""), ErrNoCheckpoint)
	assert.EqualValues(t, 2, pages.Load(), "looked at again after the backoff")
}

func TestKeeperRefreshesBeforeExpiry(t *testing.T) {
	clk := newClock()
	up, cp := fakeSite(t, clk, cursortest.CheckpointOptions{TTL: time.Hour})
	k := newKeeper(up, clk, func(o *Options) { o.Margin = 5 * time.Minute })
	_, token := chat(t, up, "", testUA)
	require.NoError(t, k.Solve(context.Background(), "a", "", token))
	first := k.Cookie(context.Background(), "a")

	clk.Advance(54 * time.Minute)
	assert.Equal(t, first, k.Cookie(context.Background(), "a"), "not yet within the margin")
	assert.Equal(t, 1, cp.Stats().Solved)

	clk.Advance(2 * time.Minute) // 4 minutes left
	second := k.Cookie(context.Background(), "a")
	assert.NotEqual(t, first, second, "refreshed within the margin")
	assert.Equal(t, 2, cp.Stats().Solved)
	assert.Equal(t, 1, cp.Stats().Pages, "the fresh challenge came from the page")
	status, _ := chat(t, up, second, testUA)
	assert.Equal(t, http.StatusOK, status)

	// A failed refresh keeps the old cookie while it lasts, then drops it.
	cp.Refuse(true)
	clk.Advance(57 * time.Minute)
	assert.Equal(t, second, k.Cookie(context.Background(), "a"))
	clk.Advance(4 * time.Minute)
	assert.Empty(t, k.Cookie(context.Background(), "a"))
	assert.False(t, k.State()[0].HasCookie)
}

func TestKeeperSingleFlight(t *testing.T) {
	clk := newClock()
	up, cp := fakeSite(t, clk, cursortest.CheckpointOptions{Variant: cursortest.CheckpointDenied})
	k := newKeeper(up, clk, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		egress := []string{"a", "b"}[i%2]
		wg.Go(func() { errs <- k.Solve(context.Background(), egress, "", "") })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Equal(t, 2, cp.Stats().Solved, "one solve per egress")
	assert.Equal(t, 2, cp.Stats().Pages)

	// A request that carried the old cookie after another got a new one
	// does not solve again.
	require.NoError(t, k.Solve(context.Background(), "a", "_vcrcs=stale", ""))
	assert.Equal(t, 2, cp.Stats().Solved)
}

func TestKeeperBoundedAttempts(t *testing.T) {
	clk := newClock()
	up, cp := fakeSite(t, clk, cursortest.CheckpointOptions{})
	cp.Refuse(true)
	var outcomes []string
	k := newKeeper(up, clk, func(o *Options) {
		o.Attempts, o.Backoff = 3, time.Minute
		o.OnSolve = func(_, outcome string, _ time.Duration) { outcomes = append(outcomes, outcome) }
	})
	_, token := chat(t, up, "", testUA)
	err := k.Solve(context.Background(), "a", "", token)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused the solution (403)")
	assert.Equal(t, 3, cp.Stats().Refused, "three attempts")
	assert.Equal(t, 2, cp.Stats().Pages, "each attempt after the first with a fresh token")
	assert.Equal(t, []string{"refused"}, outcomes)

	// Within the backoff the failure is answered at once.
	_, token = chat(t, up, "", testUA)
	require.Error(t, k.Solve(context.Background(), "a", "", token))
	assert.Equal(t, 3, cp.Stats().Refused)
	st := k.State()[0]
	assert.Equal(t, int64(1), st.Failures)
	assert.Contains(t, st.LastError, "refused")

	clk.Advance(time.Minute)
	cp.Refuse(false)
	require.NoError(t, k.Solve(context.Background(), "a", "", token))
	assert.Empty(t, k.State()[0].LastError)
}

func TestKeeperBadMACIsRefused(t *testing.T) {
	clk := newClock()
	up, cp := fakeSite(t, clk, cursortest.CheckpointOptions{})
	k := newKeeper(up, clk, func(o *Options) { o.Attempts = 1 })
	_, token := chat(t, up, "", testUA)
	forged := token[:strings.LastIndexByte(token, '.')+1] + strings.Repeat("0", 32)
	_, err := ParseToken(forged)
	require.NoError(t, err, "a client cannot check the MAC")
	err = k.Solve(context.Background(), "a", "", forged)
	require.Error(t, err)
	assert.Equal(t, 1, cp.Stats().Refused)
}

func TestKeeperKnownEgresses(t *testing.T) {
	k := New(Options{Egresses: []string{"http://p2:1", "http://p1:1"}})
	var labels []string
	for _, s := range k.State() {
		labels = append(labels, s.Egress)
		assert.False(t, s.HasCookie)
		assert.Zero(t, s.ExpiresIn)
	}
	assert.Equal(t, []string{"http://p1:1", "http://p2:1"}, labels, "listed before use, in order")
}

func TestKeeperTimeBound(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	k := New(Options{HTTP: hang.Client(), PageURL: hang.URL, SolveURL: hang.URL + SolvePath, Timeout: 200 * time.Millisecond, Attempts: 5})
	start := time.Now()
	err := k.Solve(context.Background(), "a", "", "")
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.Contains(t, err.Error(), "gave up after 200ms")
}

func TestKeeperLeaderLeaves(t *testing.T) {
	clk := newClock()
	up, cp := fakeSite(t, clk, cursortest.CheckpointOptions{})
	k := newKeeper(up, clk, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, token := chat(t, up, "", testUA)
	require.ErrorIs(t, k.Solve(ctx, "a", "", token), context.Canceled)
	assert.Zero(t, k.State()[0].Failures, "a request that left is no failure")
	_, token = chat(t, up, "", testUA)
	require.NoError(t, k.Solve(context.Background(), "a", "", token))
	assert.Equal(t, 1, cp.Stats().Solved)
}

func TestInspect(t *testing.T) {
	page := `<!DOCTYPE html><html><head><title>Vercel Security Checkpoint</title></head></html>`
	cases := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   Verdict
	}{
		{"token header", 429, http.Header{HeaderToken: {"2.1.2.3.4"}, HeaderMitigated: {"challenge"}}, page, Verdict{Challenged, "2.1.2.3.4"}},
		{"403 with token", 403, http.Header{HeaderToken: {"t"}}, "", Verdict{Challenged, "t"}},
		{"mitigated only", 429, http.Header{HeaderMitigated: {"challenge"}}, "", Verdict{Kind: Challenged}},
		{"page only", 429, http.Header{}, page, Verdict{Kind: Challenged}},
		{"token in page", 429, http.Header{}, `<script>window._vcrct="2.9.60.eA.m"</script>`, Verdict{Challenged, "2.9.60.eA.m"}},
		// The page as it may change: other markup and attributes, the
		// token in single quotes, spaces, a mitigated header in capitals.
		{"token in page, single quotes", 429, http.Header{}, `<script nonce="n">var a=1; window._vcrct = '2.9.60.eA.m'; window._vcrcv="2"</script>`,
			Verdict{Challenged, "2.9.60.eA.m"}},
		{"token header among new ones", 429, http.Header{HeaderToken: {"2.1.2.3.4"}, HeaderMitigated: {"challenge"}, "X-Vercel-Challenge-Kind": {"pow"}},
			`<html data-new="1"><title>Vercel Security Checkpoint</title></html>`, Verdict{Challenged, "2.1.2.3.4"}},
		{"access denied", 403, http.Header{}, ` {"error": "Access denied"} `, Verdict{Kind: Denied}},
		{"other 403", 403, http.Header{}, `<title>Attention Required! | Cloudflare</title>`, Verdict{}},
		{"plain 429", 429, http.Header{}, `{"error":"slow down"}`, Verdict{}},
		{"denied with other status", 401, http.Header{}, `{"error":"Access denied"}`, Verdict{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Inspect(tc.status, tc.header, []byte(tc.body)))
		})
	}
}

func TestSolveURLFor(t *testing.T) {
	u, err := SolveURLFor("https://cursor.com/api/chat?x=1")
	require.NoError(t, err)
	assert.Equal(t, "https://cursor.com/.well-known/vercel/security/request-challenge", u)
	_, err = SolveURLFor("cursor.com/api/chat")
	assert.Error(t, err)
}

// While one request refreshes a cookie that is still valid, the others
// send it without waiting.
func TestKeeperRefreshDoesNotHoldOthers(t *testing.T) {
	clk := newClock()
	up, cp := fakeSite(t, clk, cursortest.CheckpointOptions{TTL: time.Hour})
	target, err := url.Parse(up.URL)
	require.NoError(t, err)
	var blocking atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	forward := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && blocking.Load() {
			close(entered)
			<-release
		}
		forward.ServeHTTP(w, r)
	}))
	defer front.Close()
	k := New(Options{HTTP: front.Client(), Headers: http.Header{"User-Agent": {testUA}}, PageURL: front.URL + "/",
		SolveURL: front.URL + SolvePath, Now: clk.Now})
	_, token := chat(t, up, "", testUA)
	require.NoError(t, k.Solve(context.Background(), "a", "", token))
	first := k.Cookie(context.Background(), "a")

	clk.Advance(57 * time.Minute)
	blocking.Store(true)
	refreshed := make(chan string)
	go func() { refreshed <- k.Cookie(context.Background(), "a") }()
	<-entered
	assert.Equal(t, first, k.Cookie(context.Background(), "a"), "the old cookie, at once")
	close(release)
	second := <-refreshed
	assert.NotEqual(t, first, second)
	assert.Equal(t, 2, cp.Stats().Solved)
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
