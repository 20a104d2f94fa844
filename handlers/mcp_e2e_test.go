package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
	"cursor2api/services/mcp/mcptest"
)

// mcpStack is a gateway with two real MCP servers: "local", the mcptest
// server as a child process over stdio, and "remote", the same tools over
// streamable HTTP on loopback. It returns once both are connected.
func mcpStack(t *testing.T, env map[string]string, reply func(int, cursortest.Request) cursortest.Response) *stack {
	t.Helper()
	remote := httptest.NewServer(mcptest.Handler())
	t.Cleanup(remote.Close)
	servers, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"local":  map[string]any{"command": mcpServerBin(t)},
		"remote": map[string]any{"url": remote.URL},
	}})
	require.NoError(t, err)
	vars := map[string]string{"MCP_SERVERS": string(servers), "MCP_CALL_TIMEOUT": "1", "MCP_MAX_RESULT_BYTES": "1000"}
	for k, v := range env {
		vars[k] = v
	}
	s := newStack(t, vars, reply)
	require.Eventually(t, func() bool {
		r := s.do(t, http.MethodGet, "/ready", "")
		states := gjson.Get(r.body, "mcp_servers.#.state").Array()
		return len(states) == 2 && states[0].String() == "ready" && states[1].String() == "ready"
	}, 30*time.Second, 20*time.Millisecond, "the MCP servers connect")
	return s
}

// mcpInvoke is a model's call of tool in the text protocol.
func mcpInvoke(tool, args string) string {
	return fmt.Sprintf("TRIGGER<invoke name=%q>%s</invoke>", tool, args)
}

// doorCase sends a question through one door, streamed or not, and reads
// the answer's text, client tool calls and total usage.
type doorCase struct {
	name   string
	path   string
	body   func(stream bool, tools string) string
	answer func(t *testing.T, r reply, stream bool) (text string, calls []string, total int64)
}

var mcpDoors = []doorCase{
	{"chat completions", "/v1/chat/completions",
		func(stream bool, tools string) string {
			return fmt.Sprintf(`{"model":"claude-sonnet-4.6","stream":%v,"stream_options":%s,"messages":[{"role":"user","content":"add 2 and 40"}]%s}`,
				stream, map[bool]string{true: `{"include_usage":true}`, false: "null"}[stream], toolsField(tools, `{"type":"function","function":{"name":"ls","parameters":{"type":"object","properties":{"dir":{"type":"string"}}}}}`))
		},
		func(t *testing.T, r reply, stream bool) (string, []string, int64) {
			if !stream {
				v := gjson.Parse(r.body)
				var calls []string
				for _, c := range v.Get("choices.0.message.tool_calls").Array() {
					calls = append(calls, c.Get("function.name").String())
				}
				return v.Get("choices.0.message.content").String(), calls, v.Get("usage.total_tokens").Int()
			}
			var text strings.Builder
			var calls []string
			var total int64
			for _, d := range sseData(t, r.body) {
				if d == "[DONE]" {
					continue
				}
				v := gjson.Parse(d)
				text.WriteString(v.Get("choices.0.delta.content").String())
				for _, c := range v.Get("choices.0.delta.tool_calls").Array() {
					if n := c.Get("function.name").String(); n != "" {
						calls = append(calls, n)
					}
				}
				if u := v.Get("usage.total_tokens"); u.Exists() {
					total = u.Int()
				}
			}
			return text.String(), calls, total
		}},
	{"responses", "/v1/responses",
		func(stream bool, tools string) string {
			return fmt.Sprintf(`{"model":"claude-sonnet-4.6","stream":%v,"input":"add 2 and 40"%s}`, stream,
				toolsField(tools, `{"type":"function","name":"ls","parameters":{"type":"object","properties":{"dir":{"type":"string"}}}}`))
		},
		func(t *testing.T, r reply, stream bool) (string, []string, int64) {
			body := r.body
			if stream {
				for _, d := range namedData(r.body) {
					if gjson.Get(d, "type").String() == "response.completed" {
						body = gjson.Get(d, "response").Raw
					}
				}
			}
			v := gjson.Parse(body)
			var text strings.Builder
			var calls []string
			for _, item := range v.Get("output").Array() {
				switch item.Get("type").String() {
				case "message":
					for _, c := range item.Get("content").Array() {
						text.WriteString(c.Get("text").String())
					}
				case "function_call":
					calls = append(calls, item.Get("name").String())
				}
			}
			return text.String(), calls, v.Get("usage.total_tokens").Int()
		}},
	{"messages", "/v1/messages",
		func(stream bool, tools string) string {
			return fmt.Sprintf(`{"model":"claude-sonnet-4.6","max_tokens":1000,"stream":%v,"messages":[{"role":"user","content":"add 2 and 40"}]%s}`, stream,
				toolsField(tools, `{"name":"ls","input_schema":{"type":"object","properties":{"dir":{"type":"string"}}}}`))
		},
		func(t *testing.T, r reply, stream bool) (string, []string, int64) {
			var text strings.Builder
			var calls []string
			if !stream {
				v := gjson.Parse(r.body)
				for _, b := range v.Get("content").Array() {
					switch b.Get("type").String() {
					case "text":
						text.WriteString(b.Get("text").String())
					case "tool_use":
						calls = append(calls, b.Get("name").String())
					}
				}
				return text.String(), calls, v.Get("usage.input_tokens").Int() + v.Get("usage.output_tokens").Int()
			}
			var in, out int64
			for _, d := range namedData(r.body) {
				v := gjson.Parse(d)
				switch v.Get("type").String() {
				case "message_start":
					in = v.Get("message.usage.input_tokens").Int()
				case "content_block_start":
					if v.Get("content_block.type").String() == "tool_use" {
						calls = append(calls, v.Get("content_block.name").String())
					}
				case "content_block_delta":
					text.WriteString(v.Get("delta.text").String())
				case "message_delta":
					out = v.Get("usage.output_tokens").Int()
					if u := v.Get("usage.input_tokens"); u.Exists() {
						in = u.Int()
					}
				}
			}
			return text.String(), calls, in + out
		}},
}

// toolsField is `,"tools":[tool]` when tools is "client", else "".
func toolsField(tools, tool string) string {
	if tools == "client" {
		return `,"tools":[` + tool + `]`
	}
	return ""
}

// namedData returns the data lines of an event stream.
func namedData(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
			out = append(out, d)
		}
	}
	return out
}

// upstreamText is everything a request to the upstream said.
func upstreamText(req cursortest.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(m.Text)
		b.WriteString("\n")
	}
	return b.String()
}

func TestMCPRoundsThroughEveryDoor(t *testing.T) {
	round := int64(defaultUsage.Input + defaultUsage.Output)
	cases := []struct {
		name     string
		tools    string
		turns    [][]string
		text     []string // in the answer, in order
		calls    []string // the client's calls
		rounds   int      // upstream requests
		replayed []string // in the last upstream request
	}{
		{"one round over stdio", "", [][]string{{"Adding. ", mcpInvoke("mcp__local__add", `{"a":2,"b":40}`)}, {"It is 42."}},
			[]string{"Adding. ", "It is 42."}, nil, 2, []string{"42"}},
		{"several rounds, both transports", "", [][]string{
			{mcpInvoke("mcp__remote__echo", `{"text":"ping"}`)},
			{mcpInvoke("mcp__local__add", `{"a":1,"b":1}`)},
			{"Done."}},
			[]string{"Done."}, nil, 3, []string{"echo: ping", "2"}},
		{"MCP then a client tool ends the answer", "client", [][]string{
			{mcpInvoke("mcp__remote__add", `{"a":3,"b":4}`)},
			{mcpInvoke("ls", `{"dir":"."}`)}},
			nil, []string{"ls"}, 2, []string{"7"}},
		{"MCP and client tool in one turn", "client", [][]string{
			{mcpInvoke("mcp__local__echo", `{"text":"x"}`), mcpInvoke("ls", `{"dir":"src"}`)}},
			nil, []string{"ls"}, 1, nil},
		{"a failing tool is the model's to read", "", [][]string{{mcpInvoke("mcp__local__fail", `{}`)}, {"It failed."}},
			[]string{"It failed."}, nil, 2, []string{"the disk is on fire"}},
		{"a crash mid-call", "", [][]string{{mcpInvoke("mcp__local__crash", `{}`)}, {"The server crashed."}},
			[]string{"The server crashed."}, nil, 2, []string{"the tool failed"}},
		{"a hung call times out", "", [][]string{{mcpInvoke("mcp__local__hang", `{}`)}, {"Too slow."}},
			[]string{"Too slow."}, nil, 2, []string{"did not answer within 1s"}},
		{"a huge result is clipped", "", [][]string{{mcpInvoke("mcp__local__huge", `{"n":50000}`)}, {"Big."}},
			[]string{"Big."}, nil, 2, []string{"[the gateway clipped this result: 1000 of 50000 bytes shown"}},
	}
	for _, door := range mcpDoors {
		for _, stream := range []bool{false, true} {
			for _, tc := range cases {
				t.Run(fmt.Sprintf("%s/stream=%v/%s", door.name, stream, tc.name), func(t *testing.T) {
					s := mcpStack(t, nil, script(t, tc.turns...))
					r := s.do(t, http.MethodPost, door.path, door.body(stream, tc.tools))
					require.Equal(t, http.StatusOK, r.status, r.body)
					text, calls, total := door.answer(t, r, stream)
					for _, want := range tc.text {
						assert.Contains(t, text, want)
					}
					assert.NotContains(t, text, "mcp__", "no trace of the protocol")
					assert.Equal(t, tc.calls, calls, "only the client's own calls reach the client")
					reqs := s.up.Requests()
					require.Len(t, reqs, tc.rounds)
					assert.Equal(t, round*int64(tc.rounds), total, "usage sums every round")
					assert.Contains(t, upstreamText(reqs[0]), "mcp__local__echo", "the MCP tools are offered")
					last := upstreamText(reqs[len(reqs)-1])
					for _, want := range tc.replayed {
						assert.Contains(t, last, want)
					}
				})
			}
		}
	}
}

func TestMCPVisible(t *testing.T) {
	s := mcpStack(t, map[string]string{"MCP_ALLOWED_TOOLS": "mcp__local__*,mcp__remote__echo"},
		script(t, []string{mcpInvoke("mcp__local__add", `{"a":1,"b":2}`)}, []string{"3"}))
	tools := s.do(t, http.MethodGet, "/v1/tools", "")
	require.Equal(t, http.StatusOK, tools.status, tools.body)
	ids := gjson.Get(tools.body, "data.#.id").Array()
	var names []string
	for _, id := range ids {
		names = append(names, id.String())
	}
	assert.Contains(t, names, "mcp__local__add")
	assert.Contains(t, names, "mcp__remote__echo")
	assert.NotContains(t, names, "mcp__remote__add", "MCP_ALLOWED_TOOLS filters")
	assert.Equal(t, "local", gjson.Get(tools.body, `data.#(id=="mcp__local__add").server`).String())

	ready := s.do(t, http.MethodGet, "/ready", "")
	assert.Equal(t, "stdio", gjson.Get(ready.body, `mcp_servers.#(name=="local").transport`).String())
	assert.Equal(t, int64(1), gjson.Get(ready.body, `mcp_servers.#(name=="remote").tools`).Int())

	r := s.chat(t, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"add"}]}`)
	require.Equal(t, http.StatusOK, r.status, r.body)
	m := s.do(t, http.MethodGet, "/metrics", "")
	assert.Contains(t, m.body, `cursor2api_mcp_calls_total{outcome="ok",server="local",tool="add"} 1`)
	assert.Contains(t, m.body, `cursor2api_mcp_call_seconds_count{server="local",tool="add"} 1`)
	assert.Contains(t, s.logs.String(), "running the gateway's tools")
}

func TestMCPAuthAndModes(t *testing.T) {
	s := mcpStack(t, map[string]string{"API_KEY": "k1", "MCP_TOOLS": "when-no-client-tools"}, script(t, []string{"plain"}))
	assert.Equal(t, http.StatusUnauthorized, s.do(t, http.MethodGet, "/v1/tools", "").status)
	assert.Equal(t, http.StatusOK, s.do(t, http.MethodGet, "/v1/tools", "", "Authorization", "Bearer k1").status)
	r := s.chat(t, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}]}`, "Authorization", "Bearer k1")
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.NotContains(t, upstreamText(s.up.Requests()[0]), "mcp__", "not offered beside the client's tools")
	r = s.chat(t, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer k1")
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Contains(t, upstreamText(s.up.Requests()[1]), "mcp__local__echo", "offered when the client has none")
}

func TestMCPChildEndsWithGateway(t *testing.T) {
	var pid int
	t.Run("gateway", func(t *testing.T) {
		s := mcpStack(t, nil, script(t, []string{mcpInvoke("mcp__local__pid", `{}`)}, []string{"ok"}))
		r := s.chat(t, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"pid?"}]}`)
		require.Equal(t, http.StatusOK, r.status, r.body)
		reqs := s.up.Requests()
		require.Len(t, reqs, 2)
		last := upstreamText(reqs[1])
		for _, f := range strings.Fields(last) {
			if n, err := strconv.Atoi(strings.Trim(f, "<>/\"")); err == nil && mcptest.Alive(n) {
				pid = n
			}
		}
		require.NotZero(t, pid, "the server's pid reached the model: %s", last)
	})
	assert.False(t, mcptest.Alive(pid), "the stdio server ended with the gateway")
}

func TestMCPClientDisconnectCancelsCall(t *testing.T) {
	s := mcpStack(t, map[string]string{"MCP_CALL_TIMEOUT": "30"}, script(t, []string{mcpInvoke("mcp__local__hang", `{}`)}, []string{"never"}))
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"wait"}]}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	if resp, err := s.Client().Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	require.Eventually(t, func() bool {
		return strings.Contains(s.do(t, http.MethodGet, "/metrics", "").body, `cursor2api_mcp_calls_total{outcome="cancelled",server="local",tool="hang"} 1`)
	}, 10*time.Second, 20*time.Millisecond, "the running call is cancelled")
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Len(t, s.up.Requests(), 1, "no round after the client left")
}
