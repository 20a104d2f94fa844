package state

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTrips counts what a Redis client sends: commands alone, and
// pipelines.
type roundTrips struct{ cmds, pipelines atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.cmds.Add(1); return next(ctx, cmd) }
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.pipelines.Add(1); return next(ctx, cmds) }
}

// TestCountersOf: the counters of many keys, in their order, as Counters
// reads them one by one; on Redis in one round trip.
func TestCountersOf(t *testing.T) {
	eachEngine(t, func(t *testing.T, e engine, s Store, replica func() Store) {
		ctx := t.Context()
		require.NoError(t, s.Add(ctx, "usage", "h1", map[string]int64{"a": 1, "b": 2}, time.Hour))
		require.NoError(t, s.Add(ctx, "usage", "h3", map[string]int64{"a": 30}, time.Hour))
		require.NoError(t, s.Add(ctx, "other", "h2", map[string]int64{"a": 5}, time.Hour))
		var trips *roundTrips
		if r, ok := s.(*Redis); ok {
			trips = &roundTrips{}
			r.client.AddHook(trips)
		}
		got, err := CountersOf(ctx, s, "usage", []string{"h1", "h2", "h3"})
		require.NoError(t, err)
		assert.Equal(t, []map[string]int64{{"a": 1, "b": 2}, {}, {"a": 30}}, got)
		if trips != nil {
			assert.Equal(t, int64(1), trips.pipelines.Load(), "one pipeline")
			assert.Zero(t, trips.cmds.Load(), "and no command alone")
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
