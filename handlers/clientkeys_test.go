package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

// writeKeys writes a keys file for a test and returns its path.
func writeKeys(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.yaml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

// TestNamedKeys: the keys of API_KEYS_FILE (a key, or its SHA-256) and of
// API_KEY let a request in; the usage endpoint and the metrics name the
// file's keys beside their fingerprints.
func TestNamedKeys(t *testing.T) {
	sum := sha256.Sum256([]byte("sk-bob-secret"))
	file := writeKeys(t, "keys:\n  - name: alice\n    key: sk-alice-secret\n  - name: bob\n    sha256: "+hex.EncodeToString(sum[:])+"\n")
	s := newStack(t, map[string]string{"API_KEYS_FILE": file, "API_KEY": "sk-plain", "ADMIN_KEY": "admin"},
		func(int, cursortest.Request) cursortest.Response {
			return cursortest.Text(&cursortest.Usage{Input: 100, Output: 10}, "ok")
		})
	chat := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`
	for _, k := range []string{"sk-alice-secret", "sk-bob-secret", "sk-bob-secret", "sk-plain"} {
		assert.Equal(t, http.StatusOK, s.postJSON(t, "/v1/chat/completions", k, chat), k)
	}
	assert.Equal(t, http.StatusUnauthorized, s.postJSON(t, "/v1/chat/completions", "sk-mallory", chat))
	s.ledger.Flush(context.Background())

	status, page := s.get(t, fmt.Sprintf("/v1/organization/usage/completions?start_time=%d&group_by=api_key_id", time.Now().Add(-time.Hour).Unix()), "admin")
	require.Equal(t, http.StatusOK, status, page.Raw)
	names := map[string]int64{}
	page.Get("data.0.results").ForEach(func(_, r gjson.Result) bool {
		assert.Regexp(t, `^key_[0-9a-f]{8}$`, r.Get("api_key_id").String())
		names[r.Get("api_key_name").String()] = r.Get("num_model_requests").Int()
		return true
	})
	assert.Equal(t, map[string]int64{"alice": 1, "bob": 2, "": 1}, names, page.Raw)

	resp, err := http.Get(s.URL + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Regexp(t, `cursor2api_client_key_requests_total\{key_id="key_[0-9a-f]{8}",key_name="bob"\} 2`, string(b))
	assert.Regexp(t, `cursor2api_client_key_tokens_total\{key_id="key_[0-9a-f]{8}",key_name="alice"\} 110`, string(b))
	assert.NotContains(t, string(b), "sk-")
	assert.False(t, strings.Contains(s.logs.String(), "secret"), "no key in the log")
}
