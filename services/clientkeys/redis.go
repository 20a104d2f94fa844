package clientkeys

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"cursor2api/utils"
)

// DefaultLease is how long a concurrency slot outlives the last renewal
// of the replica that holds it: a replica that dies frees its slots
// within it.
const DefaultLease = 30 * time.Second

// admitScript checks and counts a request in one round trip: the day's
// tokens, the live slots (expired leases dropped first), then the
// minute's requests; only when none is reached does it count the request
// and take a slot. It answers {limit, 0}: 0 let in, 1 rpm, 2 tokens, 3
// concurrent.
var admitScript = redis.NewScript(`
local rpmMax, tokMax, concMax = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now, lease = tonumber(ARGV[4]), tonumber(ARGV[5])
if tokMax > 0 and tonumber(redis.call('GET', KEYS[2]) or '0') >= tokMax then return 2 end
if concMax > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) >= concMax then return 3 end
end
if rpmMax > 0 and tonumber(redis.call('GET', KEYS[1]) or '0') >= rpmMax then return 1 end
redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], 61000)
if concMax > 0 then
  redis.call('ZADD', KEYS[3], now + lease, ARGV[6])
  redis.call('PEXPIRE', KEYS[3], lease * 2)
end
return 0`)

// Redis counts in a Redis shared by replicas: counters with TTLs, and
// concurrency slots as leases in a sorted set, renewed by Run while the
// request lasts.
type Redis struct {
	client *redis.Client
	lease  time.Duration

	mu   sync.Mutex
	held map[string]string // slot member → its set's key
}

// NewRedis counts in client's Redis; lease zero is DefaultLease.
func NewRedis(client *redis.Client, lease time.Duration) *Redis {
	if lease <= 0 {
		lease = DefaultLease
	}
	return &Redis{client: client, lease: lease, held: map[string]string{}}
}

func redisKeys(fp string, now time.Time) (rpm, tok, slots string) {
	// One hash tag per key: a cluster keeps a key's counters together.
	p := "cursor2api:limits:{" + fp + "}:"
	return p + "m:" + strconv.FormatInt(window(now), 10), p + "d:" + strconv.FormatInt(day(now), 10), p + "slots"
}

// Admit implements Counter, in one round trip.
func (r *Redis) Admit(ctx context.Context, fp string, l Limits, now time.Time) (func(), *Refusal, error) {
	rpm, tok, slots := redisKeys(fp, now)
	member := utils.RandomString(utils.Alphanumerics, 16)
	res, err := admitScript.Run(ctx, r.client, []string{rpm, tok, slots},
		l.RPM, l.TokensPerDay, l.Concurrent, now.UnixMilli(), r.lease.Milliseconds(), member).Int()
	if err != nil {
		return nil, nil, fmt.Errorf("client limits in Redis: %w", err)
	}
	switch res {
	case 1:
		return nil, &Refusal{Limit: LimitRPM, Max: l.RPM, RetryAfter: untilNextMinute(now)}, nil
	case 2:
		return nil, &Refusal{Limit: LimitTokensPerDay, Max: l.TokensPerDay, RetryAfter: untilTomorrow(now)}, nil
	case 3:
		return nil, &Refusal{Limit: LimitConcurrent, Max: l.Concurrent, RetryAfter: time.Second}, nil
	}
	if l.Concurrent == 0 {
		return func() {}, nil, nil
	}
	r.mu.Lock()
	r.held[member] = slots
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.held, member)
			r.mu.Unlock()
			// The request's context may be gone: the slot is freed on a
			// context of its own, bounded; a failure leaves it to its lease.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = r.client.ZRem(ctx, slots, member).Err()
		})
	}, nil, nil
}

// AddTokens implements Counter.
func (r *Redis) AddTokens(ctx context.Context, fp string, n int64, now time.Time) error {
	_, tok, _ := redisKeys(fp, now)
	p := r.client.TxPipeline()
	p.IncrBy(ctx, tok, n)
	p.Expire(ctx, tok, 48*time.Hour)
	_, err := p.Exec(ctx)
	return err
}

// Use implements Counter.
func (r *Redis) Use(ctx context.Context, fp string, now time.Time) (Use, error) {
	rpm, tok, slots := redisKeys(fp, now)
	p := r.client.Pipeline()
	m, d := p.Get(ctx, rpm), p.Get(ctx, tok)
	s := p.ZCount(ctx, slots, strconv.FormatInt(now.UnixMilli(), 10), "+inf")
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		return Use{}, err
	}
	mv, _ := m.Int64()
	dv, _ := d.Int64()
	return Use{RPM: mv, TokensToday: dv, Concurrent: s.Val()}, nil
}

// Run renews the leases of the slots this replica holds, every third of
// a lease, until ctx ends; a replica that stops (or dies) stops renewing,
// and its slots expire within a lease.
func (r *Redis) Run(ctx context.Context) {
	tick := time.NewTicker(r.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			r.renew(ctx)
		}
	}
}

func (r *Redis) renew(ctx context.Context) {
	r.mu.Lock()
	held := make(map[string]string, len(r.held))
	for m, k := range r.held {
		held[m] = k
	}
	r.mu.Unlock()
	if len(held) == 0 {
		return
	}
	until := float64(time.Now().Add(r.lease).UnixMilli())
	p := r.client.Pipeline()
	for m, k := range held {
		// XX: a slot already released is not brought back.
		p.ZAddXX(ctx, k, redis.Z{Score: until, Member: m})
		p.PExpire(ctx, k, 2*r.lease)
	}
	_, _ = p.Exec(ctx)
}
