package openai

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func fn(name, params string) Tool {
	t := Tool{Type: "function", Function: FunctionSpec{Name: name, Description: "does " + name}}
	if params != "" {
		t.Function.Parameters = json.RawMessage(params)
	}
	return t
}

func requireParam(t *testing.T, err error, param string) {
	t.Helper()
	var apiErr *models.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, 400, apiErr.Status)
	assert.Equal(t, models.KindInvalidRequest, apiErr.Kind)
	assert.Equal(t, param, apiErr.Param)
}

func TestToRequestValidatesTools(t *testing.T) {
	cases := []struct {
		name  string
		tools []Tool
		param string
	}{
		{"ok", []Tool{fn("a", `{"type":"object"}`), fn("b.c-d_e", "")}, ""},
		{"not a function", []Tool{{Type: "code_interpreter"}}, "tools[0].type"},
		{"missing name", []Tool{fn("a", ""), fn("", "")}, "tools[1].function.name"},
		{"bad characters", []Tool{fn("read file", "")}, "tools[0].function.name"},
		{"too long", []Tool{fn(strings.Repeat("x", 65), "")}, "tools[0].function.name"},
		{"duplicate", []Tool{fn("a", ""), fn("b", ""), fn("a", "")}, "tools[2].function.name"},
		{"parameters not an object", []Tool{fn("a", `"string"`)}, "tools[0].function.parameters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToRequest(&ChatRequest{Model: "m", Tools: tc.tools})
			if tc.param == "" {
				assert.NoError(t, err)
				return
			}
			requireParam(t, err, tc.param)
		})
	}
}

func TestToToolChoice(t *testing.T) {
	tools := []models.Tool{{Name: "get_weather"}}
	ok := []struct {
		raw  string
		want models.ToolChoice
	}{
		{``, models.ToolChoice{Mode: models.ChoiceAuto}},
		{`null`, models.ToolChoice{Mode: models.ChoiceAuto}},
		{`"auto"`, models.ToolChoice{Mode: models.ChoiceAuto}},
		{`"none"`, models.ToolChoice{Mode: models.ChoiceNone}},
		{`"required"`, models.ToolChoice{Mode: models.ChoiceRequired}},
		{`"any"`, models.ToolChoice{Mode: models.ChoiceRequired}},
		{`{"type":"function","function":{"name":"get_weather"}}`, models.ToolChoice{Mode: models.ChoiceFunction, Name: "get_weather"}},
		{`{"type":"tool","name":"get_weather"}`, models.ToolChoice{Mode: models.ChoiceFunction, Name: "get_weather"}},
	}
	for _, tc := range ok {
		got, err := toToolChoice(json.RawMessage(tc.raw), tools)
		require.NoError(t, err, tc.raw)
		assert.Equal(t, tc.want, got, tc.raw)
	}
	bad := []struct{ raw, param string }{
		{`"always"`, "tool_choice"},
		{`42`, "tool_choice"},
		{`{"type":"retrieval"}`, "tool_choice.type"},
		{`{"type":"function","function":{}}`, "tool_choice.function.name"},
		{`{"type":"function","function":{"name":"nope"}}`, "tool_choice.function.name"},
	}
	for _, tc := range bad {
		_, err := toToolChoice(json.RawMessage(tc.raw), tools)
		requireParam(t, err, tc.param)
	}
	_, err := toToolChoice(json.RawMessage(`"required"`), nil)
	requireParam(t, err, "tool_choice")
}

func TestToRequest(t *testing.T) {
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"parallel_tool_calls":false,
	  "tools":[{"type":"function","function":{"name":"read","description":"reads","parameters":{"type":"object"}}}],
	  "tool_choice":"required",
	  "messages":[
	    {"role":"developer","content":"be brief"},
	    {"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"x"}}]},
	    {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"p\":1}"}}]},
	    {"role":"tool","tool_call_id":"c1","content":"data"},
	    {"role":"function","name":"read","content":"old"}]}`
	var wire ChatRequest
	require.NoError(t, json.Unmarshal([]byte(body), &wire))
	req, err := ToRequest(&wire)
	require.NoError(t, err)
	assert.Equal(t, "m", req.Model)
	assert.True(t, req.Stream)
	assert.True(t, req.IncludeUsage)
	assert.True(t, req.SingleCall)
	assert.Equal(t, []models.Tool{{Name: "read", Description: "reads", Parameters: json.RawMessage(`{"type":"object"}`)}}, req.Tools)
	assert.Equal(t, models.ToolChoice{Mode: models.ChoiceRequired}, req.Choice)
	text := func(s string) models.Block { return models.Block{Kind: models.BlockText, Text: s} }
	assert.Equal(t, []models.Message{
		{Role: models.RoleSystem, Blocks: []models.Block{text("be brief")}},
		{Role: models.RoleUser, Blocks: []models.Block{text("look"), {Kind: models.BlockMedia, Text: "image_url"}}},
		{Role: models.RoleAssistant, Blocks: []models.Block{text(""), {Kind: models.BlockToolCall, ID: "c1", Name: "read", Arguments: `{"p":1}`}}},
		{Role: models.RoleTool, ToolCallID: "c1", Blocks: []models.Block{text("data")}},
		{Role: models.RoleTool, ToolName: "read", Blocks: []models.Block{text("old")}},
	}, req.Messages)

	wire.Messages[2].Role = "wizard"
	_, err = ToRequest(&wire)
	requireParam(t, err, "messages[2].role")
	assert.True(t, strings.Contains(err.Error(), `"wizard"`), err.Error())
}

// Images: a data: URL goes along as the image; any other URL is a marker;
// a malformed one is a 400 on its part.
func TestToRequestImages(t *testing.T) {
	decode := func(content string) ([]models.Block, error) {
		var wire ChatRequest
		require.NoError(t, json.Unmarshal([]byte(`{"model":"m","messages":[{"role":"user","content":`+content+`}]}`), &wire))
		req, err := ToRequest(&wire)
		if err != nil {
			return nil, err
		}
		return req.Messages[0].Blocks, nil
	}
	blocks, err := decode(`[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/","detail":"high"}},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]`)
	require.NoError(t, err)
	assert.Equal(t, []models.Block{{Kind: models.BlockText, Text: "what?"}, {Kind: models.BlockImage, MediaType: "image/jpeg", Data: "/9j/"},
		{Kind: models.BlockMedia, Text: "image_url"}}, blocks)

	for _, tc := range []struct{ url, msg string }{
		{"data:image/png,raw", "not base64"},
		{"data:image/tiff;base64,AAAA", "use image/png, image/jpeg, image/gif, image/webp"},
		{"data:image/png;base64,", "no data"},
		{"data:image/png;base64,not*base64", "not base64"},
	} {
		_, err := decode(`[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"` + tc.url + `"}}]`)
		var me *models.Error
		require.ErrorAs(t, err, &me, tc.url)
		assert.Equal(t, 400, me.Status)
		assert.Equal(t, "messages[0].content[1].image_url.url", me.Param)
		assert.Contains(t, me.Message, tc.msg)
	}

	// The client's order of text and images is kept, whichever reading
	// of the parts took them (a part's extra key sends them to the
	// general one).
	img := models.Block{Kind: models.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="}
	text := func(s string) models.Block { return models.Block{Kind: models.BlockText, Text: s} }
	const png = `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}`
	for _, general := range []string{"", `,"x":{}`} {
		for _, tc := range []struct {
			parts string
			want  []models.Block
		}{
			{`[{"type":"text","text":"a"` + general + `},` + png + `,{"type":"text","text":"b\nc"},` + png + `,` + png + `,{"type":"text","text":"d"}]`,
				[]models.Block{text("a"), img, text("b\nc"), img, img, text("d")}},
			{`[` + png + `,{"type":"text","text":"after"` + general + `}]`, []models.Block{img, text("after")}},
			{`[{"type":"text","text":"before"` + general + `},` + png + `]`, []models.Block{text("before"), img}},
		} {
			blocks, err := decode(tc.parts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, blocks, tc.parts)
		}
	}
}

// response_format becomes a system instruction after the client's own
// system messages: the upstream has no structured output, and a schema
// the model is never told cannot be followed (LangChain's
// withStructuredOutput, the AI SDK's Output.object send it).
func TestToRequestResponseFormat(t *testing.T) {
	convert := func(t *testing.T, format string) (*models.Request, error) {
		t.Helper()
		body := `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"weather?"}]`
		if format != "" {
			body += `,"response_format":` + format
		}
		var wire ChatRequest
		require.NoError(t, json.Unmarshal([]byte(body+"}"), &wire))
		return ToRequest(&wire)
	}
	schema := `{"type":"object","properties":{"celsius":{"type":"number"}},"required":["celsius"]}`
	ok := []struct{ name, format, want string }{
		{"json_schema", `{"type":"json_schema","json_schema":{"name":"temp","description":"a reading","strict":true,"schema":` + schema + `}}`,
			models.JSONSchemaNote([]byte(schema), "temp", "a reading")},
		{"json_object", `{"type":"json_object"}`, models.JSONObjectNote},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			req, err := convert(t, tc.format)
			require.NoError(t, err)
			require.Len(t, req.Messages, 3)
			assert.Equal(t, "be brief", req.Messages[0].Text())
			assert.Equal(t, models.RoleSystem, req.Messages[1].Role)
			assert.Equal(t, tc.want, req.Messages[1].Text())
			assert.Equal(t, "weather?", req.Messages[2].Text())
		})
	}
	for _, format := range []string{"", `null`, `{"type":"text"}`} {
		req, err := convert(t, format)
		require.NoError(t, err, format)
		assert.Len(t, req.Messages, 2, "plain text adds nothing: %s", format)
	}
	bad := []struct{ name, format, param string }{
		{"unknown type", `{"type":"xml"}`, "response_format.type"},
		{"no schema", `{"type":"json_schema","json_schema":{"name":"n"}}`, "response_format.json_schema.schema"},
		{"schema not an object", `{"type":"json_schema","json_schema":{"name":"n","schema":[1]}}`, "response_format.json_schema.schema"},
		{"not an object", `"json"`, "response_format"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convert(t, tc.format)
			requireParam(t, err, tc.param)
		})
	}
}
