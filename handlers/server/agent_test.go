//go:build unix

package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/agentcli/agentclitest"
)

func TestServeAgentBackend(t *testing.T) {
	bin := agentclitest.Build(t)
	home := agentclitest.NewHome(t)
	url, shutdown, done := startGateway(t, map[string]string{
		"BACKEND": "agent", "AGENT_BIN": bin, "HOME": string(home), "AGENT_WORKDIR": t.TempDir(),
		"AGENT_MODELS_TTL": "1", "MODEL_CHECK_INTERVAL": "60", // the web model watch has no web back door here
	})
	get := func(path string) (int, string) {
		resp, err := http.Get(url + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := get("/ready")
	assert.Equal(t, http.StatusOK, status, body)
	_, body = get("/v1/models")
	assert.Contains(t, body, `"sonnet-4.5-thinking"`)

	home.SetModels(t, "opus-4.6 - Claude Opus 4.6\n")
	require.Eventually(t, func() bool {
		_, body := get("/v1/models")
		return strings.Contains(body, `"opus-4.6"`) && !strings.Contains(body, `"auto"`)
	}, 30*time.Second, 50*time.Millisecond, "the model list is refreshed in the background")

	shutdown()
	assert.NoError(t, serveResult(t, done, 10*time.Second, "Serve did not return"))
}
