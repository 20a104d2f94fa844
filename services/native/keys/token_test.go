package keys

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

const keyA, keyB = "crsr_0123456789abcdef0123456789abcdef", "crsr_fedcba9876543210fedcba9876543210"

func TestExchangeCachesAndRefreshesAhead(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA}, nil)
	ctx := t.Context()

	l, err := p.Acquire(ctx, "s")
	require.NoError(t, err)
	l.Done(Outcome{})
	first := l.AccessToken()
	exp, ok := tokenExpiry(first)
	require.True(t, ok, "the fake's token is a JWT with exp")
	assert.Equal(t, c.Now().Add(time.Hour).Unix(), exp.Unix())
	assert.Equal(t, keyA, l.APIKey())
	assert.Equal(t, 1, f.count(keyA))
	f.mu.Lock()
	assert.Equal(t, "sdk-1.0.32", f.header.Get("X-Cursor-Client-Version"), "Options.Header goes with the exchange")
	f.mu.Unlock()
	assert.Equal(t, exp.Unix(), stateOf(t, p, Fingerprint(keyA)).TokenExpires.Unix())

	// An hour's token is refreshed at 80% of its life (48 min), before
	// its last 5 minutes.
	c.Advance(47 * time.Minute)
	l, err = p.Acquire(ctx, "s")
	require.NoError(t, err)
	l.Done(Outcome{})
	assert.Equal(t, first, l.AccessToken(), "cached until 48 minutes")
	assert.Equal(t, 1, f.count(keyA))

	c.Advance(2 * time.Minute)
	l, err = p.Acquire(ctx, "s")
	require.NoError(t, err)
	l.Done(Outcome{})
	assert.NotEqual(t, first, l.AccessToken(), "refreshed after 48 minutes")
	assert.Equal(t, 2, f.count(keyA))
}

func TestRefreshTime(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		life, at time.Duration
	}{
		{time.Hour, 48 * time.Minute},         // 80% comes first
		{10 * time.Minute, 5 * time.Minute},   // 5 minutes before comes first
		{20 * time.Minute, 15 * time.Minute},  // 5 minutes before
		{4 * time.Minute, 2 * time.Minute},    // never before half the life
		{24 * time.Hour, 1152 * time.Minute},  // 80%
		{2 * time.Minute, 1 * time.Minute},    // half
		{25 * time.Minute, 20 * time.Minute},  // both agree
		{30 * time.Minute, 24 * time.Minute},  // 80%
		{15 * time.Minute, 10 * time.Minute},  // 5 minutes before
		{100 * time.Minute, 80 * time.Minute}, // 80%
	} {
		assert.Equal(t, tc.at, refreshTime(now, now.Add(tc.life)).Sub(now), "life %s", tc.life)
	}
}

func TestRefreshAheadKeepsOthersGoing(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA}, nil)
	ctx := bounded(t)
	l, err := p.Acquire(ctx, "s")
	require.NoError(t, err)
	l.Done(Outcome{})
	old := l.AccessToken()

	c.Advance(50 * time.Minute)
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	f.setGate(gate, entered)
	refreshed := make(chan *Lease, 1)
	go func() {
		l, err := p.Acquire(ctx, "s")
		assert.NoError(t, err)
		refreshed <- l
	}()
	wait(t, entered)
	// While the one refresh waits on Cursor, others use the valid token.
	for range 5 {
		l, err := p.Acquire(ctx, "other")
		require.NoError(t, err)
		assert.Equal(t, old, l.AccessToken())
		l.Done(Outcome{})
	}
	close(gate)
	l = wait(t, refreshed)
	assert.NotEqual(t, old, l.AccessToken())
	l.Done(Outcome{})
	assert.Equal(t, 2, f.count(keyA))
}

func TestRefreshAheadFailureKeepsTheToken(t *testing.T) {
	ctx := bounded(t)
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA}, nil)
	l, err := p.Acquire(ctx, "s")
	require.NoError(t, err)
	l.Done(Outcome{})
	old := l.AccessToken()

	c.Advance(50 * time.Minute)
	f.setRefuse(keyA, http.StatusBadGateway, `{"code":"unavailable","message":"down"}`)
	for range 3 {
		l, err := p.Acquire(ctx, "s")
		require.NoError(t, err, "the current token still serves")
		assert.Equal(t, old, l.AccessToken())
		l.Done(Outcome{})
	}
	assert.Equal(t, 2, f.count(keyA), "one failed refresh, then a pause before the next")
	c.Advance(31 * time.Second)
	f.setRefuse(keyA, 0, "")
	l, err = p.Acquire(ctx, "s")
	require.NoError(t, err)
	assert.NotEqual(t, old, l.AccessToken())
	l.Done(Outcome{})
	assert.Equal(t, StateOK, stateOf(t, p, Fingerprint(keyA)).State)
}

func TestSingleFlight(t *testing.T) {
	ctx := bounded(t)
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA}, nil)
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	f.setGate(gate, entered)

	const callers = 50
	tokens := make([]string, callers)
	var started, wg sync.WaitGroup
	started.Add(callers)
	for i := range callers {
		wg.Go(func() {
			started.Done()
			l, err := p.Acquire(ctx, sessions(callers)[i])
			if assert.NoError(t, err) {
				tokens[i] = l.AccessToken()
				l.Done(Outcome{})
			}
		})
	}
	started.Wait()
	wait(t, entered)
	time.Sleep(2 * time.Millisecond) // let the others reach the flight
	close(gate)
	wg.Wait()
	assert.Equal(t, 1, f.count(keyA), "one exchange for 50 concurrent callers")
	for _, tok := range tokens {
		assert.Equal(t, tokens[0], tok)
	}
	assert.EqualValues(t, callers, stateOf(t, p, Fingerprint(keyA)).Requests)
}

func TestLeaderLeavesWaiterCarriesOn(t *testing.T) {
	ctx := bounded(t)
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA}, nil)
	gate, entered := make(chan struct{}), make(chan struct{}, 2)
	f.setGate(gate, entered)

	leaderCtx, leave := context.WithCancel(ctx)
	leaderErr := make(chan error, 1)
	go func() {
		_, err := p.Acquire(leaderCtx, "s")
		leaderErr <- err
	}()
	wait(t, entered)
	waiter := make(chan *Lease, 1)
	go func() {
		l, err := p.Acquire(ctx, "s")
		assert.NoError(t, err)
		waiter <- l
	}()
	time.Sleep(2 * time.Millisecond) // the waiter joins the flight
	leave()
	assert.ErrorIs(t, wait(t, leaderErr), context.Canceled)
	wait(t, entered) // the waiter leads the next exchange
	close(gate)
	l := wait(t, waiter)
	require.NotNil(t, l)
	assert.NotEmpty(t, l.AccessToken())
	l.Done(Outcome{})
	assert.Equal(t, 2, f.count(keyA))
	assert.Empty(t, stateOf(t, p, Fingerprint(keyA)).LastError, "a caller that left is no error of the key")
}

func TestRefusedKey(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	f.setRefuse(keyA, http.StatusUnauthorized, `{"code":"unauthenticated","message":"Invalid API key"}`)
	p, logs := newPool(t, f, []string{keyA}, nil)

	_, err := p.Acquire(t.Context(), "s")
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusUnauthorized, me.Status)
	assert.Equal(t, models.KindAuthentication, me.Kind)
	assert.Contains(t, me.Message, "CURSOR_API_KEY")
	assert.Contains(t, me.Message, Fingerprint(keyA))
	assert.Contains(t, me.Message, "Invalid API key")
	s := stateOf(t, p, Fingerprint(keyA))
	assert.Equal(t, StateBad, s.State)
	assert.Contains(t, s.Reason, "HTTP 401")

	// A refused key is not exchanged again on every request...
	_, err = p.Acquire(t.Context(), "s")
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusUnauthorized, me.Status)
	assert.Equal(t, 1, f.count(keyA))
	// ...only after BadRecheck.
	f.setRefuse(keyA, 0, "")
	c.Advance(DefaultBadRecheck)
	l, err := p.Acquire(t.Context(), "s")
	require.NoError(t, err)
	l.Done(Outcome{})
	assert.Equal(t, StateOK, stateOf(t, p, Fingerprint(keyA)).State)
	assert.Equal(t, 2, f.count(keyA))
	assert.Contains(t, logs.String(), "accepts a refused API key again")
}

func TestForbiddenKeyMovesToTheOther(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	f.setRefuse(keyA, http.StatusForbidden, "team disabled")
	p, _ := newPool(t, f, []string{keyA, keyB}, nil)
	for _, s := range sessions(20) {
		l, err := p.Acquire(t.Context(), s)
		require.NoError(t, err)
		assert.Equal(t, Fingerprint(keyB), l.Name())
		l.Done(Outcome{})
	}
	assert.Equal(t, StateBad, stateOf(t, p, Fingerprint(keyA)).State)
	assert.Equal(t, 1, f.count(keyA))
}

func TestUnauthorizedOutcome(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA}, nil)
	ctx := t.Context()

	l, err := p.Acquire(ctx, "s")
	require.NoError(t, err)
	// Two calls on the same token fail: held against it once.
	other, err := p.Acquire(ctx, "t")
	require.NoError(t, err)
	l.Done(Outcome{Kind: Unauthorized, Err: errors.New("unauthenticated")})
	other.Done(Outcome{Kind: Unauthorized, Err: errors.New("unauthenticated")})
	assert.Equal(t, StateOK, stateOf(t, p, Fingerprint(keyA)).State)

	// The next lease has a fresh token...
	l2, err := p.Acquire(ctx, "s")
	require.NoError(t, err)
	assert.NotEqual(t, l.AccessToken(), l2.AccessToken())
	assert.Equal(t, 2, f.count(keyA))
	// ...and when that is refused too, the key is bad.
	l2.Done(Outcome{Kind: Unauthorized, Err: errors.New("unauthenticated: token revoked")})
	s := stateOf(t, p, Fingerprint(keyA))
	assert.Equal(t, StateBad, s.State)
	assert.Contains(t, s.Reason, "token revoked")
	_, err = p.Acquire(ctx, "s")
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusUnauthorized, me.Status)
	assert.Contains(t, me.Message, "CURSOR_API_KEY")
}

func TestUnauthorizedThenOKForgives(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA}, nil)
	for range 3 { // a refused token, a fresh one that works: never bad
		l, err := p.Acquire(t.Context(), "s")
		require.NoError(t, err)
		l.Done(Outcome{Kind: Unauthorized})
		l, err = p.Acquire(t.Context(), "s")
		require.NoError(t, err)
		l.Done(Outcome{})
	}
	assert.Equal(t, StateOK, stateOf(t, p, Fingerprint(keyA)).State)
	assert.Equal(t, 4, f.count(keyA))
}

func TestUnreachable(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA}, nil)

	f.setRefuse(keyA, http.StatusInternalServerError, "oops")
	_, err := p.Acquire(t.Context(), "s")
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusServiceUnavailable, me.Status)
	assert.Equal(t, "cursor_auth_failed", me.Code)
	assert.Equal(t, StateOK, stateOf(t, p, Fingerprint(keyA)).State, "Cursor failing is not the key's fault")
	assert.Contains(t, stateOf(t, p, Fingerprint(keyA)).LastError, "HTTP 500")

	f.srv.Close()
	_, err = p.Acquire(t.Context(), "s")
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusBadGateway, me.Status)
	assert.Equal(t, "cursor_auth_unreachable", me.Code)
	assert.Contains(t, me.Message, "CURSOR_BACKEND_URL")
	assert.Equal(t, StateOK, stateOf(t, p, Fingerprint(keyA)).State)
	err = p.Check(t.Context())
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusBadGateway, me.Status)
}

func TestExchangeTimeout(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	// The timeout leaves the exchanges time to reach the fake on a loaded
	// runner (20 ms did not, under -race with -cpu 1), and Check's bound
	// below is still six times it: the keys are exchanged at once.
	p, _ := newPool(t, f, []string{keyA, keyB}, func(o *Options) { o.ExchangeTimeout = 300 * time.Millisecond })
	entered := make(chan struct{}, 2)
	f.setGate(make(chan struct{}), entered) // Cursor never answers
	start := time.Now()
	err := p.Check(t.Context())
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusBadGateway, me.Status)
	assert.Less(t, time.Since(start), 2*time.Second, "Check is bounded")
	// The fake counts an exchange when its handler runs, which can be
	// after the client gave up on it.
	wait(t, entered)
	wait(t, entered)
	assert.Equal(t, 2, f.total(), "Check exchanges every key")
}

func TestExchangeRateLimited(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	f.setRefuse(keyA, http.StatusTooManyRequests, `{"code":"resource_exhausted","message":"slow down"}`)
	p, _ := newPool(t, f, []string{keyA}, nil)
	_, err := p.Acquire(t.Context(), "s")
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusTooManyRequests, me.Status)
	assert.Equal(t, 10, me.RetryAfter, "the exchange's Retry-After")
	s := stateOf(t, p, Fingerprint(keyA))
	assert.Equal(t, StateCooling, s.State)
	assert.Equal(t, c.Now().Add(10*time.Second), s.CoolingUntil)
}

func TestCheck(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	f.setRefuse(keyA, http.StatusUnauthorized, "bad key")
	p, _ := newPool(t, f, []string{keyA, keyB}, nil)
	require.NoError(t, p.Check(t.Context()), "one good key is enough")
	assert.Equal(t, StateBad, stateOf(t, p, Fingerprint(keyA)).State)
	assert.Equal(t, StateOK, stateOf(t, p, Fingerprint(keyB)).State)
	require.NoError(t, p.Check(t.Context()))
	assert.Equal(t, 1, f.count(keyA), "a refused key waits for BadRecheck")
	assert.Equal(t, 1, f.count(keyB), "a fresh token is not exchanged again")

	f.setRefuse(keyB, http.StatusUnauthorized, "bad key")
	c.Advance(time.Hour)
	err := p.Check(t.Context())
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusUnauthorized, me.Status)
	assert.Contains(t, me.Message, "CURSOR_API_KEY")
}

func TestTokenExpiry(t *testing.T) {
	for _, tc := range []struct {
		name string
		jwt  string
		exp  int64
		ok   bool
	}{
		{"jwt", jwt(map[string]any{"exp": 1_900_000_000}), 1_900_000_000, true},
		{"padded", "e30." + base64.URLEncoding.EncodeToString([]byte(`{"exp": 1900000001}`)) + ".sig", 1_900_000_001, true},
		{"float exp", jwt(map[string]any{"exp": 1.9e9}), 1_900_000_000, true},
		{"no exp", jwt(map[string]any{"sub": "x"}), 0, false},
		{"not a jwt", "opaque-token", 0, false},
		{"bad base64", "a.!!!.c", 0, false},
		{"bad json", "a." + "bm90IGpzb24" + ".c", 0, false},
		{"string exp", jwt(map[string]any{"exp": "soon"}), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp, ok := tokenExpiry(tc.jwt)
			assert.Equal(t, tc.ok, ok)
			if ok {
				assert.Equal(t, tc.exp, exp.Unix())
			}
		})
	}
}

func TestTokenWithoutExpOrPastExp(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	f.life = -time.Hour // a clock out of step: the token looks expired
	p, logs := newPool(t, f, []string{keyA}, nil)
	l, err := p.Acquire(t.Context(), "s")
	require.NoError(t, err)
	l.Done(Outcome{})
	assert.Contains(t, logs.String(), "clock")
	assert.Equal(t, c.Now().Add(minLife), stateOf(t, p, Fingerprint(keyA)).TokenExpires)
	l, err = p.Acquire(t.Context(), "s")
	require.NoError(t, err)
	l.Done(Outcome{})
	assert.Equal(t, 1, f.count(keyA), "used until its assumed life is half over")
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
	}{
		{"", 0},
		{"12", 12 * time.Second},
		{" 3 ", 3 * time.Second},
		{"-4", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		assert.Equal(t, tc.want, RetryAfter(tc.h, now), "%q", tc.h)
	}
}
