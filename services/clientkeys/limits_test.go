package clientkeys

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemoryLimits: each limit refuses at its bound, says its
// Retry-After, and counts nothing for a refused request; the minute and
// the day start afresh.
func TestMemoryLimits(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 28, 23, 59, 30, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		l     Limits
		setup func(m *Memory) // before the request that is refused
		limit string
		retry time.Duration
		after time.Time // when a request is let in again
	}{
		{"rpm", Limits{RPM: 2}, func(m *Memory) {
			for range 2 {
				rel, r, _ := m.Admit(ctx, "k", Limits{RPM: 2}, t0)
				require.Nil(t, r)
				rel()
			}
		}, LimitRPM, 30 * time.Second, t0.Add(30 * time.Second)},
		{"tokens", Limits{TokensPerDay: 100}, func(m *Memory) {
			require.NoError(t, m.AddTokens(ctx, "k", 100, t0))
		}, LimitTokensPerDay, 30 * time.Second, t0.Add(30 * time.Second)},
		{"concurrent", Limits{Concurrent: 1}, func(m *Memory) {
			_, r, _ := m.Admit(ctx, "k", Limits{Concurrent: 1}, t0)
			require.Nil(t, r)
		}, LimitConcurrent, time.Second, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemory()
			tc.setup(m)
			before, _ := m.Use(ctx, "k", t0)
			_, r, err := m.Admit(ctx, "k", tc.l, t0)
			require.NoError(t, err)
			require.NotNil(t, r)
			assert.Equal(t, tc.limit, r.Limit)
			assert.Equal(t, tc.retry, r.RetryAfter)
			after, _ := m.Use(ctx, "k", t0)
			assert.Equal(t, before, after, "a refused request counts nothing")
			if !tc.after.IsZero() {
				_, r, _ = m.Admit(ctx, "k", tc.l, tc.after)
				assert.Nil(t, r, "let in once the window turns")
			}
		})
	}
}

func TestMemoryReleaseFreesTheSlotOnce(t *testing.T) {
	ctx, now := context.Background(), time.Now()
	m := NewMemory()
	l := Limits{Concurrent: 2}
	rel1, _, _ := m.Admit(ctx, "k", l, now)
	_, _, _ = m.Admit(ctx, "k", l, now)
	rel1()
	rel1()
	u, _ := m.Use(ctx, "k", now)
	assert.EqualValues(t, 1, u.Concurrent, "a second release frees nothing")
	assert.EqualValues(t, 2, u.RPM)
}
