package responses

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNewResponseRedactsHeaders: an mcp tool's header values (bearer
// tokens) never reach the echoed response object, which the store keeps
// and GET serves; their names, the other tools and fields stay as sent.
func TestNewResponseRedactsHeaders(t *testing.T) {
	req := &Request{Model: "m", Tools: []json.RawMessage{
		json.RawMessage(`{"type":"function","name":"f","parameters":{"type":"object"},"headers":{"keep":"me"}}`),
		json.RawMessage(`{"type":"mcp","server_label":"calc","headers":{"Authorization":"Bearer tok","X-Key":"k\"ey"},"server_url":"https://h.example/mcp"}`),
		json.RawMessage(`{"type":"mcp","server_label":"bare","server_url":"https://h.example/mcp"}`),
	}}
	r := NewResponse("resp_1", 1, req)
	assert.JSONEq(t, `{"type":"function","name":"f","parameters":{"type":"object"},"headers":{"keep":"me"}}`, string(r.Tools[0]), "not an mcp tool")
	assert.Equal(t, `{"type":"mcp","server_label":"calc","headers":{"Authorization":"<redacted>","X-Key":"<redacted>"},"server_url":"https://h.example/mcp"}`, string(r.Tools[1]))
	assert.Equal(t, string(req.Tools[2]), string(r.Tools[2]))
	assert.Contains(t, string(req.Tools[1]), "Bearer tok", "the request itself is left as it came (the call needs it)")
	whole, err := json.Marshal(r)
	assert.NoError(t, err)
	assert.NotContains(t, string(whole), "Bearer tok")
}
