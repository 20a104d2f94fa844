package metrics

import (
	"io"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStateMetrics(t *testing.T) {
	m := New()
	stats := StateStats{Failed: 5, Dropped: 1, Queued: 2, Degraded: true}
	m.State("redis", func() StateStats { return stats })
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		b, err := io.ReadAll(rec.Body)
		require.NoError(t, err)
		return string(b)
	}
	out := scrape()
	for _, want := range []string{
		`cursor2api_state_write_failures_total{engine="redis"} 5`,
		`cursor2api_state_writes_dropped_total{engine="redis"} 1`,
		`cursor2api_state_writes_queued{engine="redis"} 2`,
		`cursor2api_state_degraded{engine="redis"} 1`,
	} {
		assert.Contains(t, out, want)
	}
	stats = StateStats{Failed: 5}
	assert.Contains(t, scrape(), `cursor2api_state_degraded{engine="redis"} 0`, "read on every scrape")
}
