package keys

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/state"
	"cursor2api/services/state/redistest"
)

// wait waits for the pool's reads and writes of the store under way.
func (p *Pool) wait() { p.bg.Wait() }

// sharedPool is one replica's pool of keys on store.
func sharedPool(t *testing.T, f *fakeAuth, keys []string, store state.Store) (*Pool, *state.Queue, *logBuffer) {
	t.Helper()
	q := state.NewQueue(store, 0, nil)
	p, logs := newPool(t, f, keys, func(o *Options) { o.State = q })
	t.Cleanup(p.wait)
	return p, q, logs
}

// catchUp lets SyncEvery pass, so that the next look at p's keys (here a
// Snapshot, as /ready or /metrics takes) reads the shared rests, and waits
// for that read.
func catchUp(c *clock, p *Pool) {
	c.Advance(DefaultSyncEvery)
	p.Snapshot()
	p.wait()
}

// homeOn is a session whose key, of those named, is the first.
func homeOn(t *testing.T, names ...string) string {
	t.Helper()
	for i := range 1000 {
		s := fmt.Sprintf("conversation-%d", i)
		best := true
		for _, other := range names[1:] {
			if score(s, other) > score(s, names[0]) {
				best = false
			}
		}
		if best {
			return s
		}
	}
	t.Fatal("no session")
	return ""
}

func acquire(t *testing.T, p *Pool, session string) *Lease {
	t.Helper()
	l, err := p.Acquire(bounded(t), session)
	require.NoError(t, err)
	return l
}

// Two replicas on one store: a rest that one begins, the other honours
// after its next read, with the right Retry-After when every key rests;
// a probe that succeeds on one brings the key back on the other.
func TestRestsSharedByReplicas(t *testing.T) {
	for _, tc := range []struct {
		name       string
		kind       OutcomeKind
		retryAfter time.Duration
		rest       time.Duration
	}{
		{"quota with Retry-After", Quota, 45 * time.Second, 45 * time.Second},
		{"rate limit without", RateLimited, 0, DefaultCooldown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			f := newFakeAuth(t, c)
			store := state.NewMemory(c.Now)
			one, _, _ := sharedPool(t, f, []string{keyA, keyB}, store)
			two, _, _ := sharedPool(t, f, []string{keyA, keyB}, store)
			A, B := Fingerprint(keyA), Fingerprint(keyB)
			onA, onB := homeOn(t, A, B), homeOn(t, B, A)
			start := c.Now()

			l := acquire(t, one, onA)
			require.Equal(t, A, l.Name())
			l.Done(Outcome{Kind: tc.kind, RetryAfter: tc.retryAfter, Err: errors.New("resource_exhausted: usage limit reached")})
			one.wait()

			// Before its next read, replica two still chooses A: no
			// request reads the store.
			l = acquire(t, two, onA)
			assert.Equal(t, A, l.Name(), "no read before SyncEvery")
			l.Done(Outcome{})

			catchUp(c, two)
			l = acquire(t, two, onA)
			assert.Equal(t, B, l.Name(), "A rests on replica two too")
			assert.False(t, l.Probe())
			l.Done(Outcome{})
			a := stateOf(t, two, A)
			assert.Equal(t, StateCooling, a.State)
			assert.WithinDuration(t, start.Add(tc.rest), a.CoolingUntil, 0)
			assert.Equal(t, 1, a.Failures)
			assert.Contains(t, a.LastError, "usage limit")
			assert.Zero(t, a.Cooldowns, "counted by the replica that began it")

			// Replica one rests B too: replica two has no key left, and
			// says when the first comes back.
			l = acquire(t, one, onB)
			require.Equal(t, B, l.Name())
			l.Done(Outcome{Kind: Quota})
			one.wait()
			catchUp(c, two)
			_, err := two.Acquire(bounded(t), onA)
			var me *models.Error
			require.ErrorAs(t, err, &me)
			assert.Equal(t, http.StatusTooManyRequests, me.Status)
			bUntil := start.Add(DefaultSyncEvery + DefaultCooldown)
			soonest := min(tc.rest, bUntil.Sub(start)) - c.Now().Sub(start)
			assert.Equal(t, int((soonest+time.Second-1)/time.Second), me.RetryAfter)
			require.ErrorAs(t, two.Check(bounded(t)), &me, "/ready says so too")
			assert.Equal(t, http.StatusTooManyRequests, me.Status)

			// Both rests end. Replica one's probe finds A working: replica
			// two takes A back at its next read, without a probe of its
			// own; B, which no one probed, still waits for its probe.
			c.Advance(max(tc.rest, bUntil.Sub(start)) - c.Now().Sub(start) + time.Second)
			l = acquire(t, one, onA)
			require.Equal(t, A, l.Name())
			require.True(t, l.Probe())
			l.Done(Outcome{})
			one.wait()
			assert.Equal(t, StateProbing, stateOf(t, two, A).State, "before its read")
			catchUp(c, two)
			assert.Equal(t, StateOK, stateOf(t, two, A).State)
			assert.Zero(t, stateOf(t, two, A).Failures)
			assert.Equal(t, StateProbing, stateOf(t, two, B).State)
			l = acquire(t, two, onA)
			assert.Equal(t, A, l.Name())
			assert.False(t, l.Probe(), "A needs no probe on replica two")
			l.Done(Outcome{})
		})
	}
}

// A failure on a key another replica put to rest continues its backoff:
// the rests double across replicas as they do within one.
func TestSharedBackoff(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	store := state.NewMemory(c.Now)
	one, _, _ := sharedPool(t, f, []string{keyA}, store)
	two, _, _ := sharedPool(t, f, []string{keyA}, store)
	A := Fingerprint(keyA)

	l := acquire(t, one, "s")
	l.Done(Outcome{Kind: Quota})
	one.wait()
	catchUp(c, two)
	require.Equal(t, StateCooling, stateOf(t, two, A).State)

	c.Advance(stateOf(t, two, A).CoolingUntil.Sub(c.Now()))
	l = acquire(t, two, "s")
	require.True(t, l.Probe())
	l.Done(Outcome{Kind: Quota})
	two.wait()
	assert.WithinDuration(t, c.Now().Add(2*DefaultCooldown), stateOf(t, two, A).CoolingUntil, 0, "the second failure in a row")
	catchUp(c, one)
	s := stateOf(t, one, A)
	assert.Equal(t, StateCooling, s.State)
	assert.Equal(t, 2, s.Failures)
	assert.WithinDuration(t, stateOf(t, two, A).CoolingUntil, s.CoolingUntil, 0)
}

// A gateway started on a store that holds rests begins with those keys
// resting (or refused), and does not exchange a refused key again; a
// record whose rest is over is ignored.
func TestRestsOutliveARestart(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	store := state.NewMemory(c.Now)
	A, B := Fingerprint(keyA), Fingerprint(keyB)
	f.setRefuse(keyB, http.StatusUnauthorized, `{"code":"unauthenticated","message":"key revoked"}`)
	before, _, _ := sharedPool(t, f, []string{keyA, keyB}, store)
	l := acquire(t, before, homeOn(t, B, A))
	require.Equal(t, A, l.Name(), "B is refused")
	l.Done(Outcome{Kind: Quota, RetryAfter: 40 * time.Second, Err: errors.New("resource_exhausted: usage limit reached")})
	before.wait()
	require.Equal(t, StateBad, stateOf(t, before, B).State)
	aUntil := stateOf(t, before, A).CoolingUntil
	exchangesB := f.count(keyB)

	after, _, logs := sharedPool(t, f, []string{keyA, keyB}, store)
	a, b := stateOf(t, after, A), stateOf(t, after, B)
	assert.Equal(t, StateCooling, a.State)
	assert.WithinDuration(t, aUntil, a.CoolingUntil, 0)
	assert.Equal(t, 1, a.Failures)
	assert.Contains(t, a.LastError, "usage limit")
	assert.Equal(t, StateBad, b.State)
	assert.Contains(t, b.Reason, "key revoked")
	_, err := after.Acquire(bounded(t), "s")
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusTooManyRequests, me.Status, "A rests; B is refused")
	assert.Equal(t, 40, me.RetryAfter)
	assert.Equal(t, exchangesB, f.count(keyB), "a refused key is not exchanged again before its recheck")
	assert.Contains(t, logs.String(), "another replica (or this one before a restart)")

	// Once A's rest is over, a gateway started then ignores its record.
	c.Advance(aUntil.Sub(c.Now()))
	later, _, _ := sharedPool(t, f, []string{keyA, keyB}, store)
	assert.Equal(t, StateOK, stateOf(t, later, A).State)
	assert.Zero(t, stateOf(t, later, A).Failures)
	assert.Equal(t, StateBad, stateOf(t, later, B).State, "B's recheck is not due yet")
}

// A record whose rest is over by this host's clock is ignored, even when
// the store keeps it longer (another writer's clock, a file moved).
func TestExpiredRecordIgnored(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	store := state.NewMemory(c.Now)
	for _, tc := range []struct {
		name  string
		until time.Time
		want  State
	}{
		{"over", c.Now().Add(-time.Second), StateOK},
		{"ends now", c.Now(), StateOK},
		{"running", c.Now().Add(time.Minute), StateCooling},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := fmt.Sprintf(`{"kind":"quota","until":%d,"at":%d,"failures":1}`, tc.until.UnixMilli(), c.Now().Add(-time.Minute).UnixMilli())
			require.NoError(t, store.Put(t.Context(), RestsTable, Fingerprint(keyA), []byte(rec), state.Limits{TTL: time.Hour}))
			p, _, _ := sharedPool(t, f, []string{keyA}, store)
			assert.Equal(t, tc.want, stateOf(t, p, Fingerprint(keyA)).State)
		})
	}
}

// badStore is a store that fails: every call errs, or blocks until its
// context ends (or the test releases it).
type badStore struct {
	state.Store
	block   bool
	release chan struct{}
	calls   atomic.Int64 // calls begun
	ended   atomic.Int64 // calls returned
}

var errStoreDown = errors.New("dial tcp 10.0.0.9:6379: connect: connection refused")

func (s *badStore) fail(ctx context.Context) error {
	s.calls.Add(1)
	defer s.ended.Add(1)
	if !s.block {
		return errStoreDown
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.release:
		return errStoreDown
	}
}

func (s *badStore) Get(ctx context.Context, _, _ string) ([]byte, error) { return nil, s.fail(ctx) }
func (s *badStore) Put(ctx context.Context, _, _ string, _ []byte, _ state.Limits) error {
	return s.fail(ctx)
}
func (s *badStore) Delete(ctx context.Context, _, _ string) (bool, error) { return false, s.fail(ctx) }
func (s *badStore) Ping(ctx context.Context) error                        { return s.fail(ctx) }

// A store that fails or hangs never fails a request nor holds it: the
// pool goes on with its own view, rests included, and the store's
// failures are counted where the state's health is.
func TestStoreDownChangesNothing(t *testing.T) {
	for _, block := range []bool{false, true} {
		t.Run(map[bool]string{false: "failing", true: "hanging"}[block], func(t *testing.T) {
			c := newClock()
			f := newFakeAuth(t, c)
			store := &badStore{Store: state.NewMemory(c.Now), block: block, release: make(chan struct{})}
			began := time.Now()
			p, q, logs := sharedPool(t, f, []string{keyA, keyB}, store)
			assert.Less(t, time.Since(began), 2*state.DefaultWriteTimeout, "the start's read is bounded")
			A, B := Fingerprint(keyA), Fingerprint(keyB)

			// From here on, a hanging store holds every call until the
			// test ends: a request that waited for one would not return.
			ended := store.ended.Load()
			c.Advance(DefaultSyncEvery)
			l := acquire(t, p, homeOn(t, A, B))
			require.Equal(t, A, l.Name())
			l.Done(Outcome{Kind: Quota})
			l = acquire(t, p, homeOn(t, A, B))
			assert.Equal(t, B, l.Name(), "the rest holds here")
			l.Done(Outcome{})
			assert.Equal(t, StateCooling, stateOf(t, p, A).State)
			if block {
				assert.Equal(t, ended, store.ended.Load(), "no request waited for the store")
				close(store.release)
			}
			p.wait()
			assert.Positive(t, store.calls.Load(), "the pool did try the store")
			assert.Equal(t, StateCooling, stateOf(t, p, A).State, "a failed read keeps the pool's view")
			st := q.Stats()
			assert.Positive(t, st.Failed, "counted in the state's health")
			assert.Equal(t, 1, st.Queued, "the rest waits for the store")
			if !block {
				assert.Contains(t, logs.String(), "shared rests failed")
			}
		})
	}
}

// Each key's record is read at most once per SyncEvery, whatever the
// traffic, and never by a request itself.
func TestReadsAtMostEverySyncEvery(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	store := &countingStore{Store: state.NewMemory(c.Now)}
	p, _, _ := sharedPool(t, f, []string{keyA, keyB}, store)
	assert.EqualValues(t, 2, store.gets.Load(), "one read per key at the start")
	for i := range 21 {
		l := acquire(t, p, fmt.Sprint(i))
		l.Done(Outcome{})
		p.Snapshot()
		p.wait()
		c.Advance(DefaultSyncEvery / 10)
	}
	// From 0 to 2 × SyncEvery: two reads more.
	assert.EqualValues(t, 2+2*2, store.gets.Load())
}

type countingStore struct {
	state.Store
	gets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, table, key string) ([]byte, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, table, key)
}

// recordingStore keeps every value written, by key.
type recordingStore struct {
	state.Store
	mu     sync.Mutex
	writes []string
}

func (s *recordingStore) Put(ctx context.Context, table, key string, value []byte, lim state.Limits) error {
	s.mu.Lock()
	s.writes = append(s.writes, table+" "+key+" "+string(value))
	s.mu.Unlock()
	return s.Store.Put(ctx, table, key, value, lim)
}

// The store holds fingerprints and clipped, scrubbed errors: never a key
// or a token, even when the upstream's errors quote them.
func TestNoKeyMaterialInTheStore(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)
	store := &recordingStore{Store: state.NewMemory(c.Now)}
	f.setRefuse(keyB, http.StatusUnauthorized, `{"code":"unauthenticated","message":"Invalid key `+keyB+`"}`)
	p, _, _ := sharedPool(t, f, []string{keyA, keyB}, store)
	var tokens []string
	for _, kind := range []OutcomeKind{Quota, RateLimited} {
		l := acquire(t, p, homeOn(t, Fingerprint(keyA), Fingerprint(keyB)))
		tokens = append(tokens, l.AccessToken())
		l.Done(Outcome{Kind: kind, Err: fmt.Errorf("resource_exhausted for token %s and key %s", l.AccessToken(), l.APIKey())})
		p.wait()
		c.Advance(time.Hour)
	}
	l := acquire(t, p, homeOn(t, Fingerprint(keyB), Fingerprint(keyA))) // B is refused; A's probe works
	require.True(t, l.Probe())
	l.Done(Outcome{})
	p.wait()

	store.mu.Lock()
	defer store.mu.Unlock()
	require.NotEmpty(t, tokens)
	all := strings.Join(store.writes, "\n")
	for _, w := range []string{`"kind":"quota"`, `"kind":"rate_limited"`, `"kind":"bad"`, `"kind":"ok"`, Fingerprint(keyA), Fingerprint(keyB)} {
		assert.Contains(t, all, w)
	}
	for _, secret := range append([]string{keyA, keyB}, tokens...) {
		assert.NotContains(t, all, secret)
	}
	for _, w := range store.writes {
		assert.Regexp(t, `^key_rests key-[0-9a-f]{8} \{`, w)
	}
}

// On a real Redis shared by replicas: a rest reaches a replica started
// afterwards and one already running; while Redis is lost, requests go
// on with the local view and the rest's write waits in the queue, which
// delivers it once Redis is back.
func TestRestsOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	open := func() state.Store {
		s, err := state.Open(t.Context(), state.Options{URL: srv.URL()})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	c := newClock()
	f := newFakeAuth(t, c)
	A, B := Fingerprint(keyA), Fingerprint(keyB)
	one, q, _ := sharedPool(t, f, []string{keyA, keyB}, open())
	running, _, _ := sharedPool(t, f, []string{keyA, keyB}, open())

	l := acquire(t, one, homeOn(t, A, B))
	require.Equal(t, A, l.Name())
	l.Done(Outcome{Kind: Quota, Err: errors.New("resource_exhausted: usage limit reached")})
	one.wait()
	later, _, _ := sharedPool(t, f, []string{keyA, keyB}, open())
	assert.Equal(t, StateCooling, stateOf(t, later, A).State, "started afterwards")
	catchUp(c, running)
	assert.Equal(t, StateCooling, stateOf(t, running, A).State, "already running")

	// Redis is lost: B's rest stays local, and waits for it.
	srv.Stop()
	l = acquire(t, one, homeOn(t, B, A))
	require.Equal(t, B, l.Name())
	l.Done(Outcome{Kind: RateLimited})
	one.wait()
	assert.Equal(t, 1, q.Stats().Queued)
	catchUp(c, running)
	assert.Equal(t, StateOK, stateOf(t, running, B).State, "not written yet")
	assert.Equal(t, StateCooling, stateOf(t, running, A).State, "a failed read keeps what was learned")

	srv.Start()
	require.Eventually(t, func() bool { q.Retry(t.Context()); return q.Stats().Queued == 0 }, 10*time.Second, 100*time.Millisecond)
	// The running replica's connections to the old server may fail once
	// more before they are dialled again.
	require.Eventually(t, func() bool {
		catchUp(c, running)
		return stateOf(t, running, B).State == StateCooling
	}, 10*time.Second, 100*time.Millisecond, "the queued rest arrived")
}
