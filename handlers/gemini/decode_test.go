package gemini

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func TestJSONSchema(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"upper-case types", `{"type":"OBJECT","properties":{"a":{"type":"STRING"},"b":{"type":"ARRAY","items":{"type":"INTEGER"}}}}`,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"integer"}}}}`},
		{"nullable", `{"type":"OBJECT","properties":{"a":{"type":"STRING","nullable":true}}}`,
			`{"type":"object","properties":{"a":{"type":["string","null"]}}}`},
		{"a property named like a keyword", `{"type":"OBJECT","properties":{"type":{"type":"STRING","enum":["OBJECT"]},"default":{"type":"NUMBER"}}}`,
			`{"type":"object","properties":{"type":{"type":"string","enum":["OBJECT"]},"default":{"type":"number"}}}`},
		{"anyOf", `{"anyOf":[{"type":"STRING"},{"type":"NULL"}]}`, `{"anyOf":[{"type":"string"},{"type":"null"}]}`},
		{"unchanged keeps its bytes", `{"type": "object",  "description": "<a & b>"}`, `{"type": "object",  "description": "<a & b>"}`},
		{"not an object is left for the check", `[1]`, `[1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := JSONSchema(json.RawMessage(tc.in))
			if tc.in == tc.want {
				assert.Equal(t, tc.want, string(got))
				return
			}
			assert.JSONEq(t, tc.want, string(got))
		})
	}
	assert.Nil(t, JSONSchema(nil))
	assert.Nil(t, JSONSchema(json.RawMessage("null")))
}

func text(s string) *string { return &s }

func TestToRequestResultsFindTheirCalls(t *testing.T) {
	req := &GenerateContentRequest{Contents: []Content{
		{Role: "user", Parts: []Part{{Text: text("go")}}},
		{Role: "model", Parts: []Part{
			{FunctionCall: &FunctionCall{Name: "read", Args: json.RawMessage(`{"p":1}`)}},
			{FunctionCall: &FunctionCall{Name: "read", Args: json.RawMessage(`{"p":2}`)}},
			{FunctionCall: &FunctionCall{ID: "x9", Name: "shell"}},
		}},
		{Role: "user", Parts: []Part{
			{FunctionResponse: &FunctionResponse{ID: "x9", Response: json.RawMessage(`{"output":"ok"}`)}},
			{FunctionResponse: &FunctionResponse{Name: "read", Response: json.RawMessage(`{"error":"no such file"}`)}},
			{FunctionResponse: &FunctionResponse{Name: "read", Response: json.RawMessage(`{"content":"two","lines":2}`)}},
			{Text: text("and now?")},
		}},
	}}
	out, err := ToRequest(req, "m", false)
	require.NoError(t, err)
	require.Len(t, out.Messages, 6)
	calls := out.Messages[1].ToolCalls()
	require.Len(t, calls, 3)
	assert.Equal(t, "call_c1p0", calls[0].ID, "a call without an id gets one from its place")
	assert.Equal(t, "call_c1p1", calls[1].ID)
	assert.Equal(t, "x9", calls[2].ID)
	for i, want := range []struct {
		id, name, text string
		isError        bool
	}{{"x9", "shell", "ok", false}, {"call_c1p0", "read", "no such file", true}, {"call_c1p1", "read", `{"content":"two","lines":2}`, false}} {
		m := out.Messages[2+i]
		assert.Equal(t, models.RoleTool, m.Role)
		assert.Equal(t, want.id, m.ToolCallID, "result %d", i)
		assert.Equal(t, want.name, m.ToolName)
		assert.Equal(t, want.text, m.Text())
		assert.Equal(t, want.isError, m.IsError)
	}
	assert.Equal(t, models.RoleUser, out.Messages[5].Role)
}

func TestToRequestThinkingAndChoice(t *testing.T) {
	budget := func(n int) *int { return &n }
	for _, tc := range []struct {
		name           string
		model          string
		tc             *ThinkingConfig
		thinking, show bool
	}{
		{"none", "m", nil, false, false},
		{"includeThoughts alone shows, asks nothing", "m", &ThinkingConfig{IncludeThoughts: true}, false, true},
		{"a budget", "m", &ThinkingConfig{ThinkingBudget: budget(100)}, true, false},
		{"budget zero", "m", &ThinkingConfig{ThinkingBudget: budget(0)}, false, false},
		{"dynamic budget", "m", &ThinkingConfig{ThinkingBudget: budget(-1)}, false, false},
		{"a level", "m", &ThinkingConfig{ThinkingLevel: "low", IncludeThoughts: true}, true, true},
		{"a -thinking model shows", "m-thinking", nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ToRequest(&GenerateContentRequest{Contents: []Content{{Parts: []Part{{Text: text("hi")}}}}, GenerationConfig: &GenerationConfig{ThinkingConfig: tc.tc}}, tc.model, true)
			require.NoError(t, err)
			assert.Equal(t, tc.thinking, out.Thinking)
			assert.Equal(t, tc.show, out.ShowThinking)
		})
	}

	tools := []Tool{{FunctionDeclarations: []FunctionDeclaration{{Name: "a"}, {Name: "b"}, {Name: "c"}}}}
	for _, tc := range []struct {
		mode    string
		allowed []string
		want    models.ToolChoice
		tools   int
	}{
		{"AUTO", nil, models.ToolChoice{Mode: models.ChoiceAuto}, 3},
		{"VALIDATED", nil, models.ToolChoice{Mode: models.ChoiceAuto}, 3},
		{"NONE", nil, models.ToolChoice{Mode: models.ChoiceNone}, 3},
		{"ANY", nil, models.ToolChoice{Mode: models.ChoiceRequired}, 3},
		{"any", []string{"b"}, models.ToolChoice{Mode: models.ChoiceFunction, Name: "b"}, 3},
		{"ANY", []string{"c", "a"}, models.ToolChoice{Mode: models.ChoiceRequired}, 2},
	} {
		out, err := ToRequest(&GenerateContentRequest{Contents: []Content{{Parts: []Part{{Text: text("hi")}}}}, Tools: tools,
			ToolConfig: &ToolConfig{FunctionCallingConfig: &FunctionCallingConfig{Mode: tc.mode, AllowedFunctionNames: tc.allowed}}}, "m", false)
		require.NoError(t, err)
		assert.Equal(t, tc.want, out.Choice, "%s %v", tc.mode, tc.allowed)
		assert.Len(t, out.Tools, tc.tools)
	}
}

// Inline images go along: in a user turn, in a result's parts, and after
// a result (Gemini CLI's read_file of a picture); other media are markers.
func TestToRequestImages(t *testing.T) {
	png := &Blob{MIMEType: "image/png", Data: "iVBORw0KGgo="}
	img := models.Block{Kind: models.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="}
	req := &GenerateContentRequest{Contents: []Content{
		{Role: "user", Parts: []Part{{Text: text("look")}, {InlineData: png}, {InlineData: &Blob{MIMEType: "image/heic", Data: "AAAA"}}, {FileData: &Blob{MIMEType: "image/png"}}}},
		{Role: "model", Parts: []Part{{FunctionCall: &FunctionCall{Name: "read_file"}}, {FunctionCall: &FunctionCall{Name: "shot"}}}},
		{Role: "user", Parts: []Part{
			{FunctionResponse: &FunctionResponse{Name: "read_file", Response: json.RawMessage(`{"output":"Binary content provided (1 item(s))."}`)}},
			{InlineData: png},
			{FunctionResponse: &FunctionResponse{Name: "shot", Response: json.RawMessage(`{"output":"done"}`), Parts: []Part{{InlineData: png}}}},
			{Text: text("what now?")},
			{InlineData: png},
		}},
	}}
	out, err := ToRequest(req, "m", false)
	require.NoError(t, err)
	require.Len(t, out.Messages, 5)
	assert.Equal(t, []models.Block{{Kind: models.BlockText, Text: "look"}, img, {Kind: models.BlockMedia, Text: "image/heic"}, {Kind: models.BlockMedia, Text: "image/png"}}, out.Messages[0].Blocks)
	assert.Equal(t, []models.Block{{Kind: models.BlockText, Text: "Binary content provided (1 item(s))."}, img}, out.Messages[2].Blocks, "the picture read is the result's")
	assert.Equal(t, []models.Block{{Kind: models.BlockText, Text: "done"}, img}, out.Messages[3].Blocks)
	assert.Equal(t, models.Message{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockText, Text: "what now?"}, img}}, out.Messages[4],
		"after text, an image is the user's again")
}

func TestToRequestErrors(t *testing.T) {
	user := Content{Role: "user", Parts: []Part{{Text: text("hi")}}}
	for _, tc := range []struct {
		name  string
		req   GenerateContentRequest
		param string
	}{
		{"no contents", GenerateContentRequest{}, "contents"},
		{"a role", GenerateContentRequest{Contents: []Content{user, {Role: "system"}}}, "contents[1].role"},
		{"a call in a user turn", GenerateContentRequest{Contents: []Content{{Role: "user", Parts: []Part{{Text: text("x")}, {FunctionCall: &FunctionCall{Name: "f"}}}}}}, "contents[0].parts[1].functionCall"},
		{"a result with neither name nor id", GenerateContentRequest{Contents: []Content{{Role: "user", Parts: []Part{{FunctionResponse: &FunctionResponse{}}}}}}, "contents[0].parts[0].functionResponse"},
		{"call args not an object", GenerateContentRequest{Contents: []Content{user, {Role: "model", Parts: []Part{{FunctionCall: &FunctionCall{Name: "f", Args: json.RawMessage(`[1]`)}}}}}}, "contents[1].parts[0].functionCall.args"},
		{"a bad tool name", GenerateContentRequest{Contents: []Content{user}, Tools: []Tool{{}, {FunctionDeclarations: []FunctionDeclaration{{Name: "ok"}, {Name: "no spaces"}}}}}, "tools[1].functionDeclarations[1].name"},
		{"both schemas", GenerateContentRequest{Contents: []Content{user}, Tools: []Tool{{FunctionDeclarations: []FunctionDeclaration{{Name: "f", Parameters: json.RawMessage(`{}`), ParametersJSONSchema: json.RawMessage(`{}`)}}}}}, "tools[0].functionDeclarations[0]"},
		{"a schema not an object", GenerateContentRequest{Contents: []Content{user}, Tools: []Tool{{FunctionDeclarations: []FunctionDeclaration{{Name: "f", ParametersJSONSchema: json.RawMessage(`"x"`)}}}}}, "tools[0].functionDeclarations[0].parameters"},
		{"ANY without tools", GenerateContentRequest{Contents: []Content{user}, ToolConfig: &ToolConfig{FunctionCallingConfig: &FunctionCallingConfig{Mode: "ANY"}}}, "toolConfig.functionCallingConfig.mode"},
		{"an unknown mode", GenerateContentRequest{Contents: []Content{user}, ToolConfig: &ToolConfig{FunctionCallingConfig: &FunctionCallingConfig{Mode: "SOMETIMES"}}}, "toolConfig.functionCallingConfig.mode"},
		{"maxOutputTokens", GenerateContentRequest{Contents: []Content{user}, GenerationConfig: &GenerationConfig{MaxOutputTokens: new(int)}}, "generationConfig.maxOutputTokens"},
		{"a JSON schema not an object", GenerateContentRequest{Contents: []Content{user}, GenerationConfig: &GenerationConfig{ResponseMIMEType: "application/json", ResponseJSONSchema: json.RawMessage(`"x"`)}}, "generationConfig.responseJsonSchema"},
		{"an image without data", GenerateContentRequest{Contents: []Content{{Role: "user", Parts: []Part{{Text: text("x")}, {InlineData: &Blob{MIMEType: "image/png"}}}}}}, "contents[0].parts[1].inlineData"},
		{"a result's image without data", GenerateContentRequest{Contents: []Content{{Role: "user", Parts: []Part{
			{FunctionResponse: &FunctionResponse{Name: "f", Parts: []Part{{InlineData: &Blob{MIMEType: "image/jpeg"}}}}}}}}}, "contents[0].parts[0].functionResponse.parts[0].inlineData"},
		{"an empty part", GenerateContentRequest{Contents: []Content{{Role: "user", Parts: []Part{{Text: text("x")}, {}}}}}, "contents[0].parts[1]"},
		{"an empty part of the model", GenerateContentRequest{Contents: []Content{user, {Role: "model", Parts: []Part{{}}}}}, "contents[1].parts[0]"},
		{"an empty system part", GenerateContentRequest{Contents: []Content{user}, SystemInstruction: &Content{Parts: []Part{{}}}}, "systemInstruction.parts[0]"},
		{"an empty part of a result", GenerateContentRequest{Contents: []Content{{Role: "user", Parts: []Part{
			{FunctionResponse: &FunctionResponse{Name: "f", Parts: []Part{{}}}}}}}}, "contents[0].parts[0].functionResponse.parts[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToRequest(&tc.req, "m", false)
			var apiErr *models.Error
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tc.param, apiErr.Param)
			body := ErrorBodyOf(apiErr)
			assert.Equal(t, 400, body.Error.Code)
			assert.Equal(t, "INVALID_ARGUMENT", body.Error.Status)
			assert.Contains(t, body.Error.Message, tc.param)
		})
	}
}

func TestErrorBodyOf(t *testing.T) {
	for _, tc := range []struct {
		err    models.Error
		status string
	}{
		{models.Error{Status: 401, Kind: models.KindAuthentication}, "UNAUTHENTICATED"},
		{models.Error{Status: 404, Kind: models.KindNotFound}, "NOT_FOUND"},
		{models.Error{Status: 429, Kind: models.KindRateLimit}, "RESOURCE_EXHAUSTED"},
		{models.Error{Status: 503, Kind: models.KindAPI}, "UNAVAILABLE"},
		{models.Error{Status: 504, Kind: models.KindAPI}, "DEADLINE_EXCEEDED"},
		{models.Error{Status: 500, Kind: models.KindAPI}, "INTERNAL"},
		{models.Error{Status: 413, Kind: models.KindTooLarge}, "INVALID_ARGUMENT"},
	} {
		body := ErrorBodyOf(&tc.err)
		assert.Equal(t, tc.status, body.Error.Status)
		assert.Equal(t, tc.err.Status, body.Error.Code)
	}
}

// TestToRequestCodeExecutionParts: the code execution tool's parts, and a
// signature alone, are not empty parts; the gateway drops them.
func TestToRequestCodeExecutionParts(t *testing.T) {
	var req GenerateContentRequest
	require.NoError(t, json.Unmarshal([]byte(`{"contents":[{"role":"user","parts":[{"text":"run it"}]},
	  {"role":"model","parts":[{"executableCode":{"language":"PYTHON","code":"print(1)"}},{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1"}},{"text":"1"},{"thoughtSignature":"c2ln"}]}]}`), &req))
	out, err := ToRequest(&req, "m", false)
	require.NoError(t, err)
	assert.Equal(t, []models.Block{{Kind: models.BlockText, Text: "1"}}, out.Messages[1].Blocks)
}
