package state

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/state/redistest"
)

// TestCountersOf: the counters of many keys, in their order, as Counters
// reads them one by one; on Redis in one round trip.
func TestCountersOf(t *testing.T) {
	eachEngine(t, func(t *testing.T, e engine, s Store, replica func() Store) {
		ctx := t.Context()
		require.NoError(t, s.Add(ctx, "usage", "h1", map[string]int64{"a": 1, "b": 2}, time.Hour))
		require.NoError(t, s.Add(ctx, "usage", "h3", map[string]int64{"a": 30}, time.Hour))
		require.NoError(t, s.Add(ctx, "other", "h2", map[string]int64{"a": 5}, time.Hour))
		var trips *redistest.RoundTrips
		if r, ok := s.(*Redis); ok {
			trips = &redistest.RoundTrips{}
			r.client.AddHook(trips)
		}
		got, err := CountersOf(ctx, s, "usage", []string{"h1", "h2", "h3"})
		require.NoError(t, err)
		assert.Equal(t, []map[string]int64{{"a": 1, "b": 2}, {}, {"a": 30}}, got)
		if trips != nil {
			assert.Equal(t, int64(1), trips.Pipelines.Load(), "one pipeline")
			assert.Zero(t, trips.Cmds.Load(), "and no command alone")
		}
		none, err := CountersOf(ctx, s, "usage", nil)
		require.NoError(t, err)
		assert.Empty(t, none)

		ended, cancel := context.WithCancel(ctx)
		cancel()
		_, err = CountersOf(ended, s, "usage", []string{"h1"})
		assert.ErrorIs(t, err, context.Canceled)
	})
}
