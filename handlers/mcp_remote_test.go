package handlers

import (
	"fmt"
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

// TestMCPToolChoice: tool_choice {"type":"mcp"} makes the answer's first
// round call the named tool (or a tool) of the request's server, which
// the gateway runs; the round after it, with the result, chooses freely.
func TestMCPToolChoice(t *testing.T) {
	url, _ := remoteServer(t)
	body := func(choice string, stream bool) string {
		return fmt.Sprintf(`{"model":"claude-sonnet-4.6","input":"add 20 and 22","stream":%v,"tool_choice":%s,`+
			`"tools":[{"type":"mcp","server_label":"calc","server_url":%q,"require_approval":"never"}]}`, stream, choice, url)
	}
	const forced = "you MUST call"
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("a named tool, stream=%v", stream), func(t *testing.T) {
			s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1"},
				script(t, []string{mcpInvoke("mcp__calc__add", `{"a":20,"b":22}`)}, []string{"It is 42."}))
			r := s.do(t, http.MethodPost, "/v1/responses", body(`{"type":"mcp","server_label":"calc","name":"add"}`, stream))
			require.Equal(t, http.StatusOK, r.status, r.body)
			resp := r.body
			if stream {
				evs := respEvents(t, r)
				last := evs[len(evs)-1]
				require.Equal(t, "response.completed", last.Name)
				resp = last.Data.Get("response").Raw
			}
			assert.Equal(t, "42", gjson.Get(resp, `output.#(type=="mcp_call").output`).String())
			assert.Equal(t, "It is 42.", gjson.Get(resp, `output.#(type=="message").content.0.text`).String())
			reqs := s.up.Requests()
			require.Len(t, reqs, 2)
			assert.Contains(t, upstreamText(reqs[0]), `you MUST call the function "mcp__calc__add"`)
			assert.NotContains(t, upstreamText(reqs[1]), forced, "the round after the forced call chooses freely")
		})
	}

	t.Run("any tool of the server, asked again when the first reply calls none", func(t *testing.T) {
		s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1"},
			script(t, []string{"I would rather not."}, []string{mcpInvoke("mcp__calc__add", `{"a":1,"b":2}`)}, []string{"3."}))
		r := s.do(t, http.MethodPost, "/v1/responses", body(`{"type":"mcp","server_label":"calc"}`, false))
		require.Equal(t, http.StatusOK, r.status, r.body)
		assert.Equal(t, "3", gjson.Get(r.body, `output.#(type=="mcp_call").output`).String())
		assert.Equal(t, "3.", gjson.Get(r.body, `output.#(type=="message").content.0.text`).String())
		assert.NotContains(t, r.body, "rather not", "the reply without a call was asked again, not shown")
		reqs := s.up.Requests()
		require.Len(t, reqs, 3)
		assert.Contains(t, upstreamText(reqs[0]), "you MUST call at least one function")
		assert.NotContains(t, upstreamText(reqs[2]), forced)
	})

	refusals := []struct{ name, choice, param, hint string }{
		{"a tool the server does not offer", `{"type":"mcp","server_label":"calc","name":"nope"}`, "tool_choice.name", `"nope" is not a tool the MCP server "calc" offers here (its tools: add`},
		{"a server the request does not name", `{"type":"mcp","server_label":"docs"}`, "tool_choice.server_label", `"docs" names no mcp tool of this request`},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1"}, script(t, []string{"never asked"}))
			r := s.do(t, http.MethodPost, "/v1/responses", body(tc.choice, false))
			require.Equal(t, http.StatusBadRequest, r.status, r.body)
			assert.Equal(t, tc.param, gjson.Get(r.body, "error.param").String())
			assert.Contains(t, gjson.Get(r.body, "error.message").String(), tc.hint)
			assert.Empty(t, s.up.Requests(), "nothing asked upstream")
		})
	}
}
