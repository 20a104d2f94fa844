package clientkeys

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"cursor2api/services/state/redistest"
)

// benchAdmit times Admit and the release of its slot, a key with every
// limit set, and reports the median and p99 besides the mean.
func benchAdmit(b *testing.B, c Counter) {
	ctx, l := context.Background(), Limits{RPM: 1 << 40, TokensPerDay: 1 << 40, Concurrent: 1 << 20}
	took := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		rel, r, err := c.Admit(ctx, "key_bench", l, start)
		if err != nil || r != nil {
			b.Fatal(err, r)
		}
		took = append(took, time.Since(start))
		rel()
	}
	slices.Sort(took)
	if len(took) > 0 {
		b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
	}
}

// BenchmarkAdmitMemory is the limit check of one process (target: p50
// under 0.1 ms).
func BenchmarkAdmitMemory(b *testing.B) { benchAdmit(b, NewMemory()) }

// BenchmarkAdmitRedis is the limit check on Redis: one round trip (the
// script) on the loopback; the release is a second, off the check's time.
func BenchmarkAdmitRedis(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	b.Cleanup(func() { _ = c.Close() })
	benchAdmit(b, NewRedis(c, 0))
}
