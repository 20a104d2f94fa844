package responses

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func decode(t *testing.T, body string) *Request {
	t.Helper()
	var r Request
	require.NoError(t, json.Unmarshal([]byte(body), &r), body)
	return &r
}

func requireParam(t *testing.T, err error, param string) {
	t.Helper()
	var apiErr *models.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, 400, apiErr.Status)
	assert.Equal(t, models.KindInvalidRequest, apiErr.Kind)
	assert.Equal(t, param, apiErr.Param, apiErr.Message)
}

func text(s string) models.Block { return models.Block{Kind: models.BlockText, Text: s} }

func TestToRequestCodexShapedInput(t *testing.T) {
	req := decode(t, `{"model":"m","stream":true,"store":false,"parallel_tool_calls":false,
	  "reasoning":{"effort":"high","summary":"auto"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"k",
	  "tools":[
	    {"type":"function","name":"shell","description":"runs","parameters":{"type":"object"},"strict":false},
	    {"type":"namespace","name":"crm","description":"records","tools":[{"type":"function","name":"find","parameters":{"type":"object"}},{"type":"file_search"}]},
	    {"type":"web_search"},{"type":"local_shell"}],
	  "input":[
	    {"type":"message","role":"developer","content":[{"type":"input_text","text":"base prompt"}]},
	    {"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]},
	    {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"opaque"},
	    {"type":"reasoning","id":"rs_2","summary":[{"type":"summary_text","text":"I should list files"}]},
	    {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Listing."}]},
	    {"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"cmd\":\"ls\"}"},
	    {"type":"function_call","call_id":"c2","name":"find","namespace":"crm","arguments":{"q":1}},
	    {"type":"function_call_output","call_id":"c1","output":"a.go"},
	    {"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"Ada"}]},
	    {"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"x"}},
	    {"role":"user","content":"thanks"}]}`)
	dec, err := ToRequest(req, nil)
	require.NoError(t, err)
	r := dec.Request
	assert.Equal(t, "m", r.Model)
	assert.True(t, r.Stream)
	assert.True(t, r.SingleCall)
	assert.True(t, r.ShowThinking, "reasoning.summary asks for the reasoning")
	assert.Equal(t, models.ToolChoice{Mode: models.ChoiceAuto}, r.Choice)
	assert.Equal(t, []models.Tool{
		{Name: "shell", Description: "runs", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "crm__find", Description: "(crm: records)", Parameters: json.RawMessage(`{"type":"object"}`)},
	}, r.Tools, "a member's description says what its namespace is for")
	assert.Equal(t, Names{"crm__find": {Namespace: "crm", Name: "find"}}, dec.Names)
	assert.Equal(t, []string{"tools[1].tools[1] (file_search)", "tools[2] (web_search)", "tools[3] (local_shell)", "input[9] (web_search_call)"}, dec.Ignored)
	assert.Equal(t, []models.Message{
		{Role: models.RoleSystem, Blocks: []models.Block{text("base prompt")}},
		{Role: models.RoleUser, Blocks: []models.Block{text("look"), {Kind: models.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="}}},
		{Role: models.RoleAssistant, Blocks: []models.Block{
			{Kind: models.BlockThinking, Text: "I should list files"},
			text("Listing."),
			{Kind: models.BlockToolCall, ID: "c1", Name: "shell", Arguments: `{"cmd":"ls"}`},
			{Kind: models.BlockToolCall, ID: "c2", Name: "crm__find", Arguments: `{"q":1}`},
		}},
		{Role: models.RoleTool, ToolCallID: "c1", Blocks: []models.Block{text("a.go")}},
		{Role: models.RoleTool, ToolCallID: "c2", Blocks: []models.Block{text("Ada")}},
		{Role: models.RoleUser, Blocks: []models.Block{text("thanks")}},
	}, r.Messages)
	assert.Len(t, dec.Items, 11, "every input item is kept for the store")
	for _, m := range r.Messages {
		for _, b := range m.Blocks {
			assert.NotContains(t, b.Text, "opaque", "encrypted reasoning is never text")
		}
	}
}

func TestToRequestStringInputInstructionsAndHistory(t *testing.T) {
	history := []json.RawMessage{
		json.RawMessage(`{"type":"message","role":"user","content":"first"}`),
		json.RawMessage(`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"answer","annotations":[]}]}`),
	}
	dec, err := ToRequest(decode(t, `{"model":"m","instructions":"be brief","input":"second"}`), history)
	require.NoError(t, err)
	assert.Equal(t, []models.Message{
		{Role: models.RoleSystem, Blocks: []models.Block{text("be brief")}},
		{Role: models.RoleUser, Blocks: []models.Block{text("first")}},
		{Role: models.RoleAssistant, Blocks: []models.Block{text("answer")}},
		{Role: models.RoleUser, Blocks: []models.Block{text("second")}},
	}, dec.Request.Messages)
	require.Len(t, dec.Items, 3)
	assert.JSONEq(t, `{"type":"message","role":"user","content":"second"}`, string(dec.Items[2]), "a string input is stored as the item it stands for")
	assert.False(t, dec.Request.ShowThinking)
	assert.False(t, dec.Request.SingleCall)
}

func TestToRequestTextFormat(t *testing.T) {
	dec, err := ToRequest(decode(t, `{"model":"m","input":"list","text":{"format":{"type":"json_schema","name":"todo","schema":{"type":"object","properties":{"items":{"type":"array"}}}}}}`), nil)
	require.NoError(t, err)
	require.Len(t, dec.Request.Messages, 2)
	sys := dec.Request.Messages[0]
	assert.Equal(t, models.RoleSystem, sys.Role)
	assert.Contains(t, sys.Text(), "one JSON value only")
	assert.Contains(t, sys.Text(), "(todo)")
	assert.Contains(t, sys.Text(), `{"type":"object","properties":{"items":{"type":"array"}}}`)

	dec, err = ToRequest(decode(t, `{"model":"m","input":"x","text":{"format":{"type":"json_object"}}}`), nil)
	require.NoError(t, err)
	assert.Contains(t, dec.Request.Messages[0].Text(), "one JSON object only")

	dec, err = ToRequest(decode(t, `{"model":"m","input":"x","text":{"format":{"type":"text"}}}`), nil)
	require.NoError(t, err)
	assert.Len(t, dec.Request.Messages, 1, "plain text adds nothing")
}

func TestToRequestErrors(t *testing.T) {
	cases := []struct{ name, body, param string }{
		{"no input", `{"model":"m"}`, "input"},
		{"only instructions", `{"model":"m","instructions":"x","input":[]}`, "input"},
		{"input a number", `{"model":"m","input":42}`, "input"},
		{"unknown role", `{"model":"m","input":[{"role":"wizard","content":"x"}]}`, "input[0].role"},
		{"bad item", `{"model":"m","input":["text"]}`, "input[0]"},
		{"call without id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0]"},
		{"output without id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id"},
		{"tool without type", `{"model":"m","input":"x","tools":[{"name":"f"}]}`, "tools[0].type"},
		{"tool not an object", `{"model":"m","input":"x","tools":["f"]}`, "tools[0]"},
		{"bad function name", `{"model":"m","input":"x","tools":[{"type":"function","name":"read file"}]}`, "tools[0].name"},
		{"bad member name", `{"model":"m","input":"x","tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":""}]}]}`, "tools[0].tools[0].name"},
		{"namespace without name", `{"model":"m","input":"x","tools":[{"type":"namespace","tools":[]}]}`, "tools[0].name"},
		{"duplicate", `{"model":"m","input":"x","tools":[{"type":"function","name":"ns__f"},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]}]}`, "tools[1].tools[0].name"},
		{"parameters not an object", `{"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":"s"}]}`, "tools[0].parameters"},
		{"choice unknown", `{"model":"m","input":"x","tool_choice":"always"}`, "tool_choice"},
		{"required without tools", `{"model":"m","input":"x","tool_choice":"required"}`, "tool_choice"},
		{"built-in choice", `{"model":"m","input":"x","tool_choice":{"type":"web_search"}}`, "tool_choice.type"},
		{"choice without name", `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function"}}`, "tool_choice.name"},
		{"format unknown", `{"model":"m","input":"x","text":{"format":{"type":"xml"}}}`, "text.format.type"},
		{"schema missing", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}}`, "text.format.schema"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToRequest(decode(t, tc.body), nil)
			requireParam(t, err, tc.param)
		})
	}
	_, err := ToRequest(decode(t, `{"model":"m","input":"x"}`), []json.RawMessage{json.RawMessage(`{"role":"robot","content":"x"}`)})
	requireParam(t, err, "previous_response_id")
}

func TestToolChoice(t *testing.T) {
	tools := []models.Tool{{Name: "get_weather"}, {Name: "crm__find"}}
	ok := []struct {
		raw  string
		want models.ToolChoice
	}{
		{``, models.ToolChoice{Mode: models.ChoiceAuto}},
		{`null`, models.ToolChoice{Mode: models.ChoiceAuto}},
		{`"auto"`, models.ToolChoice{Mode: models.ChoiceAuto}},
		{`"none"`, models.ToolChoice{Mode: models.ChoiceNone}},
		{`"required"`, models.ToolChoice{Mode: models.ChoiceRequired}},
		{`{"type":"function","name":"get_weather"}`, models.ToolChoice{Mode: models.ChoiceFunction, Name: "get_weather"}},
		{`{"type":"function","name":"find","namespace":"crm"}`, models.ToolChoice{Mode: models.ChoiceFunction, Name: "crm__find"}},
		{`{"type":"function","name":"crm__find"}`, models.ToolChoice{Mode: models.ChoiceFunction, Name: "crm__find"}},
		{`{"type":"mcp","server_label":"calc","name":"add"}`, models.ToolChoice{Mode: models.ChoiceFunction, Name: "mcp__calc__add", Server: "calc"}},
		{`{"type":"mcp","server_label":"calc"}`, models.ToolChoice{Mode: models.ChoiceRequired, Server: "calc"}},
		{`{"type":"mcp","server_label":"calc","name":null}`, models.ToolChoice{Mode: models.ChoiceRequired, Server: "calc"}},
	}
	servers := []models.MCPServer{{Label: "calc", URL: "http://127.0.0.1/mcp"}}
	for _, tc := range ok {
		got, err := toolChoice(json.RawMessage(tc.raw), tools, servers)
		require.NoError(t, err, tc.raw)
		assert.Equal(t, tc.want, got, tc.raw)
	}
	_, err := toolChoice(json.RawMessage(`{"type":"function","name":"nope"}`), tools, servers)
	requireParam(t, err, "tool_choice.name")
	assert.True(t, strings.Contains(err.Error(), `"nope"`), err.Error())
	_, err = toolChoice(json.RawMessage(`{"type":"mcp","server_label":"docs","name":"search"}`), tools, servers)
	requireParam(t, err, "tool_choice.server_label")
	assert.Contains(t, err.Error(), `"docs" names no mcp tool of this request`)
	_, err = toolChoice(json.RawMessage(`{"type":"mcp","name":"add"}`), tools, servers)
	requireParam(t, err, "tool_choice.server_label")
	_, err = toolChoice(json.RawMessage(`{"type":"file_search"}`), tools, servers)
	requireParam(t, err, "tool_choice.type")
}

func TestArguments(t *testing.T) {
	for in, want := range map[string]string{`"{\"a\":1}"`: `{"a":1}`, `{"a":1}`: `{"a":1}`, `null`: ``} {
		var a Arguments
		require.NoError(t, json.Unmarshal([]byte(in), &a), in)
		assert.Equal(t, want, string(a), in)
	}
	var a Arguments
	assert.Error(t, json.Unmarshal([]byte(`42`), &a))
}

func TestFlatName(t *testing.T) {
	assert.Equal(t, "crm__find", FlatName("crm", "find"))
	assert.Equal(t, "mcp__docs__search", FlatName("mcp__docs", "search"), "a namespace may hold the separator")
	long := strings.Repeat("n", 40)
	a, b := FlatName(long, strings.Repeat("x", 30)+"_a"), FlatName(long, strings.Repeat("x", 30)+"_b")
	assert.Len(t, a, 64, "cut to the longest tool name")
	assert.NotEqual(t, a, b, "long names stay distinct")
	assert.Equal(t, a, FlatName(long, strings.Repeat("x", 30)+"_a"), "and stable, so that history maps to the same tool")

	// A long member works end to end: declared, called in history, named back.
	body := `{"model":"m","tools":[{"type":"namespace","name":"` + long + `","tools":[{"type":"function","name":"` + strings.Repeat("x", 30) + `_a"}]}],
	  "input":[{"type":"function_call","call_id":"c1","namespace":"` + long + `","name":"` + strings.Repeat("x", 30) + `_a","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`
	dec, err := ToRequest(decode(t, body), nil)
	require.NoError(t, err)
	require.Len(t, dec.Request.Tools, 1)
	assert.Equal(t, a, dec.Request.Tools[0].Name)
	assert.Equal(t, a, dec.Request.Messages[0].Blocks[0].Name)
	assert.Equal(t, QualifiedName{Namespace: long, Name: strings.Repeat("x", 30) + "_a"}, dec.Names.Split(a))
	assert.Equal(t, QualifiedName{Name: "plain"}, dec.Names.Split("plain"))
}
