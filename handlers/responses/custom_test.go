package responses

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/models"
)

// applyPatchGrammar stands for the Lark grammar Codex CLI sends with its
// freeform apply_patch tool.
const applyPatchGrammar = `start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?`

// patch is an apply_patch input: raw text with quotes, backslashes,
// newlines and markup-like characters, none of it JSON.
const patch = "*** Begin Patch\n*** Update File: a.go\n@@\n-\tfmt.Println(\"a\\n\")\n+\tfmt.Println(`<b>` + \"&\")\n*** End Patch\n"

func TestToRequestCustomTools(t *testing.T) {
	req := decode(t, `{"model":"m","tools":[
	    {"type":"custom","name":"apply_patch","description":"Edit files.","format":{"type":"grammar","syntax":"lark","definition":`+jsonString(applyPatchGrammar)+`}},
	    {"type":"custom","name":"note"},
	    {"type":"namespace","name":"docs","tools":[{"type":"custom","name":"query","format":{"type":"text"}}]}],
	  "tool_choice":{"type":"custom","name":"apply_patch"},
	  "input":[
	    {"role":"user","content":"fix a.go"},
	    {"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":`+jsonString(patch)+`},
	    {"type":"custom_tool_call_output","call_id":"c1","output":"Done!"},
	    {"type":"custom_tool_call","call_id":"c2","namespace":"docs","name":"query","input":"select 1","status":"completed"},
	    {"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"1"}]}]}`)
	dec, err := ToRequest(req, nil)
	require.NoError(t, err)
	r := dec.Request

	require.Len(t, r.Tools, 3)
	assert.Equal(t, []string{"apply_patch", "note", "docs__query"}, []string{r.Tools[0].Name, r.Tools[1].Name, r.Tools[2].Name})
	assert.Equal(t, "Edit files.", r.Tools[0].Description)
	for _, tool := range r.Tools {
		p := gjson.ParseBytes(tool.Parameters)
		assert.Equal(t, "object", p.Get("type").String(), tool.Name)
		assert.Equal(t, `["input"]`, p.Get("required").Raw, "the raw text is the one argument, required")
		assert.Equal(t, "string", p.Get("properties.input.type").String(), tool.Name)
		assert.Equal(t, "false", p.Get("additionalProperties").Raw, tool.Name)
		assert.Equal(t, "input", tool.RawInput, "%s: a bare call body is its input", tool.Name)
	}
	grammarDesc := gjson.GetBytes(r.Tools[0].Parameters, "properties.input.description").String()
	assert.Contains(t, grammarDesc, "lark grammar", "the model is told which grammar the input follows")
	assert.Contains(t, grammarDesc, applyPatchGrammar, "and the grammar itself")
	assert.NotContains(t, gjson.GetBytes(r.Tools[1].Parameters, "properties.input.description").String(), "grammar")

	assert.Equal(t, Names{
		"apply_patch": {Name: "apply_patch", Custom: true},
		"note":        {Name: "note", Custom: true},
		"docs__query": {Namespace: "docs", Name: "query", Custom: true},
	}, dec.Names)
	assert.Equal(t, models.ToolChoice{Mode: models.ChoiceFunction, Name: "apply_patch"}, r.Choice)
	assert.Empty(t, dec.Ignored, "custom tools and their calls are no longer dropped")

	require.Len(t, r.Messages, 5)
	call := r.Messages[1].Blocks[0]
	assert.Equal(t, models.BlockToolCall, call.Kind)
	assert.Equal(t, "apply_patch", call.Name)
	assert.JSONEq(t, `{"input":`+jsonString(patch)+`}`, call.Arguments, "a custom call in history reads as the call the model is asked to write")
	assert.Equal(t, models.Message{Role: models.RoleTool, ToolCallID: "c1", Blocks: []models.Block{text("Done!")}}, r.Messages[2])
	assert.Equal(t, "docs__query", r.Messages[3].Blocks[0].Name)
	assert.JSONEq(t, `{"input":"select 1"}`, r.Messages[3].Blocks[0].Arguments)
	assert.Equal(t, models.Message{Role: models.RoleTool, ToolCallID: "c2", Blocks: []models.Block{text("1")}}, r.Messages[4])
}

func TestToRequestCustomToolErrors(t *testing.T) {
	cases := []struct{ name, tools, param string }{
		{"unknown format", `{"type":"custom","name":"f","format":{"type":"xml"}}`, "tools[0].format.type"},
		{"unknown syntax", `{"type":"custom","name":"f","format":{"type":"grammar","syntax":"ebnf","definition":"x"}}`, "tools[0].format.syntax"},
		{"no definition", `{"type":"custom","name":"f","format":{"type":"grammar","syntax":"regex","definition":" "}}`, "tools[0].format.definition"},
		{"member format", `{"type":"namespace","name":"ns","tools":[{"type":"custom","name":"f","format":{"type":"grammar"}}]}`, "tools[0].tools[0].format.syntax"},
		{"bad name", `{"type":"custom","name":"apply patch"}`, "tools[0].name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToRequest(decode(t, `{"model":"m","input":"x","tools":[`+tc.tools+`]}`), nil)
			requireParam(t, err, tc.param)
		})
	}
	_, err := ToRequest(decode(t, `{"model":"m","input":[{"type":"custom_tool_call","name":"f","input":"x"}]}`), nil)
	requireParam(t, err, "input[0]")
	_, err = ToRequest(decode(t, `{"model":"m","input":[{"type":"custom_tool_call_output","output":"x"}]}`), nil)
	requireParam(t, err, "input[0].call_id")
}

func TestCustomCallInput(t *testing.T) {
	cases := []struct{ args, want string }{
		{customArguments(patch), patch},
		{`{"input":""}`, ""},
		{`{"input":"a","extra":1}`, "a"},
		{`{"input":`, `{"input":`},       // cut off: the raw arguments, marked incomplete by the caller
		{`{"input":42}`, `{"input":42}`}, // not the schema's string
		{``, ``},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, CustomCallInput(tc.args), tc.args)
	}
}

var customNames = Names{"apply_patch": {Name: "apply_patch", Custom: true}, "docs__query": {Namespace: "docs", Name: "query", Custom: true}}

func TestFromAnswerCustomCall(t *testing.T) {
	base := NewResponse("resp_1", 1, &Request{Model: "m"})
	got := FromAnswer(base, &models.Answer{
		ToolCalls: []models.ToolCall{
			{ID: "c1", Name: "apply_patch", Arguments: customArguments(patch)},
			{ID: "c2", Name: "docs__query", Arguments: `{"input":"select 1"}`},
			{ID: "c3", Name: "shell", Arguments: `{"cmd":"ls"}`},
		},
		Finish: models.FinishToolCalls,
	}, customNames)
	require.Len(t, got.Output, 3)
	b, err := json.Marshal(got.Output[0])
	require.NoError(t, err)
	item := gjson.ParseBytes(b)
	assert.Equal(t, "custom_tool_call", item.Get("type").String())
	assert.True(t, strings.HasPrefix(item.Get("id").String(), "ctc_"), item.Raw)
	assert.Equal(t, "c1", item.Get("call_id").String())
	assert.Equal(t, "apply_patch", item.Get("name").String())
	assert.Equal(t, patch, item.Get("input").String(), "the input is the raw text, unwrapped")
	assert.False(t, item.Get("arguments").Exists())
	assert.False(t, item.Get("namespace").Exists())

	b, err = json.Marshal(got.Output[1])
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"`+got.Output[1].ID+`","type":"custom_tool_call","status":"completed","call_id":"c2","name":"query","namespace":"docs","input":"select 1"}`, string(b))
	assert.Equal(t, ItemFunctionCall, got.Output[2].Type, "a function stays a function")
	assert.Equal(t, `{"cmd":"ls"}`, got.Output[2].Arguments)

	// The stored items replay as the same calls.
	items, err := OutputItems(got)
	require.NoError(t, err)
	dec, err := ToRequest(decode(t, `{"model":"m","input":[{"type":"custom_tool_call_output","call_id":"c1","output":"ok"}]}`), items)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(dec.Request.Messages), 1)
	first := dec.Request.Messages[0].Blocks[0]
	assert.Equal(t, "apply_patch", first.Name)
	assert.Equal(t, patch, CustomCallInput(first.Arguments))
}

func TestStreamWriterCustomCall(t *testing.T) {
	w, buf := newTestWriter(customNames)
	require.NoError(t, w.Text("Patching."))
	require.NoError(t, w.ToolCallStart("call_1", "apply_patch"))
	args := customArguments(patch)
	for i := 0; i < len(args); i += 7 {
		require.NoError(t, w.ToolCallArguments(args[i:min(i+7, len(args))]))
	}
	require.NoError(t, w.ToolCallEnd(true))
	require.NoError(t, w.Finish(models.FinishToolCalls, models.Usage{}))

	evs := parseEvents(t, buf.String())
	types := eventNames(evs)
	assert.Equal(t, []string{
		EventCreated, EventInProgress,
		EventItemAdded, EventPartAdded, EventTextDelta, EventTextDone, EventPartDone, EventItemDone,
		EventItemAdded, EventCustomInputDelta, EventCustomInputDone, EventItemDone,
		EventCompleted,
	}, types, "the arguments' JSON never streams: the input goes out whole")

	added := evs[8].Data.Get("item")
	assert.Equal(t, "custom_tool_call", added.Get("type").String())
	assert.Equal(t, "in_progress", added.Get("status").String())
	assert.Equal(t, "", added.Get("input").String())
	id := added.Get("id").String()
	for _, e := range evs[9:11] {
		assert.Equal(t, id, e.Data.Get("item_id").String(), e.Name)
		assert.EqualValues(t, 1, e.Data.Get("output_index").Int(), e.Name)
	}
	assert.Equal(t, patch, evs[9].Data.Get("delta").String())
	assert.Equal(t, patch, evs[10].Data.Get("input").String())
	done := evs[11].Data.Get("item")
	assert.Equal(t, "completed", done.Get("status").String())
	assert.Equal(t, patch, done.Get("input").String())
	assert.Equal(t, "call_1", done.Get("call_id").String())
	assert.JSONEq(t, done.Raw, evs[12].Data.Get("response.output.1").Raw, "response.completed carries the same item")
	assert.JSONEq(t, done.Raw, string(w.OutputItems()[1]), "and so does the store")
	b, err := json.Marshal(w.Response().Output[1])
	require.NoError(t, err)
	assert.JSONEq(t, done.Raw, string(b), "the appended item is what MarshalJSON writes")
	assert.NotContains(t, buf.String(), `{\"input\"`, "the arguments' JSON never reaches the client")
}

func TestStreamWriterCustomCallEnds(t *testing.T) {
	t.Run("found invalid", func(t *testing.T) {
		w, buf := newTestWriter(customNames)
		require.NoError(t, w.ToolCallStart("call_1", "apply_patch"))
		require.NoError(t, w.ToolCallArguments(`{"input":"*** Begin`))
		require.NoError(t, w.ToolCallEnd(false))
		require.NoError(t, w.Finish(models.FinishStop, models.Usage{}))
		evs := parseEvents(t, buf.String())
		last := evs[len(evs)-1].Data.Get("response.output.0")
		assert.Equal(t, "incomplete", last.Get("status").String(), "a call the core found invalid is incomplete")
		assert.Equal(t, `{"input":"*** Begin`, last.Get("input").String())
	})
	t.Run("cut off by the end", func(t *testing.T) {
		w, buf := newTestWriter(customNames)
		require.NoError(t, w.ToolCallStart("call_1", "docs__query"))
		require.NoError(t, w.ToolCallArguments(`{"input":"sel`))
		require.NoError(t, w.Finish(models.FinishStop, models.Usage{}))
		evs := parseEvents(t, buf.String())
		item := evs[len(evs)-2].Data.Get("item")
		assert.Equal(t, "incomplete", item.Get("status").String())
		assert.Equal(t, "query", item.Get("name").String())
		assert.Equal(t, "docs", item.Get("namespace").String())
		assert.JSONEq(t, item.Raw, string(w.OutputItems()[0]))
	})
	t.Run("cut off by an error", func(t *testing.T) {
		w, buf := newTestWriter(customNames)
		require.NoError(t, w.ToolCallStart("call_1", "apply_patch"))
		require.NoError(t, w.ToolCallArguments(customArguments("partial")))
		require.NoError(t, w.Error(&models.Error{Status: 502, Message: "upstream gone"}))
		evs := parseEvents(t, buf.String())
		failed := evs[len(evs)-1]
		assert.Equal(t, EventFailed, failed.Name)
		item := failed.Data.Get("response.output.0")
		assert.Equal(t, "custom_tool_call", item.Get("type").String())
		assert.Equal(t, "incomplete", item.Get("status").String())
		assert.Equal(t, "partial", item.Get("input").String())
		assert.JSONEq(t, item.Raw, string(w.OutputItems()[0]))
	})
	t.Run("empty input", func(t *testing.T) {
		w, buf := newTestWriter(customNames)
		require.NoError(t, w.ToolCallStart("call_1", "apply_patch"))
		require.NoError(t, w.ToolCallArguments(`{"input":""}`))
		require.NoError(t, w.ToolCallEnd(true))
		require.NoError(t, w.Finish(models.FinishToolCalls, models.Usage{}))
		types := eventNames(parseEvents(t, buf.String()))
		assert.NotContains(t, types, EventCustomInputDelta, "no empty delta")
		assert.Contains(t, types, EventCustomInputDone)
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestCustomArgumentsReadAsWritten(t *testing.T) {
	assert.Equal(t, `{"input":"a <b> & \"c\"\n"}`, customArguments("a <b> & \"c\"\n"), "no HTML escapes in the history the model reads")
}
