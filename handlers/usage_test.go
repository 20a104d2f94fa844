package handlers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/handlers/console"
	"cursor2api/services/cursortest"
)

func (s *stack) get(t *testing.T, path, key string) (int, gjson.Result) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, gjson.ParseBytes(b)
}

func (s *stack) postJSON(t *testing.T, path, key, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestUsageRecordsEveryDoor: every answered request of every door, in a
// stream or whole, failed or not, is one record of its door, model and
// client key; auth failures and reads of kept responses are not.
func TestUsageRecordsEveryDoor(t *testing.T) {
	reply := func(n int, _ cursortest.Request) cursortest.Response {
		if n == 4 {
			return cursortest.Response{Status: http.StatusBadRequest, Body: `{"error":"bad"}`}
		}
		return cursortest.Text(&cursortest.Usage{Input: 100, Output: 10}, "ok")
	}
	s := newStack(t, map[string]string{"API_KEY": "sk-alice,sk-bob", "ADMIN_KEY": "admin"}, reply)
	chat := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`
	assert.Equal(t, http.StatusOK, s.postJSON(t, "/v1/chat/completions", "sk-alice", chat))
	assert.Equal(t, http.StatusOK, s.postJSON(t, "/v1/chat/completions", "sk-alice", strings.Replace(chat, `{"model"`, `{"stream":true,"model"`, 1)))
	assert.Equal(t, http.StatusOK, s.postJSON(t, "/v1/messages", "sk-bob", `{"model":"claude-sonnet-4.6","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`))
	assert.Equal(t, http.StatusOK, s.postJSON(t, "/v1/responses", "sk-bob", `{"model":"claude-sonnet-4.6","input":"hi"}`))
	assert.NotEqual(t, http.StatusOK, s.postJSON(t, "/v1/chat/completions", "sk-bob", chat), "the upstream refuses the fifth")
	assert.Equal(t, http.StatusUnauthorized, s.postJSON(t, "/v1/chat/completions", "sk-mallory", chat))
	status, _ := s.get(t, "/v1/models", "sk-alice")
	assert.Equal(t, http.StatusOK, status)
	s.ledger.Flush(context.Background())

	start := time.Now().Add(-time.Hour).Unix()
	status, page := s.get(t, fmt.Sprintf("/v1/organization/usage/completions?start_time=%d&bucket_width=1d&group_by=api_key_id", start), "admin")
	require.Equal(t, http.StatusOK, status, page.Raw)
	assert.Equal(t, "page", page.Get("object").String())
	results := page.Get("data.0.results").Array()
	require.Len(t, results, 2, page.Raw)
	byKey := map[string]gjson.Result{}
	for _, r := range results {
		assert.Equal(t, "organization.usage.completions.result", r.Get("object").String())
		assert.True(t, r.Get("model").Exists() && r.Get("model").Type == gjson.Null, "not grouped by model: null")
		byKey[r.Get("api_key_id").String()] = r
	}
	require.Len(t, byKey, 2)
	var alice, bob gjson.Result
	for id, r := range byKey {
		assert.Regexp(t, `^key_[0-9a-f]{8}$`, id)
		if r.Get("num_model_requests").Int() == 2 {
			alice = r
		} else {
			bob = r
		}
	}
	assert.EqualValues(t, 2, alice.Get("num_model_requests").Int())
	assert.EqualValues(t, 200, alice.Get("input_tokens").Int())
	assert.EqualValues(t, 20, alice.Get("output_tokens").Int())
	assert.EqualValues(t, 0, alice.Get("num_errors").Int())
	assert.EqualValues(t, 3, bob.Get("num_model_requests").Int())
	assert.EqualValues(t, 200, bob.Get("input_tokens").Int(), "the failed request used none")
	assert.EqualValues(t, 1, bob.Get("num_errors").Int())

	status, page = s.get(t, fmt.Sprintf("/v1/organization/usage/completions?start_time=%d&bucket_width=1h&group_by=model", start), "admin")
	require.Equal(t, http.StatusOK, status, page.Raw)
	var models []string
	var total int64
	page.Get("data").ForEach(func(_, b gjson.Result) bool {
		assert.Equal(t, b.Get("start_time").Int()+3600, b.Get("end_time").Int())
		b.Get("results").ForEach(func(_, r gjson.Result) bool {
			models = append(models, r.Get("model").String())
			total += r.Get("num_model_requests").Int()
			return true
		})
		return true
	})
	assert.Equal(t, []string{"claude-sonnet-4.6"}, models)
	assert.EqualValues(t, 5, total)
}

func TestUsageEndpointQueries(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "sk-alice", "ADMIN_KEY": "admin"}, script(t))
	off := newStack(t, map[string]string{"API_KEY": "sk-alice"}, script(t))
	now := time.Now().Unix()
	tests := []struct {
		name   string
		stack  *stack
		query  string
		key    string
		status int
		param  string
	}{
		{name: "off without ADMIN_KEY", stack: off, query: fmt.Sprintf("start_time=%d", now), key: "sk-alice", status: http.StatusNotFound},
		{name: "a client key is not the admin key", stack: s, query: fmt.Sprintf("start_time=%d", now), key: "sk-alice", status: http.StatusUnauthorized},
		{name: "no key", stack: s, query: fmt.Sprintf("start_time=%d", now), status: http.StatusUnauthorized},
		{name: "start_time required", stack: s, key: "admin", status: http.StatusBadRequest, param: "start_time"},
		{name: "bucket width", stack: s, query: fmt.Sprintf("start_time=%d&bucket_width=1m", now), key: "admin", status: http.StatusBadRequest, param: "bucket_width"},
		{name: "limit over the width's", stack: s, query: fmt.Sprintf("start_time=%d&bucket_width=1d&limit=32", now), key: "admin", status: http.StatusBadRequest, param: "limit"},
		{name: "end before start", stack: s, query: fmt.Sprintf("start_time=%d&end_time=%d", now, now-10), key: "admin", status: http.StatusBadRequest, param: "end_time"},
		{name: "group_by", stack: s, query: fmt.Sprintf("start_time=%d&group_by=project_id", now), key: "admin", status: http.StatusBadRequest, param: "group_by"},
		{name: "fine", stack: s, query: fmt.Sprintf("start_time=%d&group_by=model,api_key_id", now-3600), key: "admin", status: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := tt.stack.get(t, "/v1/organization/usage/completions?"+tt.query, tt.key)
			assert.Equal(t, tt.status, status, body.Raw)
			if tt.param != "" {
				assert.Equal(t, tt.param, body.Get("error.param").String(), body.Raw)
			}
			if status != http.StatusOK {
				assert.NotEmpty(t, body.Get("error.message").String())
			}
		})
	}
}

// TestUsageEndpointPages: more buckets than the limit come in pages that
// follow each other.
func TestUsageEndpointPages(t *testing.T) {
	s := newStack(t, map[string]string{"ADMIN_KEY": "admin"}, script(t))
	start := time.Now().Add(-30 * time.Hour).Unix()
	status, page := s.get(t, fmt.Sprintf("/v1/organization/usage/completions?start_time=%d&bucket_width=1h&limit=24", start), "admin")
	require.Equal(t, http.StatusOK, status, page.Raw)
	assert.Len(t, page.Get("data").Array(), 24)
	assert.True(t, page.Get("has_more").Bool())
	next := page.Get("next_page").String()
	assert.Equal(t, fmt.Sprint(page.Get("data.23.end_time").Int()), next)
	status, page = s.get(t, fmt.Sprintf("/v1/organization/usage/completions?start_time=%d&bucket_width=1h&limit=24&page=%s", start, next), "admin")
	require.Equal(t, http.StatusOK, status, page.Raw)
	assert.False(t, page.Get("has_more").Bool())
	assert.Equal(t, next, fmt.Sprint(page.Get("data.0.start_time").Int()))
	assert.Len(t, page.Get("data").Array(), 7, "the last 7 hours, the current one included")
}

// TestAdminKeyGuessesAreBounded: wrong ADMIN_KEYs on the usage endpoint
// are bounded per client address like the console's sign-ins, and count
// on both doors: past the limit even the right key waits, with a 429 in
// OpenAI's shape and Retry-After, and the console refuses it too.
func TestAdminKeyGuessesAreBounded(t *testing.T) {
	s := newStack(t, map[string]string{"ADMIN_KEY": "admin"}, script(t))
	usagePath := fmt.Sprintf("/v1/organization/usage/completions?start_time=%d", time.Now().Add(-time.Hour).Unix())
	for i := range console.MaxFailedSignIns {
		status, _ := s.get(t, usagePath, fmt.Sprintf("guess-%d", i))
		require.Equal(t, http.StatusUnauthorized, status, "guess %d", i)
	}
	r := s.do(t, http.MethodGet, usagePath, "", "Authorization", "Bearer admin")
	assert.Equal(t, http.StatusTooManyRequests, r.status, r.body)
	assert.Equal(t, "rate_limit_exceeded", gjson.Get(r.body, "error.code").String(), r.body)
	assert.Contains(t, gjson.Get(r.body, "error.message").String(), "wrong ADMIN_KEYs")
	assert.NotEmpty(t, r.header.Get("Retry-After"))

	page := s.do(t, http.MethodGet, "/console", "", "Authorization", "Bearer admin")
	assert.Equal(t, http.StatusTooManyRequests, page.status, "the console counts the usage endpoint's guesses")
}
