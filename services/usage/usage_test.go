package usage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/state"
	"cursor2api/services/state/redistest"
)

func rec(at time.Time, key, model string, in, out, cached int64, failed bool) Record {
	c := Counts{Requests: 1, InputTokens: in, OutputTokens: out, CachedTokens: cached}
	if failed {
		c.Errors = 1
	}
	return Record{Time: at, KeyID: key, Door: "openai", Model: model, Backend: "web", Usage: c}
}

func TestKeyID(t *testing.T) {
	assert.Equal(t, "", KeyID(""))
	id := KeyID("sk-team-alice")
	assert.Regexp(t, `^key_[0-9a-f]{8}$`, id)
	assert.Equal(t, id, KeyID("sk-team-alice"))
	assert.NotEqual(t, id, KeyID("sk-team-bob"))
	assert.NotContains(t, id, "alice")
}

func TestLedgerBucketsAndGroups(t *testing.T) {
	stores := map[string]func(t *testing.T) state.Store{
		"memory": func(t *testing.T) state.Store { return state.NewMemory(nil) },
		"file": func(t *testing.T) state.Store {
			s, err := state.Open(t.Context(), state.Options{Dir: t.TempDir()})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			l := New(state.NewQueue(open(t), 0, nil), 0, nil)
			h0 := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour) // yesterday 00:00
			l.Add(rec(h0.Add(10*time.Minute), "key_a", "gpt-5", 100, 10, 40, false))
			l.Add(rec(h0.Add(20*time.Minute), "key_a", "gpt-5", 50, 5, 0, true))
			l.Add(rec(h0.Add(70*time.Minute), "key_b", "claude", 7, 3, 0, false))
			l.Flush(t.Context())

			hours, err := l.Query(t.Context(), Query{Start: h0, End: h0.Add(3 * time.Hour), Width: Hour, ByModel: true})
			require.NoError(t, err)
			require.Len(t, hours, 3)
			assert.Equal(t, []Group{{Model: "gpt-5", Counts: Counts{Requests: 2, InputTokens: 150, OutputTokens: 15, CachedTokens: 40, Errors: 1}}}, hours[0].Groups)
			assert.Equal(t, []Group{{Model: "claude", Counts: Counts{Requests: 1, InputTokens: 7, OutputTokens: 3}}}, hours[1].Groups)
			assert.Empty(t, hours[2].Groups)
			assert.Equal(t, h0.Add(time.Hour), hours[0].End)

			days, err := l.Query(t.Context(), Query{Start: h0, End: h0.Add(48 * time.Hour), Width: Day, ByKey: true})
			require.NoError(t, err)
			require.Len(t, days, 2)
			assert.Equal(t, []Group{
				{KeyID: "key_a", Counts: Counts{Requests: 2, InputTokens: 150, OutputTokens: 15, CachedTokens: 40, Errors: 1}},
				{KeyID: "key_b", Counts: Counts{Requests: 1, InputTokens: 7, OutputTokens: 3}},
			}, days[0].Groups)

			doors, err := l.Query(t.Context(), Query{Start: h0, End: h0.Add(24 * time.Hour), Width: Day, ByDoor: true, ByKey: true})
			require.NoError(t, err)
			assert.Equal(t, []Group{
				{KeyID: "key_a", Door: "openai", Counts: Counts{Requests: 2, InputTokens: 150, OutputTokens: 15, CachedTokens: 40, Errors: 1}},
				{KeyID: "key_b", Door: "openai", Counts: Counts{Requests: 1, InputTokens: 7, OutputTokens: 3}},
			}, doors[0].Groups)

			all, err := l.Query(t.Context(), Query{Start: h0, End: h0.Add(24 * time.Hour), Width: Day})
			require.NoError(t, err)
			assert.Equal(t, []Group{{Counts: Counts{Requests: 3, InputTokens: 157, OutputTokens: 18, CachedTokens: 40, Errors: 1}}}, all[0].Groups)
		})
	}
}

func TestLedgerDropsRecordsPastRetention(t *testing.T) {
	l := New(state.NewQueue(state.NewMemory(nil), 0, nil), 48*time.Hour, nil)
	old := time.Now().Add(-72 * time.Hour)
	l.Add(rec(old, "", "m", 1, 1, 0, false))
	l.Add(rec(time.Now(), "", "m", 2, 2, 0, false))
	l.Flush(t.Context())
	got, err := l.Query(t.Context(), Query{Start: old, End: time.Now().Add(time.Hour), Width: Day})
	require.NoError(t, err)
	var total Counts
	for _, b := range got {
		for _, g := range b.Groups {
			total.add(g.Counts)
		}
	}
	assert.Equal(t, Counts{Requests: 1, InputTokens: 2, OutputTokens: 2}, total)
}

// TestLedgerAddsUpAcrossReplicas: two ledgers on one Redis count into the
// same records.
func TestLedgerAddsUpAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	ledger := func() *Ledger {
		s, err := state.Open(t.Context(), state.Options{URL: srv.URL()})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return New(state.NewQueue(s, 0, nil), 0, nil)
	}
	a, b := ledger(), ledger()
	now := time.Now()
	a.Add(rec(now, "key_a", "m", 10, 1, 0, false))
	b.Add(rec(now, "key_a", "m", 20, 2, 0, false))
	a.Flush(t.Context())
	b.Flush(t.Context())
	for _, l := range []*Ledger{a, b} {
		got, err := l.Query(t.Context(), Query{Start: now.Truncate(time.Hour), End: now.Truncate(time.Hour).Add(time.Hour), Width: Hour, ByKey: true})
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, []Group{{KeyID: "key_a", Counts: Counts{Requests: 2, InputTokens: 30, OutputTokens: 3}}}, got[0].Groups)
	}
}

// TestLedgerKeepsKeyNames: a record keeps the name its key had; a bucket
// reports the name of the key's latest hour in it.
func TestLedgerKeepsKeyNames(t *testing.T) {
	l := New(state.NewQueue(state.NewMemory(nil), 0, nil), 0, nil)
	h0 := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	named := func(at time.Time, key, name string) Record {
		r := rec(at, key, "m", 1, 1, 0, false)
		r.KeyName = name
		return r
	}
	l.Add(named(h0.Add(time.Hour), "key_a", "alice"))
	l.Add(named(h0.Add(5*time.Hour), "key_a", "alice-renamed"))
	l.Add(named(h0.Add(3*time.Hour), "key_a", "alice"))
	l.Add(named(h0.Add(time.Hour), "key_b", ""))
	l.Flush(t.Context())

	hours, err := l.Query(t.Context(), Query{Start: h0, End: h0.Add(2 * time.Hour), Width: Hour, ByKey: true})
	require.NoError(t, err)
	assert.Equal(t, []Group{
		{KeyID: "key_a", KeyName: "alice", Counts: Counts{Requests: 1, InputTokens: 1, OutputTokens: 1}},
		{KeyID: "key_b", Counts: Counts{Requests: 1, InputTokens: 1, OutputTokens: 1}},
	}, hours[1].Groups)
	days, err := l.Query(t.Context(), Query{Start: h0, End: h0.Add(24 * time.Hour), Width: Day, ByKey: true})
	require.NoError(t, err)
	assert.Equal(t, "alice-renamed", days[0].Groups[0].KeyName, "the latest hour's name")
	assert.Equal(t, int64(3), days[0].Groups[0].Counts.Requests, "one key, whatever its names")
	byModel, err := l.Query(t.Context(), Query{Start: h0, End: h0.Add(24 * time.Hour), Width: Day, ByModel: true})
	require.NoError(t, err)
	assert.Equal(t, []Group{{Model: "m", Counts: Counts{Requests: 4, InputTokens: 4, OutputTokens: 4}}}, byModel[0].Groups, "no name unless grouped by key")
}

// TestLedgerReadsRecordsWithoutNames: the counters written before key
// names were kept (five parts) still count, with no name.
func TestLedgerReadsRecordsWithoutNames(t *testing.T) {
	mem := state.NewMemory(nil)
	l := New(state.NewQueue(mem, 0, nil), 0, nil)
	h0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	old := map[string]int64{
		"key_a\x1fopenai\x1fgpt-5\x1fweb\x1frequests": 2,
		"key_a\x1fopenai\x1fgpt-5\x1fweb\x1finput":    30,
		"key_a\x1fopenai\x1fgpt-5\x1fweb\x1fnew":      7, // a metric this version does not know
		"key_a\x1fopenai\x1fgpt-5\x1frequests":        5, // neither shape
	}
	require.NoError(t, mem.Add(t.Context(), table, hourKey(h0.Unix()), old, time.Hour))
	r := rec(h0, "key_a", "gpt-5", 1, 0, 0, false)
	r.KeyName = "alice"
	l.Add(r)
	l.Flush(t.Context())

	got, err := l.Query(t.Context(), Query{Start: h0, End: h0.Add(time.Hour), Width: Hour, ByKey: true, ByModel: true, ByDoor: true})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, []Group{{Model: "gpt-5", KeyID: "key_a", KeyName: "alice", Door: "openai", Counts: Counts{Requests: 3, InputTokens: 31}}}, got[0].Groups)
}

// TestLedgerNamesCannotShiftFields: a value holding the separator cannot
// move the dimensions after it.
func TestLedgerNamesCannotShiftFields(t *testing.T) {
	l := New(state.NewQueue(state.NewMemory(nil), 0, nil), 0, nil)
	now := time.Now().Truncate(time.Hour)
	r := rec(now, "key_a", "gpt\x1f5", 1, 0, 0, false)
	r.KeyName = "a\x1fb\x1fc"
	l.Add(r)
	l.Flush(t.Context())
	got, err := l.Query(t.Context(), Query{Start: now, End: now.Add(time.Hour), Width: Hour, ByKey: true, ByModel: true, ByDoor: true})
	require.NoError(t, err)
	assert.Equal(t, []Group{{Model: "gpt_5", KeyID: "key_a", KeyName: "a_b_c", Door: "openai", Counts: Counts{Requests: 1, InputTokens: 1}}}, got[0].Groups)
}

func TestParseField(t *testing.T) {
	for _, tc := range []struct {
		field  string
		want   parsed
		metric string
		ok     bool
	}{
		{"k\x1fd\x1fm\x1fb\x1falice\x1foutput", parsed{"k", "d", "m", "b", "alice"}, "output", true},
		{"k\x1fd\x1fm\x1fb\x1f\x1ferrors", parsed{"k", "d", "m", "b", ""}, "errors", true},
		{"k\x1fd\x1fm\x1fb\x1frequests", parsed{"k", "d", "m", "b", ""}, "requests", true},
		{"\x1fd\x1fm\x1fb\x1fcached", parsed{"", "d", "m", "b", ""}, "cached", true},
		{"k\x1fd\x1fm\x1frequests", parsed{}, "", false},
		{"k\x1fd\x1fm\x1fb\x1fn\x1fx\x1frequests", parsed{}, "", false},
		{"k\x1fd\x1fm\x1fb\x1fn\x1fbytes", parsed{}, "", false},
		{"", parsed{}, "", false},
	} {
		p, m, ok := parseField(tc.field)
		assert.Equal(t, tc.ok, ok, "%q", tc.field)
		if ok {
			assert.Equal(t, tc.want, p, "%q", tc.field)
			assert.Equal(t, tc.metric, metrics[m].name, "%q", tc.field)
		}
	}
}

// TestLedgerReadsADayInOneRoundTrip: on Redis, Query reads up to a day
// of hours in one pipeline, whatever its buckets.
func TestLedgerReadsADayInOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	s, err := state.Open(t.Context(), state.Options{URL: srv.URL()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	l := New(state.NewQueue(s, 0, nil), 0, nil)
	h0 := time.Now().UTC().Truncate(24 * time.Hour).Add(-48 * time.Hour)
	for h := range 48 {
		l.Add(rec(h0.Add(time.Duration(h)*time.Hour), "key_a", "m", int64(h), 0, 0, false))
	}
	l.Flush(t.Context())
	trips := &redistest.RoundTrips{}
	s.(*state.Redis).Client().AddHook(trips)

	hours, err := l.Query(t.Context(), Query{Start: h0, End: h0.Add(48 * time.Hour), Width: Hour, ByKey: true})
	require.NoError(t, err)
	require.Len(t, hours, 48)
	for h, b := range hours {
		require.Len(t, b.Groups, 1)
		assert.Equal(t, int64(h), b.Groups[0].Counts.InputTokens, "hour %d in its own bucket", h)
	}
	assert.Equal(t, int64(2), trips.Pipelines.Load(), "48 hours in two round trips")
	assert.Zero(t, trips.Cmds.Load())

	days, err := l.Query(t.Context(), Query{Start: h0, End: h0.Add(48 * time.Hour), Width: Day})
	require.NoError(t, err)
	require.Len(t, days, 2)
	assert.Equal(t, int64(23*24/2), days[0].Groups[0].Counts.InputTokens)
	assert.Equal(t, int64(24*24+23*24/2), days[1].Groups[0].Counts.InputTokens)
	assert.Equal(t, int64(4), trips.Pipelines.Load())
}
