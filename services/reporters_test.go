package services

import (
	"context"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
	"cursor2api/services/metrics"
	"cursor2api/services/readiness"
)

// The egress pool reports once: /ready and /metrics read the same
// report, so a proxy cooling down after a 429 is unavailable in both.
func TestEgressReportsOnce(t *testing.T) {
	cfg, err := config.FromMap(map[string]string{"PROXY_URL": "http://127.0.0.1:1, http://127.0.0.1:2"})
	require.NoError(t, err)
	m, ready := metrics.New(), &readiness.Tracker{}
	pool, err := egressPool(cfg, m, ready, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	limited := pool.Transport(roundTrip(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusTooManyRequests, Status: "429 Too Many Requests", Body: http.NoBody, Request: req}, nil
	}), nil)
	req, err := http.NewRequest(http.MethodGet, "http://upstream.invalid/", nil)
	require.NoError(t, err)
	resp, err := limited.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()

	available := map[string]float64{}
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "cursor2api_egress_proxy_available" {
			continue
		}
		for _, s := range f.GetMetric() {
			available[s.GetLabel()[0].GetValue()] = s.GetGauge().GetValue()
		}
	}
	assert.Equal(t, map[string]float64{"http://127.0.0.1:1": 0, "http://127.0.0.1:2": 1}, available)
	r := ready.Report(context.Background())
	require.Len(t, r.Egress, 2)
	for _, p := range r.Egress {
		assert.Equal(t, available[p.Proxy] == 1, p.Available, p.Proxy)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
