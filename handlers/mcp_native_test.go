package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/config"
	"cursor2api/services"
	"cursor2api/services/cursortest"
	"cursor2api/services/mcp/mcptest"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
)

// On the native back door the MCP tools go natively: the model's call of
// one is run by the gateway, and its result resumes the parked run, in
// the same answer.
func TestMCPNativeBackend(t *testing.T) {
	gin.SetMode(gin.TestMode)
	remote := httptest.NewServer(mcptest.Handler())
	defer remote.Close()
	up := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.ToolCalls(nativetest.Call{Tool: "mcp__calc__add", Args: map[string]any{"a": 20, "b": 22}}),
			nativetest.TextFunc(func(rs []nativetest.ExecResult) string { return "sum: " + rs[len(rs)-1].Text }),
		}, Usage: nativetest.Usage{Input: 42, Output: 7}}
	}})
	cfg, err := config.FromMap(map[string]string{
		"BACKEND": "cursor", "CURSOR_API_KEY": nativetest.DefaultAPIKey, "CURSOR_BACKEND_URL": up.URL,
		"CURSOR_TRANSPORT": "http2", "LOG_LEVEL": "debug", "CURSOR_API_URL": "http://127.0.0.1:9/never",
		"MCP_SERVERS": `{"mcpServers":{"calc":{"url":"` + remote.URL + `"}}}`,
	})
	require.NoError(t, err)
	logs := &cursortest.LogBuffer{}
	gw, err := services.FromConfig(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	require.NoError(t, err)
	srv := httptest.NewServer(New(Options{Chat: gw.Chat, Catalog: gw.Catalog, Aliases: gw.Aliases, MaxBodyBytes: cfg.MaxBodyBytes,
		PingInterval: cfg.PingInterval.Duration(), Logger: slog.New(slog.DiscardHandler), Readiness: gw.Readiness, Tools: gw.MCPTools()}))
	gw.StartMCP(context.Background())
	defer func() {
		srv.Close()
		gw.Close()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	}()
	s := &stack{Server: srv, cfg: cfg, logs: logs}
	require.Eventually(t, func() bool {
		return gjson.Get(s.do(t, http.MethodGet, "/ready", "").body, "mcp_servers.0.state").String() == "ready"
	}, 10*time.Second, 20*time.Millisecond)

	for _, stream := range []string{"false", "true"} {
		r := s.chat(t, `{"model":"claude-4.5-sonnet","stream":`+stream+`,"messages":[{"role":"user","content":"add 20 and 22"}]}`)
		require.Equal(t, http.StatusOK, r.status, r.body)
		assert.Contains(t, r.body, "sum: 42")
		assert.NotContains(t, r.body, "tool_calls\":[", "no foreign call reaches the client")
	}
	runs := up.Runs()
	require.Len(t, runs, 2, "one run per answer: the result resumed the parked run")
	assert.Contains(t, logs.String(), "running the gateway's tools")
}
