package handlers

import (
	"bufio"
	"context"
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

// respEvent is one event of a Responses stream.
type respEvent struct {
	Name string
	Data gjson.Result
}

// respEvents checks the framing of a Responses stream, as Codex CLI reads
// it: the event-stream headers; only events of exactly "event: <type>\n"
// + "data: <one line of JSON>\n\n" (keepalive comments aside); the data's
// type equal to the event's name; sequence numbers 0, 1, 2…; no [DONE].
func respEvents(t *testing.T, r reply) []respEvent {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "text/event-stream", strings.TrimSpace(strings.Split(r.header.Get("Content-Type"), ";")[0]))
	var out []respEvent
	for rest := r.body; rest != ""; {
		end := strings.Index(rest, "\n\n")
		require.GreaterOrEqual(t, end, 0, "an event ends with a blank line: %q", clipTail(rest))
		block := rest[:end]
		rest = rest[end+2:]
		if strings.HasPrefix(block, ":") {
			continue // a keepalive comment
		}
		lines := strings.Split(block, "\n")
		require.Len(t, lines, 2, "an event line and one data line: %q", block)
		require.True(t, strings.HasPrefix(lines[0], "event: "), "every event is named: %q", block)
		require.True(t, strings.HasPrefix(lines[1], "data: "), block)
		name, data := strings.TrimPrefix(lines[0], "event: "), strings.TrimPrefix(lines[1], "data: ")
		require.True(t, gjson.Valid(data) && strings.HasPrefix(data, "{"), "the data is one JSON object: %q", data)
		d := gjson.Parse(data)
		require.Equal(t, name, d.Get("type").String(), "the data carries the event's type: %s", data)
		require.Equal(t, gjson.Number, d.Get("sequence_number").Type, data)
		require.EqualValues(t, len(out), d.Get("sequence_number").Int(), "sequence numbers go 0, 1, 2…: %s", data)
		out = append(out, respEvent{name, d})
	}
	assert.NotContains(t, r.body, "[DONE]", "the Responses API sends no [DONE]")
	return out
}

func eventNames(evs []respEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}

// checkItems checks that every item event names the item by the index
// and id its output_item.added gave, that items are added and done in
// turn at indexes 0, 1, 2…, and that response.completed holds the done
// items; it returns the done items.
func checkItems(t *testing.T, evs []respEvent) []gjson.Result {
	t.Helper()
	var done []gjson.Result
	open := int64(-1)
	var openID string
	for _, e := range evs {
		d := e.Data
		switch {
		case e.Name == "response.output_item.added":
			require.EqualValues(t, -1, open, "one item at a time: %s", d.Raw)
			open = d.Get("output_index").Int()
			require.EqualValues(t, len(done), open, "indexes go 0, 1, 2…")
			openID = d.Get("item.id").String()
			require.NotEmpty(t, openID)
		case e.Name == "response.output_item.done":
			require.Equal(t, open, d.Get("output_index").Int(), d.Raw)
			require.Equal(t, openID, d.Get("item.id").String(), d.Raw)
			done = append(done, d.Get("item"))
			open = -1
		case d.Get("item_id").Exists():
			require.Equal(t, openID, d.Get("item_id").String(), "an event of the open item: %s", d.Raw)
			require.Equal(t, open, d.Get("output_index").Int(), d.Raw)
		}
		for _, mark := range protocolMarkup {
			assert.NotContains(t, d.Get("delta").String()+d.Get("text").String(), mark, "no protocol markup: %s", d.Raw)
		}
	}
	last := evs[len(evs)-1]
	if last.Name == "response.completed" {
		output := last.Data.Get("response.output").Array()
		require.Len(t, output, len(done))
		for i := range done {
			assert.JSONEq(t, done[i].Raw, output[i].Raw, "response.completed holds the done items")
		}
	}
	return done
}

func TestResponsesWire(t *testing.T) {
	turn := []string{"<thinking>The user wants the weather.</thinking>\n", "Checking.\n", "TRIGGER\n", `<invoke name="get_weather">{"city":`, ` "Oslo"}</invoke>`}
	s := newStack(t, nil, script(t, turn))
	body := `{"model":"claude-sonnet-4.6-thinking","stream":true,"reasoning":{"summary":"auto"},"input":"Weather in Oslo?",
	  "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
	r := s.do(t, http.MethodPost, "/v1/responses", body, "Accept", "text/event-stream")
	assert.Equal(t, "no", r.header.Get("X-Accel-Buffering"))
	evs := respEvents(t, r)
	names := eventNames(evs)
	require.GreaterOrEqual(t, len(names), 4)
	assert.Equal(t, []string{"response.created", "response.in_progress"}, names[:2])
	assert.Equal(t, "response.completed", names[len(names)-1])
	collapsed := []string{}
	for _, n := range names {
		if len(collapsed) == 0 || collapsed[len(collapsed)-1] != n || !strings.HasSuffix(n, ".delta") {
			collapsed = append(collapsed, n)
		}
	}
	assert.Equal(t, []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed",
	}, collapsed, "deltas aside, the sequence of the API")

	items := checkItems(t, evs)
	require.Len(t, items, 3)
	assert.Equal(t, "reasoning", items[0].Get("type").String())
	assert.Equal(t, "The user wants the weather.", items[0].Get("summary.0.text").String())
	assert.Equal(t, "message", items[1].Get("type").String())
	assert.Equal(t, "Checking.\n", items[1].Get("content.0.text").String())
	assert.Equal(t, "function_call", items[2].Get("type").String())
	assert.Equal(t, "get_weather", items[2].Get("name").String())
	assert.JSONEq(t, `{"city":"Oslo"}`, items[2].Get("arguments").String())
	assert.Equal(t, "completed", items[2].Get("status").String())

	created := evs[0].Data.Get("response")
	completed := evs[len(evs)-1].Data.Get("response")
	assert.Equal(t, created.Get("id").String(), completed.Get("id").String())
	assert.True(t, strings.HasPrefix(completed.Get("id").String(), "resp_"))
	assert.Equal(t, "response", completed.Get("object").String())
	assert.Equal(t, "claude-sonnet-4.6-thinking", completed.Get("model").String())
	assert.Equal(t, "completed", completed.Get("status").String())
	assert.Equal(t, "null", created.Get("usage").Raw)
	for _, k := range []string{"input_tokens", "output_tokens", "total_tokens"} {
		assert.Equal(t, gjson.Number, completed.Get("usage."+k).Type, k)
	}
	assert.EqualValues(t, 366, completed.Get("usage.total_tokens").Int())
}

func TestResponsesReasoningOnlyWhenAsked(t *testing.T) {
	turn := []string{"<thinking>secret plan</thinking>\n", "The answer is 4."}
	for _, summary := range []string{"", `,"reasoning":{"effort":"high"}`, `,"reasoning":{"summary":"none"}`} {
		s := newStack(t, nil, script(t, turn))
		r := s.do(t, http.MethodPost, "/v1/responses", `{"model":"claude-sonnet-4.6-thinking","input":"2+2?"`+summary+`}`)
		require.Equal(t, http.StatusOK, r.status, r.body)
		assert.Equal(t, "The answer is 4.", gjson.Get(r.body, "output.0.content.0.text").String(), summary)
		assert.Len(t, gjson.Get(r.body, "output").Array(), 1, summary)
		assert.NotContains(t, r.body, "secret plan", "thinking stays internal unless reasoning.summary asks for it")
	}
	s := newStack(t, nil, script(t, turn))
	r := s.do(t, http.MethodPost, "/v1/responses", `{"model":"claude-sonnet-4.6-thinking","input":"2+2?","reasoning":{"summary":"detailed"}}`)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "reasoning", gjson.Get(r.body, "output.0.type").String())
	assert.Equal(t, "secret plan", gjson.Get(r.body, "output.0.summary.0.text").String())
	assert.Equal(t, "The answer is 4.", gjson.Get(r.body, "output.1.content.0.text").String())
}

func TestResponsesRawErrors(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"unused"}))
	cases := []struct {
		body, param string
		hints       []string
	}{
		{`{"model":"claude-sonnet-4.6"}`, "input", []string{"input"}},
		{`{"model":"claude-sonnet-4.6","input":[{"role":"robot","content":"x"}]}`, "input[0].role", []string{`"robot"`}},
		{`{"model":"claude-sonnet-4.6","input":"x","tools":[{"type":"function","name":"a b"}]}`, "tools[0].name", []string{`"a b"`}},
		{`{"model":"claude-sonnet-4.6","input":"x","previous_response_id":"resp_nope"}`, "previous_response_id", []string{"resp_nope", "unknown or has expired"}},
		{`{"model":"claude-sonnet-4.6","input":"x","text":{"format":{"type":"yaml"}}}`, "text.format.type", []string{`"yaml"`}},
		{`{"model":"claude-sonnet-4.6","input":"x","stream":"yes"}`, "stream", []string{"stream"}},
	}
	for _, tc := range cases {
		assertAPIError(t, s.do(t, http.MethodPost, "/v1/responses", tc.body), http.StatusBadRequest, "invalid_request_error", tc.param, "", tc.hints...)
	}
	assertAPIError(t, s.do(t, http.MethodGet, "/v1/responses/resp_missing", ""), http.StatusNotFound, "invalid_request_error", "", "not_found", "resp_missing")
	assertAPIError(t, s.do(t, http.MethodDelete, "/v1/responses/resp_missing", ""), http.StatusNotFound, "invalid_request_error", "", "not_found")
	assertAPIError(t, s.do(t, http.MethodPut, "/v1/responses", `{}`), http.StatusMethodNotAllowed, "invalid_request_error", "", "method_not_allowed")
	assert.Empty(t, s.up.Requests(), "nothing went upstream")
}

// codexFixture reads a request shaped like Codex CLI's from testdata.
func codexFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

// codexHeaders are the headers Codex CLI sends with a turn.
var codexHeaders = []string{
	"Authorization", "Bearer sk-codex", "Accept", "text/event-stream", "originator", "codex_cli_rs",
	"session-id", "0199a213-81c0-7800-8aa1-bbab2a035a53", "x-codex-turn-metadata", `{"turn":1}`, "User-Agent", "codex_cli_rs/0.165.0",
}

func TestResponsesCodexFixtures(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "sk-codex"}, script(t,
		[]string{"I'll list the files and search the docs.\n", "TRIGGER\n", `<invoke name="exec_command">{"cmd":"ls *.go","workdir":"/home/dev/project"}</invoke>`, "\n", `<invoke name="mcp__docs__search">{"query":"configuration"}</invoke>`},
		[]string{"There are three Go files: config.go, main.go and server.go. ", "The docs say configuration comes from environment variables (see .env.example)."},
	))

	// The first turn: the calls, each as Codex reads them.
	evs := respEvents(t, s.do(t, http.MethodPost, "/v1/responses", codexFixture(t, "codex_first_turn.json"), codexHeaders...))
	items := checkItems(t, evs)
	require.Len(t, items, 3, "%s", eventNames(evs))
	assert.Equal(t, "I'll list the files and search the docs.\n", items[0].Get("content.0.text").String())
	assert.Equal(t, "exec_command", items[1].Get("name").String())
	assert.False(t, items[1].Get("namespace").Exists(), "a top-level function has no namespace")
	assert.JSONEq(t, `{"cmd":"ls *.go","workdir":"/home/dev/project"}`, items[1].Get("arguments").String())
	assert.Equal(t, "search", items[2].Get("name").String())
	assert.Equal(t, "mcp__docs", items[2].Get("namespace").String())
	assert.JSONEq(t, `{"query":"configuration"}`, items[2].Get("arguments").String())
	for _, it := range items[1:] {
		assert.Regexp(t, `^call_[A-Za-z0-9]+$`, it.Get("call_id").String())
		assert.Regexp(t, `^fc_[A-Za-z0-9]+$`, it.Get("id").String())
	}
	last := evs[len(evs)-1].Data
	assert.Equal(t, "response.completed", last.Get("type").String())
	assert.False(t, last.Get("response.store").Bool())
	assert.Zero(t, s.store.Len(), "store: false keeps nothing")

	up := s.up.Requests()[0]
	assert.Equal(t, "anthropic/claude-sonnet-4.6", up.Model)
	system := up.Messages[0]
	require.Equal(t, "system", system.Role)
	assert.Contains(t, system.Text, "You are a coding agent running in a terminal", "the developer base prompt")
	assert.Contains(t, system.Text, "<permissions instructions>")
	for _, tool := range []string{"exec_command", "update_plan", "mcp__docs__search"} {
		assert.Contains(t, system.Text, tool)
	}
	assert.NotContains(t, system.Text, "web_search", "the built-in tool is not offered")
	assert.Contains(t, s.logs.String(), "tools[3] (web_search)")
	last2 := up.Messages[len(up.Messages)-1]
	assert.Equal(t, "user", last2.Role)
	assert.Contains(t, last2.Text, "Which Go files are in this project")
	assert.Contains(t, last2.Text, "<environment_context>", "the context messages are the user's")

	// The next turn: the whole history back, reasoning and outputs included.
	evs = respEvents(t, s.do(t, http.MethodPost, "/v1/responses", codexFixture(t, "codex_tool_turn.json"), codexHeaders...))
	items = checkItems(t, evs)
	require.Len(t, items, 1)
	assert.Equal(t, "There are three Go files: config.go, main.go and server.go. The docs say configuration comes from environment variables (see .env.example).", items[0].Get("content.0.text").String())

	replay := s.up.Requests()[1].Messages
	trigger := sentTrigger(s.up.Requests()[1])
	var all strings.Builder
	for _, m := range replay {
		all.WriteString(m.Role + ": " + m.Text + "\n")
		assert.NotContains(t, m.Text, "gAAAAAB", "encrypted reasoning never reaches the model")
	}
	text := all.String()
	assert.Contains(t, text, "assistant: I'll list the files and search the docs.\n\n"+trigger+"\n<invoke name=\"exec_command\">")
	assert.Contains(t, text, `<invoke name="mcp__docs__search">{"query":"configuration"}</invoke>`)
	assert.Contains(t, text, `<tool_result id="call_Q1w2E3r4T5y6U7i8O9p0A1s2" name="exec_command">`)
	assert.Contains(t, text, "config.go\nmain.go\nserver.go")
	assert.Contains(t, text, `<tool_result id="call_Z9x8C7v6B5n4M3l2K1j0H9g8" name="mcp__docs__search">`)
	assert.Contains(t, text, "Configuration is read from environment variables")
}

func TestResponsesClientDisconnect(t *testing.T) {
	s := newStack(t, nil, cursortest.Always(cursortest.Response{Events: []string{
		`{"type":"start"}`, `{"type":"text-start","id":"t0"}`, `{"type":"text-delta","id":"t0","delta":"first words"}`,
	}, Hang: true}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/responses",
		strings.NewReader(`{"model":"claude-sonnet-4.6","stream":true,"input":"hi"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// Read up to the text, so that the gateway has written everything it
	// has when the client leaves.
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "event: response.created\n", first)
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if strings.HasPrefix(line, "data: ") && gjson.Get(strings.TrimPrefix(line, "data: "), "type").String() == "response.output_text.delta" {
			assert.Equal(t, "first words", gjson.Get(strings.TrimPrefix(line, "data: "), "delta").String())
			break
		}
	}
	select {
	case <-s.up.Canceled():
		t.Fatal("the upstream request ended before the client left")
	default:
	}
	cancel()
	waitClosed(t, s.up.Canceled(), 5*time.Second, "cancelling the upstream request after the client left")
	s.Close() // waits for the handler to return
	assert.Contains(t, s.logs.String(), "status=499")
	assert.Zero(t, s.store.Len(), "an unfinished response is not kept")
}
