package clientkeys

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/state/redistest"
)

// twoReplicas are two counters on one Redis, as two gateways have.
func twoReplicas(t *testing.T, lease time.Duration) (*Redis, *Redis) {
	srv := redistest.Start(t)
	mk := func() *Redis {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		return NewRedis(c, lease)
	}
	return mk(), mk()
}

// TestRedisRPMAcrossReplicas: a key limited to N requests per minute gets
// exactly N through two replicas asking at once.
func TestRedisRPMAcrossReplicas(t *testing.T) {
	a, b := twoReplicas(t, 0)
	ctx, l := context.Background(), Limits{RPM: 7}
	now := time.Now().Truncate(time.Minute).Add(10 * time.Second) // one window for the whole test
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			rel, r, err := c.Admit(ctx, "key_x", l, now)
			if !assert.NoError(t, err) {
				return
			}
			if r != nil {
				assert.Equal(t, LimitRPM, r.Limit)
				refused.Add(1)
				return
			}
			rel()
			admitted.Add(1)
		})
	}
	wg.Wait()
	assert.EqualValues(t, 7, admitted.Load())
	assert.EqualValues(t, 33, refused.Load())
	u, err := b.Use(ctx, "key_x", now)
	require.NoError(t, err)
	assert.EqualValues(t, 7, u.RPM)
}

// TestRedisConcurrentSlots: two slots across replicas; the third is
// refused; a slot comes back when its request ends, and when its replica
// is gone (its lease not renewed), within the lease.
func TestRedisConcurrentSlots(t *testing.T) {
	lease := 2 * time.Second
	a, b := twoReplicas(t, lease)
	ctx, l := context.Background(), Limits{Concurrent: 2}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go b.Run(runCtx) // a is the replica that dies: it never renews

	relB, r, err := b.Admit(ctx, "key_y", l, time.Now())
	require.NoError(t, err)
	require.Nil(t, r)
	_, r, err = a.Admit(ctx, "key_y", l, time.Now()) // a's stream, never ended
	require.NoError(t, err)
	require.Nil(t, r)
	_, r, err = b.Admit(ctx, "key_y", l, time.Now())
	require.NoError(t, err)
	require.NotNil(t, r, "the third is refused")
	assert.Equal(t, LimitConcurrent, r.Limit)

	relB()
	rel, r, err := b.Admit(ctx, "key_y", l, time.Now())
	require.NoError(t, err)
	require.Nil(t, r, "the ended stream's slot came back")

	// b's slot is renewed past its lease; a's lapses.
	require.Eventually(t, func() bool {
		_, r, err := b.Admit(ctx, "key_y", l, time.Now())
		return err == nil && r == nil
	}, 4*lease, 100*time.Millisecond, "the dead replica's slot comes back within its lease")
	u, err := b.Use(ctx, "key_y", time.Now())
	require.NoError(t, err)
	assert.EqualValues(t, 2, u.Concurrent, "b's two slots, renewed")
	rel()
}

// TestRedisTokensPerDay: the day's tokens from every replica add up.
func TestRedisTokensPerDay(t *testing.T) {
	a, b := twoReplicas(t, 0)
	ctx, now, l := context.Background(), time.Now(), Limits{TokensPerDay: 100}
	require.NoError(t, a.AddTokens(ctx, "key_z", 60, now))
	_, r, err := b.Admit(ctx, "key_z", l, now)
	require.NoError(t, err)
	require.Nil(t, r)
	require.NoError(t, b.AddTokens(ctx, "key_z", 40, now))
	_, r, err = a.Admit(ctx, "key_z", l, now)
	require.NoError(t, err)
	require.NotNil(t, r)
	assert.Equal(t, LimitTokensPerDay, r.Limit)
}

// TestRedisAdmitIsOneRoundTrip: once the script is loaded, a check with
// every limit set is one command.
func TestRedisAdmitIsOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	h := &redistest.RoundTrips{}
	c.AddHook(h)
	r := NewRedis(c, 0)
	ctx, l := context.Background(), Limits{RPM: 100, TokensPerDay: 100, Concurrent: 10}
	_, _, err := r.Admit(ctx, "key_w", l, time.Now()) // loads the script (EVALSHA, then EVAL)
	require.NoError(t, err)
	h.Cmds.Store(0)
	h.Pipelines.Store(0)
	_, refused, err := r.Admit(ctx, "key_w", l, time.Now())
	require.NoError(t, err)
	require.Nil(t, refused)
	assert.EqualValues(t, 1, h.Cmds.Load()+h.Pipelines.Load())
}
