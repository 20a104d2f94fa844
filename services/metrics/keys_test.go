package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/readiness"
)

func TestKeys(t *testing.T) {
	until := time.Now().Add(90 * time.Second)
	keys := []readiness.Key{
		{Key: "key-00000001", State: "ok", Requests: 7},
		{Key: "key-00000002", State: "cooling", CoolingUntil: &until, Requests: 3, Cooldowns: 2},
		{Key: "key-00000003", State: "bad"},
	}
	calls := 0
	m := New()
	m.Keys(func() []readiness.Key { calls++; return keys })

	families, err := m.Registry().Gather()
	require.NoError(t, err)
	assert.Equal(t, 1, calls, "one snapshot per scrape")
	// series: metric name -> "key state" (or "key") -> value
	series := map[string]map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "cursor2api_cursor_key_") {
			continue
		}
		for _, s := range f.GetMetric() {
			labels := ""
			for _, l := range s.GetLabel() {
				labels += " " + l.GetValue()
			}
			v := s.GetGauge().GetValue() + s.GetCounter().GetValue()
			if series[f.GetName()] == nil {
				series[f.GetName()] = map[string]float64{}
			}
			series[f.GetName()][labels[1:]] = v
		}
	}
	assert.Equal(t, map[string]float64{
		"key-00000001 ok": 1, "key-00000001 bad": 0, "key-00000001 cooling": 0, "key-00000001 probing": 0,
		"key-00000002 ok": 0, "key-00000002 bad": 0, "key-00000002 cooling": 1, "key-00000002 probing": 0,
		"key-00000003 ok": 0, "key-00000003 bad": 1, "key-00000003 cooling": 0, "key-00000003 probing": 0,
	}, series["cursor2api_cursor_key_state"], "one state per key")
	assert.Equal(t, map[string]float64{"key-00000001": 7, "key-00000002": 3, "key-00000003": 0}, series["cursor2api_cursor_key_requests_total"])
	assert.Equal(t, map[string]float64{"key-00000001": 0, "key-00000002": 2, "key-00000003": 0}, series["cursor2api_cursor_key_cooldowns_total"])
	cooling := series["cursor2api_cursor_key_cooling_seconds"]
	require.Len(t, cooling, 3)
	assert.InDelta(t, 90, cooling["key-00000002"], 5, "the rest that remains")
	assert.Zero(t, cooling["key-00000001"])
	assert.Zero(t, cooling["key-00000003"])
}
