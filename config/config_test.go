package config

import (
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
	assert.Equal(t, []string{"claude-sonnet-4.6"}, cfg.Models)
	assert.Equal(t, XIsHuman{Kind: "script"}, cfg.XIsHuman)
	assert.Equal(t, "https://cursor.com/api/chat", cfg.CursorAPIURL)
	assert.Equal(t, 60*time.Second, cfg.Timeout.Duration())
	assert.Equal(t, 15*time.Second, cfg.PingInterval.Duration())
	assert.Equal(t, "script", cfg.XIsHumanMode)
	assert.Equal(t, 2, cfg.ToolLoopMax)
	assert.Equal(t, "chrome", cfg.Fingerprint)
	assert.False(t, cfg.KiloToolStrict)
	assert.False(t, cfg.ExposeThinking)
}

func TestValues(t *testing.T) {
	cfg, err := FromMap(map[string]string{
		"HOST": "0.0.0.0", "PORT": "9000", "API_KEY": " k1 , k2,, ",
		"MODELS":    "gemini-3-flash, claude-sonnet-4.6-thinking",
		"MODEL_MAP": "gemini-3-flash=google/gemini-3-flash-preview,claude-sonnet-4.6=anthropic/claude-x",
		"TIMEOUT":   "2m", "MAX_DURATION": "90", "KILO_TOOL_STRICT": "true", "HTTPS_PROXY": "http://proxy:3128",
		"X_IS_HUMAN_MODE": "static:abc", "REFUSAL_PATTERNS": "(?i)nope;;(?i)never",
	})
	require.NoError(t, err)
	assert.False(t, cfg.Loopback())
	assert.Equal(t, []string{"k1", "k2"}, cfg.APIKeys)
	assert.Equal(t, 2*time.Minute, cfg.Timeout.Duration())
	assert.Equal(t, 90*time.Second, cfg.MaxDuration.Duration())
	assert.True(t, cfg.KiloToolStrict)
	assert.Equal(t, "http://proxy:3128", cfg.ProxyURL, "HTTPS_PROXY fills PROXY_URL")
	assert.Equal(t, []string{"(?i)nope", "(?i)never"}, cfg.RefusalPatterns)
	assert.Equal(t, []string{"gemini-3-flash", "claude-sonnet-4.6-thinking"}, cfg.Models)
	assert.Equal(t, map[string]string{"gemini-3-flash": "google/gemini-3-flash-preview", "claude-sonnet-4.6": "anthropic/claude-x"}, cfg.ModelMap)
	assert.Equal(t, XIsHuman{Kind: "static", Static: "abc"}, cfg.XIsHuman)
}

func TestInvalidValues(t *testing.T) {
	cases := map[string]map[string]string{
		"PORT":                    {"PORT": "0"},
		"PORT=abc":                {"PORT": "abc"},
		"TIMEOUT":                 {"TIMEOUT": "-1"},
		"TIMEOUT=abc":             {"TIMEOUT": "abc"},
		"CURSOR_API_URL":          {"CURSOR_API_URL": "ftp://x"},
		"LOG_LEVEL":               {"LOG_LEVEL": "loud"},
		"MAX_INPUT_LENGTH":        {"MAX_INPUT_LENGTH": "5"},
		"X_IS_HUMAN_MODE":         {"X_IS_HUMAN_MODE": "sometimes"},
		"PING_INTERVAL":           {"PING_INTERVAL": "0"},
		"MODEL_CHECK_INTERVAL":    {"MODEL_CHECK_INTERVAL": "5"},
		"PROXY_URL":               {"PROXY_URL": "nothing"},
		"REFUSAL_PATTERNS":        {"REFUSAL_PATTERNS": "(unclosed"},
		"TOOL_LOOP_MAX_REPEAT":    {"TOOL_LOOP_MAX_REPEAT": "-1"},
		"MODELS":                  {"MODELS": " , "},
		"X_IS_HUMAN_MODE=static:": {"X_IS_HUMAN_MODE": "static:"},
		"TLS_FINGERPRINT":         {"TLS_FINGERPRINT": "firefox"},
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
