package config

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaults(t *testing.T) {
	cfg, err := FromMap(map[string]string{})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", cfg.Host)
	assert.Equal(t, 8002, cfg.Port)
	assert.Equal(t, "127.0.0.1:8002", cfg.Addr())
	assert.True(t, cfg.Loopback())
	assert.Empty(t, cfg.APIKeys)
	assert.Equal(t, []string{"auto"}, cfg.Models, "the web chat's own models")
	assert.True(t, cfg.ModelsAuto())
	assert.Equal(t, XIsHuman{Kind: "script"}, cfg.XIsHuman)
	assert.Equal(t, "https://cursor.com/api/chat", cfg.CursorAPIURL)
	assert.Equal(t, 60*time.Second, cfg.Timeout.Duration())
	assert.Equal(t, 15*time.Second, cfg.PingInterval.Duration())
	assert.Equal(t, "script", cfg.XIsHumanMode)
	assert.Equal(t, 2, cfg.ToolLoopMax)
	assert.Equal(t, 3, cfg.MaxContinuations)
	assert.Equal(t, "chrome", cfg.Fingerprint)
	assert.Equal(t, "auto", cfg.KiloToolStrict)
	assert.Equal(t, []string{"roocode", "kilocode", "cline"}, cfg.StrictAgents)
	assert.Equal(t, []string{"attempt_completion"}, cfg.TurnEndingTools)
	assert.Equal(t, 2048, cfg.StreamArgsAfter)
	assert.False(t, cfg.ExposeThinking)
	assert.Equal(t, 1000, cfg.ResponsesStoreMax)
	assert.EqualValues(t, 256<<20, cfg.ResponsesStoreBytes)
	assert.Equal(t, time.Hour, cfg.ResponsesStoreTTL.Duration())
	assert.Contains(t, cfg.ModelAliases, "claude-*=claude-sonnet-4.6", "Claude Code's names resolve by default")
	for _, family := range []string{"claude-*", "gpt-*", "o[0-9]*", "gemini-*"} {
		assert.Contains(t, cfg.ModelAliases, family+"=default", "whatever the upstream serves, %s reaches it", family)
	}
	assert.Less(t, slices.Index(cfg.ModelAliases, "claude-*=claude-sonnet-4.6"), slices.Index(cfg.ModelAliases, "claude-*=default"),
		"a served own target wins over the default")
}

func TestValues(t *testing.T) {
	cfg, err := FromMap(map[string]string{
		"HOST": "0.0.0.0", "PORT": "9000", "API_KEY": " k1 , k2,, ",
		"MODELS":    "gemini-3-flash, claude-sonnet-4.6-thinking",
		"MODEL_MAP": "gemini-3-flash=google/gemini-3-flash-preview,claude-sonnet-4.6=anthropic/claude-x",
		"TIMEOUT":   "2m", "MAX_DURATION": "90", "MAX_CONTINUATIONS": "0", "KILO_TOOL_STRICT": "true", "HTTPS_PROXY": "http://proxy:3128",
		"X_IS_HUMAN_MODE": "static:abc", "REFUSAL_PATTERNS": "(?i)nope;;(?i)never",
		"RESPONSES_STORE_MAX": "0", "RESPONSES_STORE_TTL": "10m",
		"MODEL_ALIASES": "claude-*=gemini-3-flash,gpt-?=claude-sonnet-4.6",
	})
	require.NoError(t, err)
	assert.False(t, cfg.Loopback())
	assert.Equal(t, []string{"k1", "k2"}, cfg.APIKeys)
	assert.Equal(t, 2*time.Minute, cfg.Timeout.Duration())
	assert.Equal(t, 90*time.Second, cfg.MaxDuration.Duration())
	assert.Equal(t, 0, cfg.MaxContinuations, "0 turns continuations off")
	assert.Equal(t, "true", cfg.KiloToolStrict)
	assert.Equal(t, "http://proxy:3128", cfg.ProxyURL, "HTTPS_PROXY fills PROXY_URL")
	assert.Equal(t, []string{"(?i)nope", "(?i)never"}, cfg.RefusalPatterns)
	assert.Equal(t, []string{"gemini-3-flash", "claude-sonnet-4.6-thinking"}, cfg.Models)
	assert.False(t, cfg.ModelsAuto(), "explicit models are published as given")
	assert.Equal(t, map[string]string{"gemini-3-flash": "google/gemini-3-flash-preview", "claude-sonnet-4.6": "anthropic/claude-x"}, cfg.ModelMap)
	assert.Equal(t, XIsHuman{Kind: "static", Static: "abc"}, cfg.XIsHuman)
	assert.Equal(t, 0, cfg.ResponsesStoreMax, "0 keeps no responses")
	assert.Equal(t, 10*time.Minute, cfg.ResponsesStoreTTL.Duration())
	assert.Equal(t, []string{"claude-*=gemini-3-flash", "gpt-?=claude-sonnet-4.6"}, cfg.ModelAliases)
}

func TestStateSettings(t *testing.T) {
	cfg, err := FromMap(map[string]string{})
	require.NoError(t, err)
	assert.Empty(t, cfg.StateURL, "the embedded file by default")
	assert.Empty(t, cfg.StateDir)
	assert.Equal(t, 90*24*time.Hour, cfg.UsageRetention.Duration())
	assert.Equal(t, 30*time.Second, cfg.StateConnectTimeout.Duration())
	assert.Equal(t, "second", cfg.StateSync)
	assert.Empty(t, cfg.AdminKey, "the usage endpoint is off")
	for _, v := range []string{"second", " always "} {
		cfg, err := FromMap(map[string]string{"STATE_SYNC": v})
		require.NoError(t, err, v)
		assert.Equal(t, map[string]string{"second": "second", " always ": "always"}[v], cfg.StateSync)
	}
	for _, u := range []string{"memory:", "redis://:pw@r:6379/0", "rediss://r:6380/1"} {
		cfg, err := FromMap(map[string]string{"STATE_URL": " " + u + " ", "USAGE_RETENTION": "720h"})
		require.NoError(t, err, u)
		assert.Equal(t, u, cfg.StateURL)
		assert.Equal(t, 30*24*time.Hour, cfg.UsageRetention.Duration())
	}
	_, err = FromMap(map[string]string{"STATE_URL": "postgres://u:secretpw@db/x"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secretpw", "the URL's password is not echoed")
}

func TestAgentBackend(t *testing.T) {
	cfg, err := FromMap(map[string]string{})
	require.NoError(t, err)
	assert.Equal(t, "web", cfg.Backend)
	assert.Equal(t, "agent", cfg.AgentBin)
	assert.Equal(t, 4, cfg.AgentMaxProcs)
	assert.Equal(t, 30*time.Second, cfg.AgentQueueTimeout.Duration())
	assert.False(t, cfg.ModelsSet, "MODELS defaulted")
	assert.Empty(t, cfg.AgentEnv)

	cfg, err = FromMap(map[string]string{
		"BACKEND": "agent", "AGENT_BIN": "/opt/agent", "AGENT_MAX_PROCS": "2", "AGENT_QUEUE_TIMEOUT": "5",
		"MODELS": "auto", "CURSOR_API_KEY": "key_abc", "PATH": "/usr/bin", "HOME": "/home/me",
		"API_KEY": "sk-gateway", "CURSOR_COOKIE": "c=1", "HTTPS_PROXY": "http://proxy:3128", "SOMETHING_ELSE": "x",
	})
	require.NoError(t, err)
	assert.Equal(t, "agent", cfg.Backend)
	assert.Equal(t, "/opt/agent", cfg.AgentBin)
	assert.Equal(t, 2, cfg.AgentMaxProcs)
	assert.True(t, cfg.ModelsSet)
	assert.Equal(t, "key_abc", cfg.CursorAPIKey)
	assert.Equal(t, []string{"PATH=/usr/bin", "HOME=/home/me", "CURSOR_API_KEY=key_abc"}, cfg.AgentEnv,
		"the CLI gets its key and the basics, nothing else of the gateway's")
}

func TestCursorBackend(t *testing.T) {
	cfg, err := FromMap(map[string]string{"BACKEND": "cursor"})
	require.NoError(t, err, "no key still starts: /ready and the requests say what is wrong")
	assert.Equal(t, "cursor", cfg.Backend)
	assert.Empty(t, cfg.CursorAPIKeys())
	assert.Equal(t, "", cfg.CursorBackendURL, "unset: Cursor's own two hosts")
	assert.Equal(t, "sdk-1.0.32", cfg.CursorClientVersion)
	assert.Equal(t, "sdk", cfg.CursorClientType)
	assert.Equal(t, "auto", cfg.CursorTransport)
	assert.Equal(t, 256, cfg.CursorParkMax)
	assert.Equal(t, 5*time.Minute, cfg.CursorParkTTL.Duration())
	assert.False(t, cfg.AliasesSet)

	cfg, err = FromMap(map[string]string{
		"BACKEND": "cursor", "CURSOR_API_KEY": " key_a, ,key_b ", "CURSOR_BACKEND_URL": "http://127.0.0.1:9000/",
		"CURSOR_TRANSPORT": "SSE", "CURSOR_CLIENT_VERSION": "sdk-1.1.0", "MODEL_ALIASES": "claude-*=gpt-5",
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"key_a", "key_b"}, cfg.CursorAPIKeys())
	assert.Equal(t, "http://127.0.0.1:9000", cfg.CursorBackendURL)
	assert.Equal(t, "sse", cfg.CursorTransport)
	assert.Equal(t, "sdk-1.1.0", cfg.CursorClientVersion)
	assert.True(t, cfg.AliasesSet)

	// The key list, read as API_KEY's is.
	for env, want := range map[string][]string{" a, b ,,c,": {"a", "b", "c"}, "k": {"k"}} {
		cfg, err := FromMap(map[string]string{"BACKEND": "cursor", "CURSOR_API_KEY": env})
		require.NoError(t, err)
		assert.Equal(t, want, cfg.CursorAPIKeys(), "CURSOR_API_KEY=%q", env)
	}
	cfg.CursorAPIKey = " , "
	assert.Empty(t, cfg.CursorAPIKeys(), "blanks only: no key")
}

func TestInvalidValues(t *testing.T) {
	cases := map[string]map[string]string{
		"PORT":                      {"PORT": "0"},
		"PORT=abc":                  {"PORT": "abc"},
		"TIMEOUT":                   {"TIMEOUT": "-1"},
		"TIMEOUT=abc":               {"TIMEOUT": "abc"},
		"CURSOR_API_URL":            {"CURSOR_API_URL": "ftp://x"},
		"LOG_LEVEL":                 {"LOG_LEVEL": "loud"},
		"MAX_INPUT_LENGTH":          {"MAX_INPUT_LENGTH": "5"},
		"X_IS_HUMAN_MODE":           {"X_IS_HUMAN_MODE": "sometimes"},
		"PING_INTERVAL":             {"PING_INTERVAL": "0"},
		"MODEL_CHECK_INTERVAL":      {"MODEL_CHECK_INTERVAL": "5"},
		"PROXY_URL":                 {"PROXY_URL": "nothing"},
		"REFUSAL_PATTERNS":          {"REFUSAL_PATTERNS": "(unclosed"},
		"TOOL_LOOP_MAX_REPEAT":      {"TOOL_LOOP_MAX_REPEAT": "-1"},
		"MAX_CONTINUATIONS":         {"MAX_CONTINUATIONS": "-1"},
		"MODELS":                    {"MODELS": " , "},
		"MODELS=auto,":              {"MODELS": "auto,gemini-3-flash"},
		"X_IS_HUMAN_MODE=static:":   {"X_IS_HUMAN_MODE": "static:"},
		"TLS_FINGERPRINT":           {"TLS_FINGERPRINT": "firefox"},
		"RESPONSES_STORE_MAX":       {"RESPONSES_STORE_MAX": "-1"},
		"RESPONSES_STORE_TTL":       {"RESPONSES_STORE_TTL": "0"},
		"RESPONSES_STORE_BYTES":     {"RESPONSES_STORE_BYTES": "-5"},
		"RESPONSES_WS_IDLE_TIMEOUT": {"RESPONSES_WS_IDLE_TIMEOUT": "0"},
		"RESPONSES_WS_MAX_TURNS":    {"RESPONSES_WS_MAX_TURNS": "0"},
		"RESPONSES_WS_MAX_BYTES":    {"RESPONSES_WS_MAX_BYTES": "1000"},
		"MODEL_ALIASES":             {"MODEL_ALIASES": "claude-*"},
		"MODEL_ALIASES=[":           {"MODEL_ALIASES": "[=claude-sonnet-4.6"},
		"BACKEND":                   {"BACKEND": "desktop"},
		"AGENT_BIN":                 {"AGENT_BIN": " "},
		"AGENT_MAX_PROCS":           {"AGENT_MAX_PROCS": "0"},
		"AGENT_QUEUE_TIMEOUT":       {"AGENT_QUEUE_TIMEOUT": "0"},
		"AGENT_MODELS_TTL":          {"AGENT_MODELS_TTL": "0.1"},
		"CURSOR_BACKEND_URL":        {"CURSOR_BACKEND_URL": "api2.cursor.sh"},
		"CURSOR_TRANSPORT":          {"CURSOR_TRANSPORT": "websocket"},
		"CURSOR_CLIENT_VERSION":     {"CURSOR_CLIENT_VERSION": " "},
		"CURSOR_PARK_MAX":           {"CURSOR_PARK_MAX": "-1"},
		"CURSOR_PARK_TTL":           {"CURSOR_PARK_TTL": "0"},
		"CURSOR_PARK_BYTES":         {"CURSOR_PARK_BYTES": "1000"},
		"STATE_URL":                 {"STATE_URL": "postgres://u:pw@db/x"},
		"STATE_CONNECT_TIMEOUT":     {"STATE_CONNECT_TIMEOUT": "0"},
		"STATE_SYNC":                {"STATE_SYNC": "everysec"},
		"USAGE_RETENTION":           {"USAGE_RETENTION": "60"},
		"LIMITS_SLOT_LEASE=500ms":   {"LIMITS_SLOT_LEASE": "500ms"},
		"LIMITS_SLOT_LEASE=11m":     {"LIMITS_SLOT_LEASE": "11m"},
	}
	for name, env := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := FromMap(env)
			require.Error(t, err)
			assert.Contains(t, err.Error(), name[:len(name)-len(trimAfterEq(name))])
		})
	}
	_, err := FromMap(map[string]string{"PORT": "0", "LOG_LEVEL": "loud", "TIMEOUT": "-1"})
	require.Error(t, err)
	for _, v := range []string{"PORT", "LOG_LEVEL", "TIMEOUT"} {
		assert.Contains(t, err.Error(), v, "every bad value is reported at once")
	}
}

// trimAfterEq returns the "=..." suffix of a case name, if any.
func trimAfterEq(s string) string {
	for i := range s {
		if s[i] == '=' {
			return s[i:]
		}
	}
	return ""
}

func TestScriptURLAuto(t *testing.T) {
	cfg, err := FromMap(map[string]string{"SCRIPT_URL": "auto", "SCRIPT_PAGE_URL": "https://cursor.com/cn"})
	require.NoError(t, err)
	assert.Equal(t, "auto", cfg.ScriptURL)
	assert.Equal(t, "https://cursor.com/cn", cfg.ScriptPageURL)
	_, err = FromMap(map[string]string{"SCRIPT_URL": "cursor.com/c.js"})
	assert.ErrorContains(t, err, "SCRIPT_URL")
	_, err = FromMap(map[string]string{"SCRIPT_PAGE_URL": "nope"})
	assert.ErrorContains(t, err, "SCRIPT_PAGE_URL")
}
