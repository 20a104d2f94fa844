package responses

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/models"
	"cursor2api/services/chat"
)

// codexSearch is the tool_search Codex CLI 0.171 offers in place of the
// MCP tools it defers (captured from its request).
const codexSearch = `{"type":"tool_search","execution":"client","description":"# Tool discovery\n\nSearches over deferred tool metadata with BM25.","parameters":{"type":"object","properties":{"limit":{"type":"number"},"query":{"type":"string"}},"required":["query"],"additionalProperties":false}}`

// codexSearchOutput is the tool_search_output Codex sends back: the
// namespace of an MCP server with the tools that matched.
const codexSearchOutput = `{"type":"tool_search_output","id":"tso_1","call_id":"call_ts1","status":"completed","execution":"client","tools":[
  {"type":"namespace","name":"mcp__everything","description":"Everything server.","tools":[
    {"type":"function","name":"echo","description":"Echoes back the input string","strict":false,"defer_loading":true,"parameters":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}},
    {"type":"function","name":"get_env","description":"Prints the environment","strict":false,"defer_loading":true,"parameters":{"type":"object","properties":{}}}]}]}`

func TestToRequestToolSearch(t *testing.T) {
	search := `{"type":"tool_search_call","id":"tsc_1","call_id":"call_ts1","status":"completed","execution":"client","arguments":{"query":"echo message","limit":3}}`
	cases := []struct {
		name    string
		tools   string
		input   string
		offered []string // the tools the model is offered
		ignored []string
	}{
		{
			name:    "before a search only tool_search is offered",
			tools:   `{"type":"function","name":"exec_command"},` + codexSearch,
			input:   `{"role":"user","content":"echo hi"}`,
			offered: []string{"exec_command", "tool_search"},
		},
		{
			name:    "the tools a search loaded join the offered ones",
			tools:   `{"type":"function","name":"exec_command"},` + codexSearch,
			input:   `{"role":"user","content":"echo hi"},` + search + `,` + codexSearchOutput,
			offered: []string{"exec_command", "tool_search", "mcp__everything__echo", "mcp__everything__get_env"},
		},
		{
			name:    "deferred tools of the request wait for a search to name them",
			tools:   codexSearch + `,{"type":"function","name":"later","defer_loading":true},{"type":"namespace","name":"crm","defer_loading":true,"tools":[{"type":"function","name":"find"}]}`,
			input:   `{"role":"user","content":"hi"},` + search + `,{"type":"tool_search_output","call_id":"call_ts1","execution":"client","tools":[{"type":"namespace","name":"crm","tools":[{"type":"function","name":"find","defer_loading":true}]}]}`,
			offered: []string{"tool_search", "crm__find"},
		},
		{
			name:    "without the client's search deferred tools are offered from the start",
			tools:   `{"type":"tool_search"},{"type":"function","name":"later","defer_loading":true}`,
			input:   `{"role":"user","content":"hi"}`,
			offered: []string{"later"},
			ignored: []string{"tools[0] (tool_search)"},
		},
		{
			name:    "a tool loaded twice is offered once",
			tools:   codexSearch,
			input:   `{"role":"user","content":"echo hi"},` + search + `,` + codexSearchOutput + `,` + strings.ReplaceAll(search, "call_ts1", "call_ts2") + `,` + strings.ReplaceAll(codexSearchOutput, "call_ts1", "call_ts2"),
			offered: []string{"tool_search", "mcp__everything__echo", "mcp__everything__get_env"},
		},
		{
			name:    "a search item with neither execution nor call_id is OpenAI's",
			tools:   `{"type":"function","name":"f"}`,
			input:   `{"role":"user","content":"hi"},{"type":"tool_search_call","arguments":{"query":"x"}}`,
			offered: []string{"f"},
			ignored: []string{"input[1] (tool_search_call)"},
		},
		{
			name:    "OpenAI's own search in a history is dropped",
			tools:   `{"type":"function","name":"f"}`,
			input:   `{"role":"user","content":"hi"},{"type":"tool_search_call","id":"tsc_2","execution":"server","arguments":{"query":"x"}},{"type":"tool_search_output","execution":"server","tools":[]}`,
			offered: []string{"f"},
			ignored: []string{"input[1] (tool_search_call)", "input[2] (tool_search_output)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dec, err := ToRequest(decode(t, `{"model":"m","tools":[`+tc.tools+`],"input":[`+tc.input+`]}`), nil)
			require.NoError(t, err)
			var offered []string
			for _, tool := range chat.OfferedTools(dec.Request) {
				offered = append(offered, tool.Name)
			}
			assert.Equal(t, tc.offered, offered)
			assert.Equal(t, tc.ignored, dec.Ignored)
		})
	}
}

func TestToRequestToolSearchHistory(t *testing.T) {
	dec, err := ToRequest(decode(t, `{"model":"m","tools":[`+codexSearch+`],"input":[
	    {"role":"user","content":"echo hi"},
	    {"type":"tool_search_call","id":"tsc_1","call_id":"call_ts1","status":"completed","execution":"client","arguments":{"query":"echo message","limit":3}},
	    `+codexSearchOutput+`,
	    {"type":"function_call","call_id":"call_e","namespace":"mcp__everything","name":"echo","arguments":"{\"message\":\"hi\"}"},
	    {"type":"function_call_output","call_id":"call_e","output":"Echo: hi"},
	    {"type":"tool_search_call","call_id":"call_ts2","execution":"client","arguments":{"query":"nothing"}},
	    {"type":"tool_search_output","call_id":"call_ts2","execution":"client","tools":[]}]}`), nil)
	require.NoError(t, err)
	r := dec.Request
	require.Len(t, r.Messages, 7)
	call := r.Messages[1].Blocks[0]
	assert.Equal(t, models.Block{Kind: models.BlockToolCall, ID: "call_ts1", Name: SearchToolName, Arguments: `{"query":"echo message","limit":3}`}, call)
	assert.Equal(t, models.Message{Role: models.RoleTool, ToolCallID: "call_ts1", Blocks: []models.Block{
		{Kind: models.BlockToolReference, Name: "mcp__everything__echo"},
		{Kind: models.BlockToolReference, Name: "mcp__everything__get_env"},
	}}, r.Messages[2], "the output references the tools it loaded")
	assert.Equal(t, "mcp__everything__echo", r.Messages[3].Blocks[0].Name)
	assert.Equal(t, models.Message{Role: models.RoleTool, ToolCallID: "call_ts2", Blocks: []models.Block{text("No tools matched the search.")}}, r.Messages[6])

	echo := r.Tools[1]
	assert.Equal(t, "mcp__everything__echo", echo.Name)
	assert.True(t, echo.Deferred)
	assert.Contains(t, echo.Description, "Echoes back the input string")
	assert.Contains(t, echo.Description, "Everything server.", "the namespace says what the server is for")
	assert.Equal(t, "message", gjson.GetBytes(echo.Parameters, "required.0").String())
	assert.Equal(t, QualifiedName{Namespace: "mcp__everything", Name: "echo"}, dec.Names["mcp__everything__echo"], "a loaded tool's calls go out in its namespace")
	assert.Equal(t, QualifiedName{Name: SearchToolName, Search: true}, dec.Names[SearchToolName])
	assert.Equal(t, "# Tool discovery\n\nSearches over deferred tool metadata with BM25.", r.Tools[0].Description)
}

func TestToRequestToolSearchErrors(t *testing.T) {
	cases := []struct{ name, body, param string }{
		{"call without call_id", `{"model":"m","input":[{"type":"tool_search_call","execution":"client","arguments":{}}]}`, "input[0].call_id"},
		{"output without call_id", `{"model":"m","input":[{"type":"tool_search_output","execution":"client","tools":[]}]}`, "input[0].call_id"},
		{"loaded tool without a name", `{"model":"m","input":[{"role":"user","content":"x"},{"type":"tool_search_output","call_id":"c","execution":"client","tools":[{"type":"namespace","name":"n","tools":[{"type":"function"}]}]}]}`, "input[1].tools[0].tools[0].name"},
		{"loaded tool with a bad schema", `{"model":"m","input":[{"role":"user","content":"x"},{"type":"tool_search_output","call_id":"c","execution":"client","tools":[{"type":"function","name":"f","parameters":[1]}]}]}`, "input[1].tools[0].parameters"},
		{"loaded tools not a list", `{"model":"m","input":[{"role":"user","content":"x"},{"type":"tool_search_output","call_id":"c","execution":"client","tools":{"type":"function"}}]}`, "input[1].tools"},
		{"a request tool named like the search", `{"model":"m","input":"x","tools":[` + codexSearch + `,{"type":"function","name":"tool_search"}]}`, "tools[1].name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToRequest(decode(t, tc.body), nil)
			requireParam(t, err, tc.param)
		})
	}
}

var searchNames = Names{SearchToolName: {Name: SearchToolName, Search: true}, "mcp__everything__echo": {Namespace: "mcp__everything", Name: "echo"}}

func TestFromAnswerToolSearchCall(t *testing.T) {
	base := NewResponse("resp_1", 1, &Request{Model: "m"})
	got := FromAnswer(base, &models.Answer{
		ToolCalls: []models.ToolCall{{ID: "call_1", Name: SearchToolName, Arguments: `{ "query": "echo <tool>", "limit": 3 }`}},
		Finish:    models.FinishToolCalls,
	}, searchNames)
	require.Len(t, got.Output, 1)
	b, err := json.Marshal(got.Output[0])
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(got.Output[0].ID, "tsc_"), got.Output[0].ID)
	assert.JSONEq(t, `{"id":"`+got.Output[0].ID+`","type":"tool_search_call","status":"completed","call_id":"call_1","execution":"client","arguments":{"query":"echo <tool>","limit":3}}`, string(b),
		"the arguments are an object, not a string")

	// The stored item replays as the same call.
	items, err := OutputItems(got)
	require.NoError(t, err)
	dec, err := ToRequest(decode(t, `{"model":"m","tools":[`+codexSearch+`],"input":[`+codexSearchOutput+`]}`), items)
	require.NoError(t, err)
	first := dec.Request.Messages[0].Blocks[0]
	assert.Equal(t, SearchToolName, first.Name)
	assert.JSONEq(t, `{"query":"echo <tool>","limit":3}`, first.Arguments)
}

func TestStreamWriterToolSearchCall(t *testing.T) {
	w, buf := newTestWriter(searchNames)
	require.NoError(t, w.ToolCallStart("call_1", SearchToolName))
	for _, f := range []string{`{"query":`, `"echo"`, `}`} {
		require.NoError(t, w.ToolCallArguments(f))
	}
	require.NoError(t, w.ToolCallEnd(true))
	require.NoError(t, w.ToolCallStart("call_2", "mcp__everything__echo"))
	require.NoError(t, w.ToolCallArguments(`{"message":"hi"}`))
	require.NoError(t, w.ToolCallEnd(true))
	require.NoError(t, w.Finish(models.FinishToolCalls, models.Usage{}))

	evs := parseEvents(t, buf.String())
	types := eventNames(evs)
	assert.Equal(t, []string{
		EventCreated, EventInProgress,
		EventItemAdded, EventItemDone,
		EventItemAdded, EventArgumentsDelta, EventArgumentsDone, EventItemDone,
		EventCompleted,
	}, types, "a tool_search_call has no delta events")
	added := evs[2].Data.Get("item")
	assert.Equal(t, "tool_search_call", added.Get("type").String())
	assert.Equal(t, "in_progress", added.Get("status").String())
	done := evs[3].Data.Get("item")
	assert.JSONEq(t, `{"id":"`+added.Get("id").String()+`","type":"tool_search_call","status":"completed","call_id":"call_1","execution":"client","arguments":{"query":"echo"}}`, done.Raw)
	assert.JSONEq(t, done.Raw, evs[8].Data.Get("response.output.0").Raw, "response.completed carries the same item")
	call := evs[7].Data.Get("item")
	assert.Equal(t, "echo", call.Get("name").String())
	assert.Equal(t, "mcp__everything", call.Get("namespace").String(), "a loaded tool is called in its namespace")
}

func TestSearchArguments(t *testing.T) {
	cases := []struct{ args, want string }{
		{`{"query":"x"}`, `{"query":"x"}`},
		{" {\n \"query\" : \"x\" } ", `{"query":"x"}`},
		{``, `{}`},
		{`{"query":`, `"{\"query\":"`}, // cut off: the text so far
		{`[1]`, `"[1]"`},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, string(searchArguments(tc.args)), tc.args)
	}
}
