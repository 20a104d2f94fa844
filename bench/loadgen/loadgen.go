// Package loadgen is the load both benchmarks put on what they measure
// (go run ./bench in process, go run ./bench/e2e out of process): a
// number of calls from a number of concurrent workers.
package loadgen

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Run calls once n times from conc workers; a worker stops at its first
// failure. It returns the results of the calls that succeeded, in the
// order they ended, the wall time of the whole, and the first failure.
func Run[T any](conc, n int, once func() (T, error)) (results []T, wall time.Duration, err error) {
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				r, callErr := once()
				mu.Lock()
				if callErr == nil {
					results = append(results, r)
				} else if err == nil {
					err = callErr
				}
				mu.Unlock()
				if callErr != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return results, time.Since(start), err
}

// Percentile is the p-th percentile of ds (0 for none), the nearest rank
// at or below.
func Percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
