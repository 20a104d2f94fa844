package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/mcp/mcptest"
)

// remoteServer is the mcptest server over streamable HTTP on loopback,
// recording the Authorization header it got.
func remoteServer(t *testing.T) (url string, auth func() string) {
	var mu sync.Mutex
	var got string
	h := mcptest.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Get("Authorization")
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() string { mu.Lock(); defer mu.Unlock(); return got }
}

func TestMCPRequestServers(t *testing.T) {
	url, auth := remoteServer(t)
	port := url[strings.LastIndexByte(url, ':'):]
	responsesBody := func(serverURL, extra string) string {
		return `{"model":"claude-sonnet-4.6","input":"add","tools":[{"type":"mcp","server_label":"calc","server_url":"` + serverURL + `"` + extra + `}]}`
	}
	refusals := []struct {
		name, hosts, body string
		status            int
		param, hint       string
	}{
		{"off without MCP_REMOTE_HOSTS", "", responsesBody(url, ""), 400, "tools[0].server_url", "MCP_REMOTE_HOSTS"},
		{"host not listed", "example.com", responsesBody(url, ""), 400, "tools[0].server_url", `"127.0.0.1": MCP_REMOTE_HOSTS does not list it`},
		{"a listed name resolving to loopback", "localhost", responsesBody("http://localhost"+port, ""), 400, "tools[0].server_url", "resolves to 127.0.0.1, a loopback or link-local address"},
		{"approval asked", "127.0.0.1", responsesBody(url, `,"require_approval":"always"`), 400, "tools[0].require_approval", `set it to "never"`},
		{"unreachable", "127.0.0.1", responsesBody("http://127.0.0.1:1/mcp", ""), 424, "tools[0].server_url", "could not be reached"},
		{"anthropic: off", "", `{"model":"claude-sonnet-4.6","max_tokens":10,"messages":[{"role":"user","content":"x"}],"mcp_servers":[{"type":"url","name":"calc","url":"` + url + `"}]}`, 400, "mcp_servers.0.url", "MCP_REMOTE_HOSTS"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": tc.hosts}, script(t, []string{"never asked"}))
			path := "/v1/responses"
			if strings.HasPrefix(tc.name, "anthropic") {
				path = "/v1/messages"
			}
			r := s.do(t, http.MethodPost, path, tc.body)
			require.Equal(t, tc.status, r.status, r.body)
			msg := gjson.Get(r.body, "error.message").String()
			assert.Contains(t, msg, tc.hint)
			if !strings.HasPrefix(tc.name, "anthropic") {
				assert.Equal(t, tc.param, gjson.Get(r.body, "error.param").String())
			}
			assert.Empty(t, s.up.Requests(), "nothing asked upstream")
		})
	}

	t.Run("responses: offered, run, shown", func(t *testing.T) {
		s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1"},
			script(t, []string{mcpInvoke("mcp__calc__add", `{"a":20,"b":22}`)}, []string{"42."}))
		r := s.do(t, http.MethodPost, "/v1/responses", responsesBody(url, `,"require_approval":"never","allowed_tools":["add"],"headers":{"Authorization":"Bearer tok"}`))
		require.Equal(t, http.StatusOK, r.status, r.body)
		item := gjson.Get(r.body, `output.#(type=="mcp_call")`)
		assert.Equal(t, "calc", item.Get("server_label").String())
		assert.Equal(t, "42", item.Get("output").String())
		assert.Equal(t, "Bearer tok", auth())
		prompt := upstreamText(s.up.Requests()[0])
		assert.Contains(t, prompt, "mcp__calc__add")
		assert.NotContains(t, prompt, "mcp__calc__echo", "allowed_tools filters")
	})

	t.Run("messages: mcp_servers with a token", func(t *testing.T) {
		s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1"},
			script(t, []string{mcpInvoke("mcp__calc__echo", `{"text":"hi"}`)}, []string{"done"}))
		r := s.do(t, http.MethodPost, "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":100,"messages":[{"role":"user","content":"echo"}],"mcp_servers":[{"type":"url","name":"calc","url":"`+url+`","authorization_token":"abc"}]}`)
		require.Equal(t, http.StatusOK, r.status, r.body)
		assert.Equal(t, "calc", gjson.Get(r.body, `content.#(type=="mcp_tool_use").server_name`).String())
		assert.Equal(t, "echo: hi", gjson.Get(r.body, `content.#(type=="mcp_tool_result").content.0.text`).String())
		assert.Equal(t, "Bearer abc", auth())
	})
}
