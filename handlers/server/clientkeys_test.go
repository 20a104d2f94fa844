package server

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
)

// TestKeysFile: a bad API_KEYS_FILE stops the start naming its line; a
// served gateway takes a key added to the file, without a restart.
func TestKeysFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	require.NoError(t, os.WriteFile(path, []byte("keys:\n  - name: alice\n    kee: sk-alice\n"), 0o600))
	cfg, err := config.FromMap(map[string]string{"API_KEYS_FILE": path, "X_IS_HUMAN_MODE": "static:x", "STATE_DIR": t.TempDir(), "MODELS": "claude-sonnet-4.6"})
	require.NoError(t, err)
	_, err = New(cfg, slog.New(slog.DiscardHandler), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "keys.yaml:3")
	assert.NotContains(t, err.Error(), "sk-alice")

	require.NoError(t, os.WriteFile(path, []byte("keys:\n  - name: alice\n    key: sk-alice\n"), 0o600))
	url, cancel, done := startGateway(t, map[string]string{"API_KEYS_FILE": path})
	defer func() { cancel(); <-done }()
	status := func(key string) int {
		req, _ := http.NewRequest(http.MethodGet, url+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, status("sk-alice"))
	assert.Equal(t, http.StatusUnauthorized, status("sk-bob-new"))
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("# a longer file\n", 2)+"keys:\n  - name: bob\n    key: sk-bob-new\n"), 0o600))
	assert.Eventually(t, func() bool { return status("sk-bob-new") == http.StatusOK }, 20*time.Second, 200*time.Millisecond, "reloaded on change")
}
