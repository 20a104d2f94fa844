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

// TestUsageKeepsTheNameAKeyWasUsedUnder: the usage endpoint names a key
// as it was named when used, not as the file names it now; a record
// older than key names takes the key's name now.
func TestUsageKeepsTheNameAKeyWasUsedUnder(t *testing.T) {
	file := writeKeys(t, "keys:\n  - name: alice\n    key: sk-alice-secret\n")
	// An hour before the request's (taken first: the clock may pass an hour).
	earlier := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	s := newStack(t, map[string]string{"API_KEYS_FILE": file, "ADMIN_KEY": "admin"},
		func(int, cursortest.Request) cursortest.Response {
			return cursortest.Text(&cursortest.Usage{Input: 100, Output: 10}, "ok")
		})
	chat := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`
	require.Equal(t, http.StatusOK, s.postJSON(t, "/v1/chat/completions", "sk-alice-secret", chat))
	// The request's name is taken when it is let in: a rename after it
	// does not change its record.
	require.NoError(t, os.WriteFile(file, []byte("keys:\n  - name: alice-renamed\n    key: sk-alice-secret\n"), 0o600))
	require.NoError(t, s.keys.Reload())
	k, _ := s.keys.Match("sk-alice-secret")
	require.Equal(t, "alice-renamed", k.Name)
	// A record of the same key from before key names were kept, an hour
	// earlier: five parts, no name.
	require.NoError(t, s.store.mem.Add(context.Background(), "usage", earlier.Format("2006010215"),
		map[string]int64{k.Fingerprint + "\x1fopenai\x1fclaude-sonnet-4.6\x1fcursor\x1frequests": 4}, time.Hour))

	names := func() (map[string]int64, string) {
		// The record is added as the request's handler returns, which may
		// be after its client has the answer.
		s.ledger.Flush(context.Background())
		status, page := s.get(t, fmt.Sprintf("/v1/organization/usage/completions?start_time=%d&bucket_width=1h&group_by=api_key_id", earlier.Unix()), "admin")
		require.Equal(t, http.StatusOK, status, page.Raw)
		got := map[string]int64{}
		page.Get("data.#.results").ForEach(func(_, rs gjson.Result) bool {
			rs.ForEach(func(_, r gjson.Result) bool {
				assert.Equal(t, k.Fingerprint, r.Get("api_key_id").String())
				got[r.Get("api_key_name").String()] += r.Get("num_model_requests").Int()
				return true
			})
			return true
		})
		return got, page.Raw
	}
	want := map[string]int64{"alice": 1, "alice-renamed": 4}
	require.Eventually(t, func() bool { got, _ := names(); return len(got) == len(want) }, 10*time.Second, 50*time.Millisecond)
	got, raw := names()
	assert.Equal(t, want, got, raw)
}
