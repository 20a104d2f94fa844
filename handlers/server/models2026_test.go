package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

// doors are the three front doors, each with a request body for a model.
var doors = []struct {
	name, path string
	body       func(model string) string
	header     []string
}{
	{"openai", "/v1/chat/completions", func(m string) string {
		return `{"model":"` + m + `","messages":[{"role":"user","content":"hi"}]}`
	}, nil},
	{"anthropic", "/v1/messages", func(m string) string {
		return `{"model":"` + m + `","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	}, []string{"anthropic-version", "2023-06-01"}},
	{"responses", "/v1/responses", func(m string) string {
		return `{"model":"` + m + `","input":"hi"}`
	}, nil},
}

func post(t *testing.T, url, body string, header []string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// With no MODELS the gateway serves what the 2026 upstream allows, learned
// from it, and every name a client sends (Claude Code's, Codex's, the old
// default) reaches it through every door. When the upstream's list changes
// a request answers 400 with the new list, and the next one lands on it.
func TestModelsAutoThroughEveryDoor(t *testing.T) {
	gate := cursortest.NewModelGate("google/gemini-3-flash")
	up := cursortest.NewServer(t, gate.Reply(cursortest.Always(cursortest.Text(&cursortest.Usage{Input: 3, Output: 1}, "ok"))))
	gw, _, _ := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "MODELS": "auto"})

	require.Eventually(t, func() bool {
		return gjson.Get(get(t, gw+"/ready"), "models.source").String() == "upstream"
	}, 5*time.Second, 10*time.Millisecond, "learned at start")
	ready := get(t, gw+"/ready")
	assert.Equal(t, []any{"gemini-3-flash", "gemini-3-flash-thinking"}, gjson.Get(ready, "models.served").Value(), ready)
	assert.Equal(t, []any{"google/gemini-3-flash"}, gjson.Get(ready, "models.upstream").Value(), ready)
	assert.Equal(t, []any{"gemini-3-flash", "gemini-3-flash-thinking"}, gjson.Get(get(t, gw+"/v1/models"), "data.#.id").Value())

	names := []string{"gemini-3-flash", "claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-opus-4-1", "claude-sonnet-4.6", "gpt-5-codex", "gpt-5.1", "o4-mini"}
	for _, door := range doors {
		for _, name := range names {
			before := len(up.Requests())
			status, body := post(t, gw+door.path, door.body(name), door.header)
			require.Equal(t, http.StatusOK, status, "%s %s: %s", door.name, name, body)
			reqs := up.Requests()
			require.Len(t, reqs, before+1, "%s %s: one upstream request", door.name, name)
			assert.Equal(t, "google/gemini-3-flash", reqs[before].Model, "%s %s", door.name, name)
			assert.Equal(t, name, gjson.Get(body, "model").String(), "%s: the answer names the model asked for", door.name)
		}
		status, body := post(t, gw+door.path, door.body("llama-4"), door.header)
		assert.Equal(t, http.StatusNotFound, status, "%s: a name no alias covers: %s", door.name, body)
		assert.Contains(t, body, "gemini-3-flash", "%s: the error lists what is served", door.name)
	}

	// The upstream switches models between two checks, once per door.
	next := []struct{ id, public string }{{"openai/gpt-5.2", "gpt-5.2"}, {"xai/grok-5", "grok-5"}, {"anthropic/claude-sonnet-5", "claude-sonnet-5"}}
	for i, door := range doors {
		gate.Set(next[i].id)
		status, body := post(t, gw+door.path, door.body("claude-sonnet-4-5"), door.header)
		require.Equal(t, http.StatusBadRequest, status, "%s: never a 502: %s", door.name, body)
		assert.Contains(t, body, "now serves: "+next[i].public, "%s: the 400 lists what is served now", door.name)
		assert.Contains(t, body, "invalid_request_error", door.name)
		status, body = post(t, gw+door.path, door.body("claude-sonnet-4-5"), door.header)
		require.Equal(t, http.StatusOK, status, "%s: the next request reaches the new model: %s", door.name, body)
		assert.Equal(t, next[i].id, up.Requests()[len(up.Requests())-1].Model, door.name)
	}
	ready = get(t, gw+"/ready")
	assert.Equal(t, []any{"claude-sonnet-5", "claude-sonnet-5-thinking"}, gjson.Get(ready, "models.served").Value(), ready)
}

// Explicit MODELS are published as given and not replaced; the old
// answer to a refused model stays.
func TestExplicitModelsStay(t *testing.T) {
	gate := cursortest.NewModelGate("google/gemini-3-flash")
	up := cursortest.NewServer(t, gate.Reply(cursortest.Always(cursortest.Text(nil, "ok"))))
	gw, _, _ := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "MODELS": "claude-sonnet-4.6"})
	status, body := post(t, gw+"/v1/chat/completions", doors[0].body("claude-sonnet-4.6"), nil)
	assert.Equal(t, http.StatusBadRequest, status, body)
	assert.Contains(t, body, "MODEL_MAP")
	ready := get(t, gw+"/ready")
	assert.Equal(t, "configured", gjson.Get(ready, "models.source").String(), ready)
	assert.Equal(t, []any{"claude-sonnet-4.6", "claude-sonnet-4.6-thinking"}, gjson.Get(ready, "models.served").Value(), ready)
	for _, r := range up.Requests() {
		assert.Equal(t, "anthropic/claude-sonnet-4.6", r.Model, "no probe under explicit MODELS")
	}
}
