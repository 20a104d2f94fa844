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

// manyServers is a Responses body naming n MCP servers.
func manyServers(url string, n int) string {
	var tools []string
	for i := range n {
		tools = append(tools, fmt.Sprintf(`{"type":"mcp","server_label":"s%d","server_url":%q,"require_approval":"never"}`, i, url))
	}
	return `{"model":"claude-sonnet-4.6","input":"x","tools":[` + strings.Join(tools, ",") + `]}`
}

// anthropicServers is a Messages body naming n MCP servers.
func anthropicServers(url string, n int) string {
	var servers []string
	for i := range n {
		servers = append(servers, fmt.Sprintf(`{"type":"url","name":"s%d","url":%q}`, i, url))
	}
	return `{"model":"claude-sonnet-4.6","max_tokens":10,"messages":[{"role":"user","content":"x"}],"mcp_servers":[` + strings.Join(servers, ",") + `]}`
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
		{"host not listed", "example.com", responsesBody(url, ""), 400, "tools[0].server_url", `127.0.0.1` + port + `: MCP_REMOTE_HOSTS does not list it`},
		{"port not listed", "127.0.0.1", responsesBody(url, ""), 400, "tools[0].server_url", `127.0.0.1` + port + `: MCP_REMOTE_HOSTS does not list it`},
		{"a listed name resolving to loopback", "localhost:*", responsesBody("http://localhost"+port, ""), 400, "tools[0].server_url", "resolves to an address that is not public"},
		{"approval asked", "127.0.0.1:*", responsesBody(url, `,"require_approval":"always"`), 400, "tools[0].require_approval", `set it to "never"`},
		{"unreachable", "127.0.0.1:*", responsesBody("http://127.0.0.1:1/mcp", ""), 424, "tools[0].server_url", `the MCP server "calc" could not be connected: it did not answer as an MCP server`},
		{"a thousand servers", "127.0.0.1:*", manyServers(url, 1000), 400, "tools[10].server_url", "at most 10 MCP servers (the gateway's MCP_MAX_REQUEST_SERVERS); this one names 1000"},
		{"anthropic: a thousand servers", "127.0.0.1:*", anthropicServers(url, 1000), 400, "mcp_servers.10.url", "at most 10 MCP servers"},
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
			} else {
				assert.Equal(t, "error", gjson.Get(r.body, "type").String(), "Anthropic's error shape")
				assert.Equal(t, "invalid_request_error", gjson.Get(r.body, "error.type").String())
			}
			assert.Empty(t, s.up.Requests(), "nothing asked upstream")
		})
	}

	t.Run("responses: offered, run, shown", func(t *testing.T) {
		s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1:*"},
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

		// The header's value is neither echoed nor kept: GET serves what
		// was kept.
		assert.NotContains(t, r.body, "Bearer tok")
		assert.Equal(t, "<redacted>", gjson.Get(r.body, `tools.0.headers.Authorization`).String())
		got := s.do(t, http.MethodGet, "/v1/responses/"+gjson.Get(r.body, "id").String(), "")
		require.Equal(t, http.StatusOK, got.status, got.body)
		assert.NotContains(t, got.body, "Bearer tok")
		assert.Equal(t, "calc", gjson.Get(got.body, "tools.0.server_label").String())

		// A request's servers and tools are one series in the metrics.
		m := s.do(t, http.MethodGet, "/metrics", "")
		assert.Contains(t, m.body, `cursor2api_mcp_calls_total{outcome="ok",server="request",tool="request"} 1`)
		assert.NotContains(t, m.body, `tool="add"`)
	})

	t.Run("responses: allowed_tools [] offers none", func(t *testing.T) {
		s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1:*"}, script(t, []string{"no tools"}))
		r := s.do(t, http.MethodPost, "/v1/responses", responsesBody(url, `,"require_approval":"never","allowed_tools":[]`))
		require.Equal(t, http.StatusOK, r.status, r.body)
		assert.NotContains(t, upstreamText(s.up.Requests()[0]), "mcp__calc__")
		assert.Empty(t, gjson.Get(r.body, `output.#(type=="mcp_list_tools").tools`).Array())
	})

	t.Run("messages: allowed_tools [] offers none", func(t *testing.T) {
		s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1:*"}, script(t, []string{"no tools"}))
		r := s.do(t, http.MethodPost, "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":100,"messages":[{"role":"user","content":"echo"}],"mcp_servers":[{"type":"url","name":"calc","url":"`+url+`","tool_configuration":{"allowed_tools":[]}}]}`)
		require.Equal(t, http.StatusOK, r.status, r.body)
		assert.NotContains(t, upstreamText(s.up.Requests()[0]), "mcp__calc__")
	})

	t.Run("messages: mcp_servers with a token", func(t *testing.T) {
		s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1:*"},
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
			s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1:*"},
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
		s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1:*"},
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
			s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1:*"}, script(t, []string{"never asked"}))
			r := s.do(t, http.MethodPost, "/v1/responses", body(tc.choice, false))
			require.Equal(t, http.StatusBadRequest, r.status, r.body)
			assert.Equal(t, tc.param, gjson.Get(r.body, "error.param").String())
			assert.Contains(t, gjson.Get(r.body, "error.message").String(), tc.hint)
			assert.Empty(t, s.up.Requests(), "nothing asked upstream")
		})
	}
}
