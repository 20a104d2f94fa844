package loadgen

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRun(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name       string
		conc, n    int
		failAt     int64 // the call that fails (0: none)
		wantCalls  int64
		wantResult int
		wantErr    error
	}{
		{"all succeed", 4, 100, 0, 100, 100, nil},
		{"more workers than calls", 10, 3, 0, 3, 3, nil},
		// The failing worker stops; the other goes on to the end.
		{"one failure", 2, 50, 10, 50, 49, boom},
		// A lone worker stops at its failure.
		{"one worker fails", 1, 50, 10, 10, 9, boom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			results, wall, err := Run(tc.conc, tc.n, func() (int64, error) {
				c := calls.Add(1)
				if c == tc.failAt {
					return 0, boom
				}
				return c, nil
			})
			assert.Equal(t, tc.wantCalls, calls.Load(), "calls made")
			assert.Len(t, results, tc.wantResult, "results of the calls that succeeded")
			assert.ErrorIs(t, err, tc.wantErr)
			if tc.wantErr == nil {
				assert.NoError(t, err)
			}
			assert.Positive(t, wall)
		})
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	cases := []struct {
		p    int
		want time.Duration
	}{{0, 1}, {50, 6}, {90, 10}, {99, 10}, {100, 10}}
	for _, tc := range cases {
		assert.Equal(t, tc.want, Percentile(ds, tc.p), "p%d", tc.p)
	}
	assert.Zero(t, Percentile(nil, 50))
	assert.Equal(t, time.Duration(5), ds[0], "the input is left as it was")
}
