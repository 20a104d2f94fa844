package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the engine of STATE_URL=redis://… (or rediss://): a Redis or
// Valkey server that every replica shares. Values expire by Redis's own
// expiry; a table's keys share one hash tag, so a table lives in one
// slot of a cluster.
type Redis struct {
	client *redis.Client
	url    string // redacted
}

// redisTimeout bounds every command, so that a lost server never holds a
// request for long.
const redisTimeout = 2 * time.Second

func openRedis(ctx context.Context, raw string, wait time.Duration, logger *slog.Logger) (*Redis, error) {
	opts, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("STATE_URL=%s: %v", Redact(raw), err)
	}
	opts.DialTimeout = redisTimeout
	opts.ReadTimeout = redisTimeout
	opts.WriteTimeout = redisTimeout
	opts.MaxRetries = 1
	// The gateway's own bounded queue retries; the client's should not
	// stack long waits on top of it.
	opts.PoolTimeout = redisTimeout
	r := &Redis{client: redis.NewClient(opts), url: Redact(raw)}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last error
	for {
		if last = r.client.Ping(ctx).Err(); last == nil {
			return r, nil
		}
		logger.Warn("state: waiting for Redis", "state_url", r.url, "error", last)
		select {
		case <-ctx.Done():
			_ = r.client.Close()
			return nil, fmt.Errorf("STATE_URL=%s: Redis did not answer within %s (%v): start it, fix the address, or set STATE_URL to nothing (a file under STATE_DIR)", r.url, wait, last)
		case <-time.After(time.Second):
		}
	}
}

// NewRedis returns a store on a Redis client the caller made (tests).
func NewRedis(client *redis.Client) *Redis { return &Redis{client: client, url: "redis"} }

// Engine implements Store.
func (*Redis) Engine() string { return "redis" }

// Ping implements Store.
func (r *Redis) Ping(ctx context.Context) error { return r.client.Ping(ctx).Err() }

// Close implements Store.
func (r *Redis) Close() error { return r.client.Close() }

// The keys of a table: cursor2api:{table}:v:<key> (values),
// …:i (the index of values by expiry, in ms), …:s (sizes by key),
// …:b (total size) and …:c:<key> (counters).
func redisKey(table, kind string) string { return "cursor2api:{" + table + "}:" + kind }

// putScript keeps a value and evicts within the limits in one step, so
// that replicas writing at once keep the index, the sizes and the total
// consistent. The index is in the order of the Puts (a counter, …:n);
// the sizes hash holds "size:expiry-ms" per key.
var putScript = redis.NewScript(`
local vkey, idx, sizes, total, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local value, ttl, now, max, maxb = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local member, prefix = ARGV[6], ARGV[7]
local function drop(m)
  local rec = redis.call('HGET', sizes, m)
  if rec then
    redis.call('DECRBY', total, tonumber(string.match(rec, '^(%d+)')))
    redis.call('HDEL', sizes, m)
  end
  redis.call('ZREM', idx, m)
  redis.call('DEL', prefix .. m)
end
if redis.call('ZSCORE', idx, member) then drop(member) end
redis.call('SET', vkey, value, 'PX', ttl)
redis.call('ZADD', idx, redis.call('INCR', seq), member)
redis.call('HSET', sizes, member, string.len(value) .. ':' .. (now + ttl))
redis.call('INCRBY', total, string.len(value))
while true do
  local first = redis.call('ZRANGE', idx, 0, 0)[1]
  if not first then break end
  local rec = redis.call('HGET', sizes, first) or '0:0'
  local expires = tonumber(string.match(rec, ':(%d+)$'))
  local n = redis.call('ZCARD', idx)
  local t = tonumber(redis.call('GET', total) or '0')
  if expires > now and (max <= 0 or n <= max) and (maxb <= 0 or t <= maxb) then break end
  drop(first)
end
for _, k in ipairs({idx, sizes, total, seq}) do redis.call('PEXPIRE', k, ttl) end
return 1
`)

// deleteScript forgets a value and its bookkeeping; it returns 1 when
// the value was there.
var deleteScript = redis.NewScript(`
local vkey, idx, sizes, total, member = KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1]
local had = redis.call('EXISTS', vkey)
local rec = redis.call('HGET', sizes, member)
if rec then
  redis.call('DECRBY', total, tonumber(string.match(rec, '^(%d+)')))
  redis.call('HDEL', sizes, member)
end
redis.call('ZREM', idx, member)
redis.call('DEL', vkey)
return had
`)

func (r *Redis) tableKeys(table, key string) []string {
	return []string{redisKey(table, "v:"+key), redisKey(table, "i"), redisKey(table, "s"), redisKey(table, "b"), redisKey(table, "n")}
}

// Put implements Store.
func (r *Redis) Put(ctx context.Context, table, key string, value []byte, lim Limits) error {
	ttl := max(lim.TTL.Milliseconds(), 1)
	err := putScript.Run(ctx, r.client, r.tableKeys(table, key), value, ttl, time.Now().UnixMilli(), lim.Max, lim.MaxBytes, key, redisKey(table, "v:")).Err()
	if err != nil {
		return fmt.Errorf("redis %s: %w", r.url, err)
	}
	return nil
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, table, key string) ([]byte, error) {
	b, err := r.client.Get(ctx, redisKey(table, "v:"+key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", r.url, err)
	}
	return b, nil
}

// Delete implements Store.
func (r *Redis) Delete(ctx context.Context, table, key string) (bool, error) {
	n, err := deleteScript.Run(ctx, r.client, r.tableKeys(table, key), key).Int()
	if err != nil {
		return false, fmt.Errorf("redis %s: %w", r.url, err)
	}
	return n == 1, nil
}

// Add implements Store.
func (r *Redis) Add(ctx context.Context, table, key string, add map[string]int64, ttl time.Duration) error {
	k := redisKey(table, "c:"+key)
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for f, n := range add {
			p.HIncrBy(ctx, k, f, n)
		}
		p.PExpire(ctx, k, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis %s: %w", r.url, err)
	}
	return nil
}

// Counters implements Store.
func (r *Redis) Counters(ctx context.Context, table, key string) (map[string]int64, error) {
	m, err := r.client.HGetAll(ctx, redisKey(table, "c:"+key)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", r.url, err)
	}
	return r.counters(key, m)
}

// countersOf reads the counters of keys in one round trip: a pipeline of
// HGETALLs (see CountersOf).
func (r *Redis) countersOf(ctx context.Context, table string, keys []string) ([]map[string]int64, error) {
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HGetAll(ctx, redisKey(table, "c:"+k))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", r.url, err)
	}
	out := make([]map[string]int64, len(keys))
	for i, c := range cmds {
		if out[i], err = r.counters(keys[i], c.Val()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// counters are the counters of key as numbers.
func (r *Redis) counters(key string, m map[string]string) (map[string]int64, error) {
	out := make(map[string]int64, len(m))
	for f, v := range m {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redis %s: counter %s of %s is %q, not a number", r.url, f, key, v)
		}
		out[f] = n
	}
	return out, nil
}

// Client is the store's Redis client, for the parts that keep counters
// of their own in the same Redis (the client keys' limits).
func (r *Redis) Client() *redis.Client { return r.client }
