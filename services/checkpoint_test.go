package services

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
)

func TestFromConfigCheckpoint(t *testing.T) {
	cfg, err := config.FromMap(map[string]string{"X_IS_HUMAN_MODE": "off", "PROXY_URL": "http://127.0.0.1:1,http://user:secret@127.0.0.1:2"})
	require.NoError(t, err)
	gw, err := FromConfig(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NotNil(t, gw.web.Checkpoint, "CHECKPOINT=auto by default")
	assert.Same(t, gw.Egress, gw.web.Egress, "attempts are pinned to the pool's proxies")

	r := gw.Readiness.Report(t.Context())
	require.NotNil(t, r.Checkpoint)
	assert.Equal(t, "auto", r.Checkpoint.Mode)
	var egresses []string
	for _, e := range r.Checkpoint.Egress {
		egresses = append(egresses, e.Egress)
		assert.False(t, e.HasCookie)
	}
	assert.Equal(t, []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, egresses, "one entry per proxy, without credentials")

	rec := httptest.NewRecorder()
	gw.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Contains(t, rec.Body.String(), `cursor2api_checkpoint_cookie_valid{egress="http://127.0.0.1:2"} 0`)
	assert.NotContains(t, rec.Body.String(), "secret")

	cfg, err = config.FromMap(map[string]string{"X_IS_HUMAN_MODE": "off", "CHECKPOINT": "off"})
	require.NoError(t, err)
	gw, err = FromConfig(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	assert.Nil(t, gw.web.Checkpoint)
	assert.Nil(t, gw.Readiness.Report(t.Context()).Checkpoint)
	rec = httptest.NewRecorder()
	gw.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.False(t, strings.Contains(rec.Body.String(), "checkpoint_"), "no checkpoint metrics when it is off")
}
