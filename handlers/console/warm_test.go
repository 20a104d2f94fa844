package console

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/state"
	"cursor2api/services/state/redistest"
	"cursor2api/services/usage"
)

// countingStore counts the ledger's hour reads, and calls hook (when set)
// with the count before each.
type countingStore struct {
	state.Store
	reads atomic.Int64
	hook  func(n int64)
}

func (s *countingStore) Counters(ctx context.Context, table, key string) (map[string]int64, error) {
	n := s.reads.Add(1)
	if s.hook != nil {
		s.hook(n)
	}
	return s.Store.Counters(ctx, table, key)
}

// warmLedger is a ledger with a record every 5 hours of the last 40 days,
// at a fixed clock 30 minutes into an hour.
func warmLedger(t *testing.T) (*usage.Ledger, *countingStore, time.Time) {
	now := time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)
	store := &countingStore{Store: state.NewMemory(nil)}
	l := usage.New(state.NewQueue(store, 0, nil), 0, nil)
	for h := 0; h < 40*24; h += 5 {
		l.Add(usage.Record{Time: now.Add(-time.Duration(h) * time.Hour), KeyID: "key_aaaa", Door: "openai", Model: "gpt-5",
			Usage: usage.Counts{Requests: 1, InputTokens: int64(h)}})
	}
	l.Flush(t.Context())
	return l, store, now
}

// hoursRead is how many hours a page reads at now: its whole window.
func hoursRead(now time.Time) int64 {
	from, to := window(now)
	return int64(to.Sub(from) / time.Hour)
}

// TestRunReadsAheadOfTheFirstPage: after Run, the first page reads only
// the hours that have not settled, and shows what a page without Run
// shows.
func TestRunReadsAheadOfTheFirstPage(t *testing.T) {
	l, store, now := warmLedger(t)
	clock := func() time.Time { return now }
	cold, _ := newConsole(t, Options{Usage: l, Now: clock})
	want := do(cold, "GET", "/console", "", map[string]string{"Authorization": "Bearer " + admin}).Body.String()
	require.Equal(t, hoursRead(now), store.reads.Load(), "a page with nothing cached reads its whole window")

	store.reads.Store(0)
	h, cs := newConsole(t, Options{Usage: l, Now: clock})
	cs.Run(t.Context())
	warm := store.reads.Load()
	assert.Equal(t, hoursRead(now)-1, warm, "Run reads every settled hour: all but the current one (at half past, the one before ended over 10 minutes ago)")
	got := do(h, "GET", "/console", "", map[string]string{"Authorization": "Bearer " + admin}).Body.String()
	assert.Equal(t, int64(1), store.reads.Load()-warm, "the page reads only the hour not settled")
	assert.Equal(t, want, got)
}

// TestRunAndAPageReadNoHourTwice: a page during Run reads the hours Run
// has not, and Run then skips those the page read.
func TestRunAndAPageReadNoHourTwice(t *testing.T) {
	l, store, now := warmLedger(t)
	h, cs := newConsole(t, Options{Usage: l, Now: func() time.Time { return now }})
	page := make(chan struct{})
	var once sync.Once
	store.hook = func(n int64) {
		if n == 30 { // Run is in its second day: let the page come
			once.Do(func() { close(page) })
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { cs.Run(t.Context()) })
	<-page
	body := do(h, "GET", "/console", "", map[string]string{"Authorization": "Bearer " + admin}).Body.String()
	wg.Wait()
	assert.Contains(t, body, `id="traffic"`)
	assert.Equal(t, hoursRead(now), store.reads.Load(), "each hour of the window read once")
}

// TestRunEndsWithItsContext: Run stops reading when ctx ends.
func TestRunEndsWithItsContext(t *testing.T) {
	l, store, now := warmLedger(t)
	_, cs := newConsole(t, Options{Usage: l, Now: func() time.Time { return now }})
	ctx, cancel := context.WithCancel(t.Context())
	store.hook = func(n int64) {
		if n == 10 {
			cancel()
		}
	}
	done := make(chan struct{})
	go func() { cs.Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end with its context")
	}
	assert.LessOrEqual(t, store.reads.Load(), int64(11))
}

// TestFirstPageOnRedisReadsADayPerRoundTrip: on Redis, the hours not
// cached are read a day at a time, not an hour per round trip.
func TestFirstPageOnRedisReadsADayPerRoundTrip(t *testing.T) {
	s, err := state.Open(t.Context(), state.Options{URL: redistest.Start(t).URL()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	l := usage.New(state.NewQueue(s, 0, nil), 0, nil)
	now := time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)
	l.Add(usage.Record{Time: now.Add(-48 * time.Hour), KeyID: "key_aaaa", Door: "openai", Model: "gpt-5", Usage: usage.Counts{Requests: 7}})
	l.Flush(t.Context())
	trips := &redistest.RoundTrips{}
	s.(*state.Redis).Client().AddHook(trips)

	h, _ := newConsole(t, Options{Usage: l, Now: func() time.Time { return now }})
	body := do(h, "GET", "/console", "", map[string]string{"Authorization": "Bearer " + admin}).Body.String()
	assert.Regexp(t, `id="total-30d"[^\n]*>7</td>`, body)
	days := (hoursRead(now) + warmChunk - 1) / warmChunk
	assert.Equal(t, days, trips.Pipelines.Load(), "a round trip per day of hours")
	assert.Zero(t, trips.Cmds.Load())
}
