package anthropic

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func decode(t *testing.T, body string) *MessagesRequest {
	t.Helper()
	var req MessagesRequest
	require.NoError(t, json.Unmarshal([]byte(body), &req), body)
	return &req
}

func TestToRequest(t *testing.T) {
	req, err := ToRequest(decode(t, `{"model":"claude-sonnet-4-5-20250929","max_tokens":32000,"stream":true,
	  "system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Be careful."}],
	  "metadata":{"user_id":"u"},"context_management":{"edits":[]},"output_config":{"effort":"high"},"temperature":1,"top_k":5,"top_p":0.9,
	  "thinking":{"type":"adaptive"},
	  "tools":[{"name":"Read","description":"reads","input_schema":{"type":"object"},"defer_loading":true},{"type":"custom","name":"Bash","input_schema":{"type":"object"}}],
	  "tool_choice":{"type":"any","disable_parallel_tool_use":true},
	  "messages":[
	    {"role":"user","content":[{"type":"text","text":"<system-reminder>ctx</system-reminder>"},{"type":"text","text":"read a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
	    {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"redacted_thinking","data":"opaque"},{"type":"text","text":"ok"},
	      {"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a"}},{"type":"tool_use","id":"toolu_2","name":"Bash","input":{}}]},
	    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"A","cache_control":{"type":"ephemeral"}},
	      {"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":[{"type":"text","text":"exit 1"},{"type":"image","source":{}}]},
	      {"type":"text","text":"go on"}]},
	    {"role":"assistant","content":"plain"}]}`))
	require.NoError(t, err)
	assert.Equal(t, "claude-sonnet-4-5-20250929", req.Model)
	assert.True(t, req.Stream)
	assert.True(t, req.Thinking)
	assert.True(t, req.ShowThinking)
	assert.True(t, req.SingleCall)
	assert.Equal(t, models.ToolChoice{Mode: models.ChoiceRequired}, req.Choice)
	assert.Equal(t, []models.Tool{
		{Name: "Read", Description: "reads", Parameters: json.RawMessage(`{"type":"object"}`), Deferred: true},
		{Name: "Bash", Parameters: json.RawMessage(`{"type":"object"}`)},
	}, req.Tools)
	text := func(s string) models.Block { return models.Block{Kind: models.BlockText, Text: s} }
	assert.Equal(t, []models.Message{
		{Role: models.RoleSystem, Blocks: []models.Block{text("You are Claude Code."), text("Be careful.")}},
		{Role: models.RoleUser, Blocks: []models.Block{text("<system-reminder>ctx</system-reminder>"), text("read a"), {Kind: models.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="}}},
		{Role: models.RoleAssistant, Blocks: []models.Block{
			{Kind: models.BlockThinking, Text: "hmm"}, {Kind: models.BlockThinking}, text("ok"),
			{Kind: models.BlockToolCall, ID: "toolu_1", Name: "Read", Arguments: `{"path":"a"}`},
			{Kind: models.BlockToolCall, ID: "toolu_2", Name: "Bash", Arguments: `{}`},
		}},
		{Role: models.RoleTool, ToolCallID: "toolu_1", Blocks: []models.Block{text("A")}},
		{Role: models.RoleTool, ToolCallID: "toolu_2", IsError: true, Blocks: []models.Block{text("exit 1"), {Kind: models.BlockMedia, Text: "image"}}},
		{Role: models.RoleUser, Blocks: []models.Block{text("go on")}},
		{Role: models.RoleAssistant, Blocks: []models.Block{text("plain")}},
	}, req.Messages)
}

func TestToRequestChoicesAndThinking(t *testing.T) {
	tools := `"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]`
	cases := []struct {
		extra    string
		choice   models.ToolChoice
		single   bool
		thinking bool
	}{
		{``, models.ToolChoice{Mode: models.ChoiceAuto}, false, false},
		{`,"tool_choice":{"type":"auto"}`, models.ToolChoice{Mode: models.ChoiceAuto}, false, false},
		{`,"tool_choice":{"type":"none"}`, models.ToolChoice{Mode: models.ChoiceNone}, false, false},
		{`,"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}`, models.ToolChoice{Mode: models.ChoiceFunction, Name: "get_weather"}, true, false},
		{`,"thinking":{"type":"enabled","budget_tokens":1024}`, models.ToolChoice{Mode: models.ChoiceAuto}, false, true},
		{`,"thinking":{"type":"disabled"}`, models.ToolChoice{Mode: models.ChoiceAuto}, false, false},
		{`,"thinking":{"type":"between_tools"}`, models.ToolChoice{Mode: models.ChoiceAuto}, false, true},
	}
	for _, tc := range cases {
		req, err := ToRequest(decode(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],`+tools+tc.extra+`}`))
		require.NoError(t, err, tc.extra)
		assert.Equal(t, tc.choice, req.Choice, tc.extra)
		assert.Equal(t, tc.single, req.SingleCall, tc.extra)
		assert.Equal(t, tc.thinking, req.Thinking, tc.extra)
		assert.Equal(t, tc.thinking, req.ShowThinking, tc.extra)
	}
}

func TestToRequestThinkingDisplayOmitted(t *testing.T) {
	req, err := ToRequest(decode(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"thinking":{"type":"adaptive","display":"omitted"}}`))
	require.NoError(t, err)
	assert.True(t, req.Thinking, "the model still reasons")
	assert.False(t, req.ShowThinking, "but the client does not see it")
}

func TestToRequestSystemMessages(t *testing.T) {
	// Claude Code 2.1 sends system messages among the others.
	r, err := ToRequest(decode(t, `{"model":"m","system":"top","messages":[
	  {"role":"user","content":"hi"},
	  {"role":"system","content":[{"type":"text","text":"# Environment\ncwd: /w"}]},
	  {"role":"assistant","content":"hello"},
	  {"role":"system","content":"be brief"}]}`))
	require.NoError(t, err)
	assert.Equal(t, []models.Message{
		{Role: models.RoleSystem, Blocks: []models.Block{{Kind: models.BlockText, Text: "top"}}},
		{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockText, Text: "hi"}}},
		{Role: models.RoleSystem, Blocks: []models.Block{{Kind: models.BlockText, Text: "# Environment\ncwd: /w"}}},
		{Role: models.RoleAssistant, Blocks: []models.Block{{Kind: models.BlockText, Text: "hello"}}},
		{Role: models.RoleSystem, Blocks: []models.Block{{Kind: models.BlockText, Text: "be brief"}}},
	}, r.Messages)
}

func TestToRequestErrors(t *testing.T) {
	cases := []struct{ body, param string }{
		{`{"model":"m","messages":[]}`, "messages"},
		{`{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{`{"model":"m","messages":[{"role":"tool","content":"hi"}]}`, "messages.0.role"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, "tools.0.type"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"a b","input_schema":{}}]}`, "tools.0.name"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"a","input_schema":"x"}]}`, "tools.0.input_schema"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"any"}}`, "tool_choice.type"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"sometimes"}}`, "tool_choice.type"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"a"}],"tool_choice":{"type":"tool"}}`, "tool_choice.name"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"a"}],"tool_choice":{"type":"tool","name":"b"}}`, "tool_choice.name"},
		{`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{}}]}]}`, "messages.0.content.0.name"},
		{`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"a","input":[1]}]}]}`, "messages.0.content.0.input"},
		{`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t"}]}]}`, "messages.0.content.0.type"},
		// After an mcp_tool_result, a block's place is still its index in the turn.
		{`{"model":"m","messages":[{"role":"assistant","content":[{"type":"mcp_tool_use","id":"m","name":"a","server_name":"s","input":{}},{"type":"mcp_tool_result","tool_use_id":"m","content":"ok"},{"type":"tool_use","id":"t","input":{}}]}]}`, "messages.0.content.2.name"},
		// Images: a source is required, and an inline one must be an image a model takes, with data.
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image"}]}]}`, "messages.0.content.1.source"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"Qk0="}}]}]}`, "messages.0.content.0.source"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"b"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":""}}]}]}]}`, "messages.0.content.1.content.1.source"},
		{`{"model":"m","system":[{"type":"image","source":{"type":"base64","media_type":"text/plain","data":"eA=="}}],"messages":[{"role":"user","content":"hi"}]}`, "system.0.source"},
		// A tool reference names its tool; Anthropic's own tool search is a server tool.
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"tool_reference"}]}]}]}`, "messages.0.content.0.content.0.tool_name"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}]}`, "tools.0.type"},
	}
	for _, tc := range cases {
		_, err := ToRequest(decode(t, tc.body))
		var apiErr *models.Error
		require.True(t, errors.As(err, &apiErr), "%s: %v", tc.body, err)
		assert.Equal(t, 400, apiErr.Status, tc.body)
		assert.Equal(t, models.KindInvalidRequest, apiErr.Kind, tc.body)
		assert.Equal(t, tc.param, apiErr.Param, tc.body)
	}
}

// Inline images, in a user turn and in a tool result, go along; one given
// by URL is a marker.
func TestToRequestImages(t *testing.T) {
	req, err := ToRequest(decode(t, `{"model":"m","max_tokens":10,"messages":[
	  {"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]},
	  {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.png"}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},{"type":"text","text":"and?"}]}]}`))
	require.NoError(t, err)
	assert.Equal(t, []models.Message{
		{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockImage, MediaType: "image/jpeg", Data: "/9j/"}, {Kind: models.BlockMedia, Text: "image"}}},
		{Role: models.RoleAssistant, Blocks: []models.Block{{Kind: models.BlockToolCall, ID: "t1", Name: "Read", Arguments: `{"file_path":"a.png"}`}}},
		{Role: models.RoleTool, ToolCallID: "t1", Blocks: []models.Block{{Kind: models.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="}}},
		{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockText, Text: "and?"}}},
	}, req.Messages)
}

func TestContentDecoding(t *testing.T) {
	var c Content
	require.NoError(t, json.Unmarshal([]byte(`"hi"`), &c))
	assert.Equal(t, Content{{Type: "text", Text: "hi"}}, c)
	require.NoError(t, json.Unmarshal([]byte(`null`), &c))
	assert.Nil(t, c)
	require.NoError(t, json.Unmarshal([]byte(`{"type":"text","text":"solo"}`), &c))
	assert.Equal(t, Content{{Type: "text", Text: "solo"}}, c)
	for _, bad := range []string{`42`, `true`, `[42]`} {
		assert.Error(t, json.Unmarshal([]byte(bad), &c), bad)
	}
}

func TestErrorBodyOf(t *testing.T) {
	cases := []struct {
		kind models.ErrorKind
		typ  string
	}{
		{models.KindInvalidRequest, "invalid_request_error"},
		{models.KindAuthentication, "authentication_error"},
		{models.KindPermission, "permission_error"},
		{models.KindNotFound, "not_found_error"},
		{models.KindTooLarge, "request_too_large"},
		{models.KindRateLimit, "rate_limit_error"},
		{models.KindAPI, "api_error"},
		{models.KindOverloaded, "overloaded_error"},
	}
	for _, tc := range cases {
		b, err := json.Marshal(ErrorBodyOf(&models.Error{Kind: tc.kind, Message: "m"}))
		require.NoError(t, err)
		assert.JSONEq(t, `{"type":"error","error":{"type":"`+tc.typ+`","message":"m"}}`, string(b))
	}
	assert.Equal(t, "max_tokens: must be at least 1", ErrorBodyOf(models.InvalidRequest("max_tokens", "must be at least 1")).Error.Message, "the field leads")
	assert.Equal(t, "max_tokens is 0", ErrorBodyOf(models.InvalidRequest("max_tokens", "max_tokens is 0")).Error.Message, "not twice")
}

// Claude Code's tool search, as 2.1.332 sends it: the placeholder and the
// found tool deferred, and the search's result a tool_reference.
func TestToRequestToolSearch(t *testing.T) {
	req, err := ToRequest(decode(t, `{"model":"m","max_tokens":100,
	  "tools":[{"name":"ToolSearch","input_schema":{"type":"object"}},
	    {"name":"DeferredToolPlaceholder","description":"never call this tool","input_schema":{"type":"object","properties":{}},"defer_loading":true},
	    {"name":"mcp__everything__echo","input_schema":{"type":"object"},"defer_loading":true}],
	  "messages":[{"role":"user","content":"echo hi"},
	    {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ToolSearch","input":{"query":"select:mcp__everything__echo","max_results":5}}]},
	    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"mcp__everything__echo"}]},
	      {"type":"text","text":"Tool loaded.","cache_control":{"type":"ephemeral"}}]}]}`))
	require.NoError(t, err)
	var deferred []string
	for _, tool := range req.Tools {
		if tool.Deferred {
			deferred = append(deferred, tool.Name)
		}
	}
	assert.Equal(t, []string{"DeferredToolPlaceholder", "mcp__everything__echo"}, deferred)
	require.Len(t, req.Messages, 4)
	assert.Equal(t, models.Message{Role: models.RoleTool, ToolCallID: "toolu_1",
		Blocks: []models.Block{{Kind: models.BlockToolReference, Name: "mcp__everything__echo"}}}, req.Messages[2])
	assert.Equal(t, "Tool loaded.", req.Messages[3].Text())
}

// output_config.format (and the beta's output_format) becomes a system
// instruction after the request's system: the upstream has no structured
// output, and the AI SDK's Output.object sends its schema only there.
func TestToRequestOutputFormat(t *testing.T) {
	schema := `{"type":"object","properties":{"celsius":{"type":"number"}},"required":["celsius"]}`
	for _, field := range []string{`"output_config":{"effort":"high","format":{"type":"json_schema","schema":` + schema + `}}`, `"output_format":{"type":"json_schema","schema":` + schema + `}`} {
		r, err := ToRequest(decode(t, `{"model":"m","system":"be brief","messages":[{"role":"user","content":"weather?"}],`+field+`}`))
		require.NoError(t, err, field)
		require.Len(t, r.Messages, 3, field)
		assert.Equal(t, "be brief", r.Messages[0].Text())
		assert.Equal(t, models.RoleSystem, r.Messages[1].Role)
		assert.Equal(t, models.JSONSchemaNote([]byte(schema), "", ""), r.Messages[1].Text(), field)
		assert.Equal(t, "weather?", r.Messages[2].Text())
	}
	for _, field := range []string{`"output_config":{"effort":"high"}`, `"output_config":null`, `"output_config":{"format":null}`} {
		r, err := ToRequest(decode(t, `{"model":"m","messages":[{"role":"user","content":"weather?"}],`+field+`}`))
		require.NoError(t, err, field)
		assert.Len(t, r.Messages, 1, "no format adds nothing: %s", field)
	}
	bad := []struct{ field, param string }{
		{`"output_config":{"format":{"type":"xml"}}`, "output_config.format.type"},
		{`"output_config":{"format":{"type":"json_schema"}}`, "output_config.format.schema"},
		{`"output_format":{"type":"json_schema","schema":"x"}`, "output_format.schema"},
		{`"output_config":{"format":"json"}`, "output_config.format"},
	}
	for _, tc := range bad {
		_, err := ToRequest(decode(t, `{"model":"m","messages":[{"role":"user","content":"weather?"}],`+tc.field+`}`))
		var apiErr *models.Error
		require.True(t, errors.As(err, &apiErr), "%s: %v", tc.field, err)
		assert.Equal(t, 400, apiErr.Status, tc.field)
		assert.Equal(t, tc.param, apiErr.Param, tc.field)
	}
}
