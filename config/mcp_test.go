package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMCPSettings(t *testing.T) {
	cfg, err := FromMap(map[string]string{})
	require.NoError(t, err)
	assert.Empty(t, cfg.MCPServers)
	assert.Equal(t, "always", cfg.MCPTools)
	assert.Equal(t, 10, cfg.MCPMaxRounds)
	assert.Equal(t, 60*time.Second, cfg.MCPCallTimeout.Duration())
	assert.Equal(t, 100000, cfg.MCPMaxResultBytes)
	assert.Empty(t, cfg.MCPRemoteHosts, "no request-level server by default")
	assert.Equal(t, 30*time.Second, cfg.MCPConnectTimeout.Duration())
	assert.Equal(t, 4<<20, cfg.MCPMaxResponseBytes)
	assert.Equal(t, 200, cfg.MCPMaxTools)
	assert.Equal(t, 10, cfg.MCPMaxRequestServers)

	cfg, err = FromMap(map[string]string{"MCP_TOOLS": "when-no-client-tools", "MCP_ALLOWED_TOOLS": "mcp__fs__*,mcp__git__log",
		"MCP_MAX_ROUNDS": "3", "MCP_CALL_TIMEOUT": "2.5", "MCP_REMOTE_HOSTS": "mcp.example.com,*.corp.example"})
	require.NoError(t, err)
	assert.Equal(t, []string{"mcp__fs__*", "mcp__git__log"}, cfg.MCPAllowedTools)
	assert.Equal(t, 2500*time.Millisecond, cfg.MCPCallTimeout.Duration())
	assert.Equal(t, []string{"mcp.example.com", "*.corp.example"}, cfg.MCPRemoteHosts)

	for env, hint := range map[string]string{
		"MCP_TOOLS":               "MCP_TOOLS",
		"MCP_MAX_ROUNDS":          "MCP_MAX_ROUNDS",
		"MCP_CALL_TIMEOUT":        "MCP_CALL_TIMEOUT",
		"MCP_MAX_RESULT_BYTES":    "MCP_MAX_RESULT_BYTES",
		"MCP_CONNECT_TIMEOUT":     "MCP_CONNECT_TIMEOUT",
		"MCP_MAX_RESPONSE_BYTES":  "MCP_MAX_RESPONSE_BYTES",
		"MCP_MAX_TOOLS":           "MCP_MAX_TOOLS",
		"MCP_MAX_REQUEST_SERVERS": "MCP_MAX_REQUEST_SERVERS",
	} {
		bad := map[string]string{"MCP_TOOLS": "sometimes", "MCP_MAX_ROUNDS": "0", "MCP_CALL_TIMEOUT": "0", "MCP_MAX_RESULT_BYTES": "10",
			"MCP_CONNECT_TIMEOUT": "0", "MCP_MAX_RESPONSE_BYTES": "100", "MCP_MAX_TOOLS": "0", "MCP_MAX_REQUEST_SERVERS": "0"}[env]
		_, err := FromMap(map[string]string{env: bad})
		require.Error(t, err, env)
		assert.Contains(t, err.Error(), hint)
	}
}
