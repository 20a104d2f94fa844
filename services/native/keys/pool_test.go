package keys

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

// turn is what one conversation's turn got in a round.
type turn struct {
	key   string
	probe bool
}

// round runs one turn of every conversation at once. Every turn holds its
// lease until all have theirs, so that a probe shows as the only one, and
// then reports outcome(session, lease).
func round(t *testing.T, p *Pool, convs []string, outcome func(string, *Lease) Outcome) map[string]turn {
	t.Helper()
	var mu sync.Mutex
	got := make(map[string]turn, len(convs))
	var acquired, wg sync.WaitGroup
	acquired.Add(len(convs))
	for _, s := range convs {
		wg.Go(func() {
			l, err := p.Acquire(t.Context(), s)
			acquired.Done()
			if !assert.NoError(t, err, s) {
				return
			}
			mu.Lock()
			got[s] = turn{l.Name(), l.Probe()}
			mu.Unlock()
			acquired.Wait()
			l.Done(outcome(s, l))
		})
	}
	wg.Wait()
	require.Len(t, got, len(convs))
	return got
}

func allOK(string, *Lease) Outcome { return Outcome{} }

// probes lists the sessions whose turn probed a key.
func probes(r map[string]turn) []string {
	var out []string
	for s, tr := range r {
		if tr.probe {
			out = append(out, s)
		}
	}
	return out
}

func TestFiftyConversationsOverTwoKeys(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA, keyB}, nil)
	A, B := Fingerprint(keyA), Fingerprint(keyB)
	convs := sessions(50)

	// Affinity: a conversation keeps its key, round after round.
	home := round(t, p, convs, allOK)
	for range 3 {
		assert.Equal(t, home, round(t, p, convs, allOK))
	}
	// Spread: each key has between 30% and 70% of the conversations.
	var onA, onB []string
	for _, s := range convs {
		switch home[s].key {
		case A:
			onA = append(onA, s)
		case B:
			onB = append(onB, s)
		default:
			t.Fatalf("%s got key %q", s, home[s].key)
		}
	}
	assert.GreaterOrEqual(t, len(onA), 15, "key A's share")
	assert.GreaterOrEqual(t, len(onB), 15, "key B's share")
	assert.Empty(t, probes(home))
	assert.Equal(t, 2, f.total(), "one exchange per key")

	// Cooldown: a quota on A, in the middle of a round, moves A's
	// conversations to B at once; B's stay. The other A turns of that
	// round, taken before the quota, change nothing.
	quota := func(s string, l *Lease) Outcome {
		if s == onA[0] {
			return Outcome{Kind: Quota, Err: errors.New("resource_exhausted: usage limit reached")}
		}
		return Outcome{}
	}
	round(t, p, convs, quota)
	a := stateOf(t, p, A)
	assert.Equal(t, StateCooling, a.State)
	assert.Equal(t, c.Now().Add(30*time.Second), a.CoolingUntil)
	assert.Equal(t, 1, a.Failures)
	assert.Contains(t, a.LastError, "usage limit")
	moved := round(t, p, convs, allOK)
	for _, s := range convs {
		assert.Equal(t, B, moved[s].key, "every conversation is on B while A rests: %s", s)
	}
	c.Advance(29 * time.Second)
	assert.Equal(t, moved, round(t, p, convs, allOK), "A still rests")

	// The probe: when A's rest ends, exactly one of A's conversations
	// tries it; the others stay on B until it succeeds.
	c.Advance(2 * time.Second)
	assert.Equal(t, StateProbing, stateOf(t, p, A).State)
	r := round(t, p, convs, allOK)
	pr := probes(r)
	require.Len(t, pr, 1, "exactly one probe")
	assert.Equal(t, A, r[pr[0]].key)
	assert.Contains(t, onA, pr[0], "the probe is one of A's own conversations")
	for _, s := range convs {
		if s != pr[0] {
			assert.Equal(t, B, r[s].key, s)
		}
	}
	assert.Equal(t, StateOK, stateOf(t, p, A).State)
	assert.Equal(t, home, round(t, p, convs, allOK), "A's conversations are back on A")

	// A failed probe makes the rest grow; a good one ends the run.
	round(t, p, convs, quota)
	assert.Equal(t, c.Now().Add(30*time.Second), stateOf(t, p, A).CoolingUntil, "a success reset the run: the first rest again")
	for i, rest := range []time.Duration{60 * time.Second, 120 * time.Second, 240 * time.Second} {
		c.Advance(stateOf(t, p, A).CoolingUntil.Sub(c.Now()) + time.Second)
		r := round(t, p, convs, func(s string, l *Lease) Outcome {
			if l.Probe() {
				return Outcome{Kind: Quota}
			}
			return Outcome{}
		})
		require.Len(t, probes(r), 1)
		a := stateOf(t, p, A)
		assert.Equal(t, StateCooling, a.State)
		assert.Equal(t, i+2, a.Failures)
		assert.Equal(t, c.Now().Add(rest), a.CoolingUntil, "rest %d", i+2)
	}
	c.Advance(stateOf(t, p, A).CoolingUntil.Sub(c.Now()) + time.Second)
	require.Len(t, probes(round(t, p, convs, allOK)), 1)
	assert.Equal(t, 0, stateOf(t, p, A).Failures)
	assert.Equal(t, home, round(t, p, convs, allOK))
	assert.EqualValues(t, 5, stateOf(t, p, A).Cooldowns)
	assert.Zero(t, stateOf(t, p, B).Cooldowns)
}

func TestRetryOnTheNextKey(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA, keyB}, nil)
	l, err := p.Acquire(t.Context(), "conversation")
	require.NoError(t, err)
	first := l.Name()
	l.Done(Outcome{Kind: RateLimited, RetryAfter: 5 * time.Second})
	l2, err := p.Acquire(t.Context(), "conversation")
	require.NoError(t, err)
	assert.NotEqual(t, first, l2.Name(), "the retry goes to the conversation's next key")
	l2.Done(Outcome{})
	assert.Equal(t, c.Now().Add(5*time.Second), stateOf(t, p, first).CoolingUntil, "Retry-After honoured")
}

func TestAllResting(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA, keyB}, nil)
	restKey(t, p, Fingerprint(keyA), 45*time.Second)
	c.Advance(10 * time.Second)
	restKey(t, p, Fingerprint(keyB), 0) // 30 s, ending 5 s before A's 45 s
	c.Advance(500 * time.Millisecond)

	_, err := p.Acquire(t.Context(), "s")
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusTooManyRequests, me.Status)
	assert.Equal(t, models.KindRateLimit, me.Kind)
	assert.Equal(t, 30, me.RetryAfter, "the soonest rest's end, rounded up")
	assert.Contains(t, me.Message, "CURSOR_API_KEY")
	require.ErrorAs(t, p.Check(t.Context()), &me)
	assert.Equal(t, http.StatusTooManyRequests, me.Status)

	// A probe failing again rests longer, up to MaxCooldown, whatever
	// the Retry-After.
	c.Advance(time.Hour)
	l, err := p.Acquire(t.Context(), "s")
	require.NoError(t, err)
	require.True(t, l.Probe())
	l.Done(Outcome{Kind: Quota, RetryAfter: 2 * time.Hour})
	assert.Equal(t, c.Now().Add(DefaultMaxCooldown), stateOf(t, p, l.Name()).CoolingUntil)

	// A long Retry-After is capped for the first rest of a run.
	l, err = p.Acquire(t.Context(), "s")
	require.NoError(t, err)
	require.True(t, l.Probe(), "the other key's rest is over too")
	l.Done(Outcome{})
	l, err = p.Acquire(t.Context(), "s")
	require.NoError(t, err)
	require.False(t, l.Probe())
	l.Done(Outcome{Kind: Quota, RetryAfter: time.Hour})
	assert.Equal(t, c.Now().Add(DefaultFirstCooldownMax), stateOf(t, p, l.Name()).CoolingUntil)
}

func TestNotKeysFaultNeverCools(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA}, nil)
	for _, o := range []Outcome{
		{Kind: NotKeysFault, Err: errors.New("resource_exhausted: Update Required")},
		{Kind: NotKeysFault, Err: errors.New("invalid_argument: ERROR_BAD_MODEL_NAME")},
		{Kind: Transient, Err: errors.New("stream dropped")},
	} {
		l, err := p.Acquire(t.Context(), "s")
		require.NoError(t, err)
		l.Done(o)
		s := stateOf(t, p, Fingerprint(keyA))
		assert.Equal(t, StateOK, s.State, o.Kind)
		assert.Contains(t, s.LastError, o.Err.Error())
		assert.Contains(t, s.LastError, o.Kind.String())
	}
}

func TestProbeWithoutVerdict(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA}, func(o *Options) { o.ProbeTimeout = time.Minute })
	A := Fingerprint(keyA)
	l, err := p.Acquire(t.Context(), "s")
	require.NoError(t, err)
	l.Done(Outcome{Kind: Quota})
	c.Advance(31 * time.Second)

	for _, kind := range []OutcomeKind{Transient, NotKeysFault} {
		probe, err := p.Acquire(t.Context(), "s")
		require.NoError(t, err)
		require.True(t, probe.Probe())
		_, err = p.Acquire(t.Context(), "t")
		var me *models.Error
		require.ErrorAs(t, err, &me, "the one key is being probed")
		assert.Equal(t, http.StatusTooManyRequests, me.Status)
		assert.Equal(t, 5, me.RetryAfter, "about a turn")
		assert.True(t, stateOf(t, p, A).ProbeActive)
		probe.Done(Outcome{Kind: kind})
		s := stateOf(t, p, A)
		assert.Equal(t, StateProbing, s.State, "no verdict: the next caller probes")
		assert.False(t, s.ProbeActive)
		assert.Equal(t, 1, s.Failures)
	}

	// A lease never Done frees its probe after ProbeTimeout.
	lost, err := p.Acquire(t.Context(), "s")
	require.NoError(t, err)
	require.True(t, lost.Probe())
	c.Advance(time.Minute)
	probe, err := p.Acquire(t.Context(), "t")
	require.NoError(t, err)
	assert.True(t, probe.Probe())
	lost.Done(Outcome{}) // late: no longer the probe, and from before no rest: it counts
	probe.Done(Outcome{})
	assert.Equal(t, StateOK, stateOf(t, p, A).State)
	probe.Done(Outcome{Kind: Quota}) // a second Done is ignored
	assert.Equal(t, StateOK, stateOf(t, p, A).State)
}

func TestStaleLeaseAfterRest(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA}, nil)
	var leases []*Lease
	for range 5 {
		l, err := p.Acquire(t.Context(), "s")
		require.NoError(t, err)
		leases = append(leases, l)
	}
	// Five turns in flight all hit the quota: one rest, not five doublings.
	for _, l := range leases {
		l.Done(Outcome{Kind: Quota})
	}
	s := stateOf(t, p, Fingerprint(keyA))
	assert.Equal(t, 1, s.Failures)
	assert.Equal(t, c.Now().Add(30*time.Second), s.CoolingUntil)
}

func TestCooldownSchedule(t *testing.T) {
	o := Options{Cooldown: 30 * time.Second, FirstCooldownMax: 90 * time.Second, MaxCooldown: 30 * time.Minute}
	for _, tc := range []struct {
		failures   int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, 30 * time.Second},
		{1, 10 * time.Second, 10 * time.Second},
		{1, 5 * time.Minute, 90 * time.Second},
		{2, 0, time.Minute},
		{3, 0, 2 * time.Minute},
		{4, 0, 4 * time.Minute},
		{3, 10 * time.Minute, 10 * time.Minute},
		{7, 0, 30 * time.Minute},
		{8, 0, 30 * time.Minute},
		{200, 0, 30 * time.Minute},
		{3, 3 * time.Hour, 30 * time.Minute},
	} {
		assert.Equal(t, tc.want, cooldown(o, tc.failures, tc.retryAfter), "failures %d, Retry-After %s", tc.failures, tc.retryAfter)
	}
}

func TestSpreadOverThreeKeys(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	keys := []string{keyA, keyB, "crsr_third_key_0000000000000000000000"}
	p, _ := newPool(t, f, keys, nil)
	count := map[string]int{}
	const n = 600
	for i := range n {
		l, err := p.Acquire(t.Context(), SessionHash("system prompt", fmt.Sprintf("first message %d", i)))
		require.NoError(t, err)
		count[l.Name()]++
		l.Done(Outcome{})
	}
	for _, k := range keys {
		share := float64(count[Fingerprint(k)]) / n
		assert.InDelta(t, 1.0/3, share, 0.08, "share of %s", Fingerprint(k))
	}
	// An empty session has no affinity but still spreads.
	clear(count)
	for range 300 {
		l, err := p.Acquire(t.Context(), "")
		require.NoError(t, err)
		count[l.Name()]++
		l.Done(Outcome{})
	}
	assert.Len(t, count, 3)
}

func TestSessionHash(t *testing.T) {
	h := SessionHash("system", "hello")
	assert.Equal(t, h, SessionHash("system", "hello"))
	assert.NotEqual(t, h, SessionHash("system", "hellO"))
	assert.NotEqual(t, SessionHash("ab", "c"), SessionHash("a", "bc"), "parts are delimited")
	assert.NotEqual(t, SessionHash("abc"), SessionHash("ab", "c"))
	assert.NotEqual(t, SessionHash(), SessionHash(""))
	assert.Len(t, h, 2+32)
	// Inputs of equal byte parity must not collide: every bit of the
	// hash depends on the whole input.
	seen := map[string]bool{}
	for i := range 1000 {
		seen[SessionHash(fmt.Sprintf("m%04d", i))] = true
	}
	assert.Len(t, seen, 1000)
}

func TestNewOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		err  string
	}{
		{"no keys", Options{}, "CURSOR_API_KEY is empty"},
		{"space in a key", Options{Keys: []string{"crsr_a b"}}, "key 1 of 1"},
		{"empty key", Options{Keys: []string{"crsr_a", ""}}, "key 2 of 2"},
		{"bad URL", Options{Keys: []string{"k"}, BaseURL: "api2.cursor.sh"}, "CURSOR_BACKEND_URL"},
		{"ftp URL", Options{Keys: []string{"k"}, BaseURL: "ftp://api2.cursor.sh"}, "CURSOR_BACKEND_URL"},
		{"bad header", Options{Keys: []string{"crsr_key"}, Header: http.Header{"X": {"a\r\nb"}}}, "header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			for _, k := range tc.opts.Keys {
				if k != "" {
					assert.NotContains(t, err.Error(), k, "a key is never quoted")
				}
			}
		})
	}
	p, err := New(Options{Keys: []string{"k1", "k2", "k1"}})
	require.NoError(t, err)
	assert.Equal(t, 2, p.Len(), "a key given twice counts once")
	assert.Equal(t, models.CursorConnectURL+ExchangePath, p.exchange)
}

func TestSecretsNeverShown(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	// Cursor's refusal quotes the key back.
	f.setRefuse(keyA, http.StatusUnauthorized, `{"code":"unauthenticated","message":"Invalid key `+keyA+`"}`)
	p, logs := newPool(t, f, []string{keyA, keyB}, nil)

	var tokens []string
	var shown []string
	for _, s := range sessions(10) {
		l, err := p.Acquire(t.Context(), s)
		require.NoError(t, err)
		tokens = append(tokens, l.AccessToken())
		shown = append(shown, fmt.Sprint(l), fmt.Sprintf("%v %s", l, l))
		slog.New(slog.NewJSONHandler(logs, nil)).Info("lease", "lease", l)
		l.Done(Outcome{Kind: Transient, Err: fmt.Errorf("upstream said: token %s, key %s", l.AccessToken(), l.APIKey())})
	}
	f.setRefuse(keyB, http.StatusForbidden, "forbidden: "+keyB)
	c.Advance(2 * time.Hour)
	err := p.Check(t.Context())
	require.Error(t, err)
	shown = append(shown, err.Error(), logs.String())
	for _, s := range p.Snapshot() {
		shown = append(shown, fmt.Sprintf("%+v", s))
	}
	all := strings.Join(shown, "\n")
	require.NotEmpty(t, tokens)
	for _, secret := range append([]string{keyA, keyB}, tokens...) {
		assert.NotContains(t, all, secret)
	}
	assert.Contains(t, logs.String(), Fingerprint(keyA), "keys are logged by fingerprint")

	for _, k := range []string{keyA, keyB, "k", "key-", "crsr_x"} {
		fp := Fingerprint(k)
		assert.Regexp(t, `^key-[0-9a-f]{8}$`, fp)
		assert.NotEqual(t, k, fp)
		if len(k) > 4 {
			assert.NotContains(t, fp, k)
		}
	}
	assert.NotEqual(t, Fingerprint(keyA), Fingerprint(keyB))
}

// AcquireAny serves a call that a rest does not stop (the model list):
// a usable key when there is one, else the resting key whose rest ends
// first, whose rest the lease's outcome leaves alone; never a refused key.
func TestAcquireAny(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	p, _ := newPool(t, f, []string{keyA, keyB}, nil)
	A, B := Fingerprint(keyA), Fingerprint(keyB)
	restKey(t, p, A, 60*time.Second)
	l, err := p.AcquireAny(t.Context())
	require.NoError(t, err)
	assert.Equal(t, B, l.Name(), "the usable key")
	l.Done(Outcome{})

	restKey(t, p, B, 20*time.Second)
	for _, o := range []Outcome{{}, {Kind: Quota, RetryAfter: time.Hour}} {
		l, err = p.AcquireAny(t.Context())
		require.NoError(t, err)
		assert.Equal(t, B, l.Name(), "the rest that ends first")
		assert.False(t, l.Probe())
		assert.NotEmpty(t, l.AccessToken())
		l.Done(o)
		b := stateOf(t, p, B)
		assert.Equal(t, StateCooling, b.State, "the outcome leaves the rest alone: %v", o.Kind)
		assert.WithinDuration(t, c.Now().Add(20*time.Second), b.CoolingUntil, 0)
		assert.Equal(t, 1, b.Failures)
	}
	_, err = p.Acquire(t.Context(), "s")
	var me *models.Error
	require.ErrorAs(t, err, &me, "conversations still wait")
	assert.Equal(t, http.StatusTooManyRequests, me.Status)

	// Refused keys are never handed out.
	f.setRefuse(keyA, http.StatusUnauthorized, "revoked")
	f.setRefuse(keyB, http.StatusUnauthorized, "revoked")
	c.Advance(2 * time.Hour)
	_, err = p.AcquireAny(t.Context())
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusUnauthorized, me.Status)
}

// restKey puts the key named name to rest for a quota with Retry-After
// ra, through the lease of the first session that goes to it.
func restKey(t *testing.T, p *Pool, name string, ra time.Duration) {
	t.Helper()
	for _, s := range sessions(20) {
		l, err := p.Acquire(t.Context(), s)
		require.NoError(t, err)
		if l.Name() == name {
			l.Done(Outcome{Kind: Quota, RetryAfter: ra})
			return
		}
		l.Done(Outcome{})
	}
	t.Fatalf("no session went to %s", name)
}
