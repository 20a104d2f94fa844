package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"cursor2api/models"
	"cursor2api/utils"
)

// ModelName is the model the request names.
func (r *ChatRequest) ModelName() string { return r.Model }

// Request converts the request (ToRequest).
func (r *ChatRequest) Request() (*models.Request, error) { return ToRequest(r) }

// ToRequest converts a chat-completions request into the core's request,
// checking what only this wire format can get wrong: tool types, the
// tool_choice shape, and message roles. Its errors are *models.Error whose
// Param is an OpenAI field path.
func ToRequest(req *ChatRequest) (*models.Request, error) {
	out := &models.Request{
		Model:        req.Model,
		Stream:       req.Stream,
		IncludeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
		SingleCall:   req.ParallelToolCalls != nil && !*req.ParallelToolCalls,
		Session:      String(req.PromptCacheKey),
	}
	for i, t := range req.Tools {
		if t.Type != "function" && t.Type != "" {
			return nil, models.InvalidRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d].type is %q: only \"function\" tools are supported", i, utils.Clip(t.Type, utils.QuoteLen))
		}
		out.Tools = append(out.Tools, models.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	if err := models.ValidateTools(out.Tools, func(i int, field string) string {
		return fmt.Sprintf("tools[%d].function.%s", i, field)
	}); err != nil {
		return nil, err
	}
	var err error
	if out.Choice, err = toToolChoice(req.ToolChoice, out.Tools); err != nil {
		return nil, err
	}
	if out.MaxOutputTokens, err = maxOutputTokens(req); err != nil {
		return nil, err
	}
	if out.StopSequences, err = stopSequences(req.Stop); err != nil {
		return nil, err
	}
	for i, m := range req.Messages {
		blocks, err := ContentBlocks(m.Content, func() string { return fmt.Sprintf("messages[%d].content", i) }, "image_url.url")
		if err != nil {
			return nil, err
		}
		msg, err := toMessage(m, blocks)
		if err != nil {
			return nil, models.InvalidRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role %q is not supported: use system, developer, user, assistant or tool", i, utils.Clip(m.Role, utils.QuoteLen))
		}
		out.Messages = append(out.Messages, msg)
	}
	note, err := formatNote(req.ResponseFormat)
	if err != nil {
		return nil, err
	}
	if note != "" {
		// After the client's own system messages, as the Responses door
		// puts text.format's note after its instructions.
		at := 0
		for at < len(out.Messages) && out.Messages[at].Role == models.RoleSystem {
			at++
		}
		out.Messages = slices.Insert(out.Messages, at, models.Message{Role: models.RoleSystem, Blocks: []models.Block{{Kind: models.BlockText, Text: note}}})
	}
	return out, nil
}

// formatNote is the system instruction response_format asks for, or ""
// for plain text. The upstream has no structured output, so a schema
// becomes a constraint in the prompt, in the words every door uses.
func formatNote(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var f struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", models.InvalidRequest("response_format", `response_format must be an object like {"type":"json_schema","json_schema":{"name":"...","schema":{...}}}`)
	}
	format := Format{Type: f.Type}
	if f.JSONSchema != nil {
		format.Schema, format.Name, format.Description = f.JSONSchema.Schema, f.JSONSchema.Name, f.JSONSchema.Description
	}
	return FormatNote(format, "response_format", "response_format.json_schema.schema")
}

// Format is an OpenAI answer format: text, json_object, or json_schema
// with its schema, as response_format and the Responses text.format say it.
type Format struct {
	Type              string
	Schema            json.RawMessage
	Name, Description string
}

// FormatNote is the system instruction of f, or "" for plain text; its
// errors name param (the format's field) and schemaParam.
func FormatNote(f Format, param, schemaParam string) (string, error) {
	switch f.Type {
	case "", "text":
		return "", nil
	case "json_object":
		return models.JSONObjectNote, nil
	case "json_schema":
		schema := bytes.TrimSpace(f.Schema)
		if len(schema) == 0 || schema[0] != '{' {
			return "", models.InvalidRequest(schemaParam, "%s must be a JSON Schema object", schemaParam)
		}
		return models.JSONSchemaNote(schema, f.Name, f.Description), nil
	}
	return "", models.InvalidRequest(param+".type", `%s.type %q is not supported: use "text", "json_object" or "json_schema"`, param, utils.Clip(f.Type, utils.QuoteLen))
}

// maxOutputTokens reads max_completion_tokens, else the older max_tokens
// (0: neither).
func maxOutputTokens(req *ChatRequest) (int, error) {
	if req.MaxCompletionTokens != nil {
		return models.OutputBound("max_completion_tokens", req.MaxCompletionTokens)
	}
	return models.OutputBound("max_tokens", req.MaxTokens)
}

// stopSequences reads stop: absent or null, a string, or an array of
// strings.
func stopSequences(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many, nil
	}
	return nil, models.InvalidRequest("stop", "stop must be a string or an array of strings")
}

// toMessage converts one message of the history, its content read into
// blocks; its error means an unknown role.
func toMessage(m Message, blocks []models.Block) (models.Message, error) {
	switch m.Role {
	case "system", "developer":
		return models.Message{Role: models.RoleSystem, Blocks: blocks}, nil
	case "user":
		return models.Message{Role: models.RoleUser, Blocks: blocks}, nil
	case "assistant":
		for _, tc := range m.ToolCalls {
			blocks = append(blocks, models.Block{Kind: models.BlockToolCall, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		return models.Message{Role: models.RoleAssistant, Blocks: blocks}, nil
	case "tool":
		return models.Message{Role: models.RoleTool, Blocks: blocks, ToolCallID: m.ToolCallID, ToolName: m.Name}, nil
	case "function":
		// The legacy form names its function and has no call id to look
		// the name up by.
		return models.Message{Role: models.RoleTool, Blocks: blocks, ToolName: m.Name}, nil
	}
	return models.Message{}, fmt.Errorf("unknown role %q", m.Role)
}

// ContentBlocks is content's text and images in the client's order, then a
// marker for each part without text. Only data: URL images go along: the
// gateway fetches nothing for a client. param and urlField name the part in
// a malformed image's error; param is called only then.
func ContentBlocks(c Content, param func() string, urlField string) ([]models.Block, error) {
	blocks := make([]models.Block, 0, 1+2*len(c.Images)+len(c.NonText))
	pos := 0 // of the text not yet in a block
	for _, img := range c.Images {
		if at := min(max(img.At, pos), len(c.Text)); at > pos {
			blocks = append(blocks, models.Block{Kind: models.BlockText, Text: afterImage(c.Text[pos:at], pos)})
			pos = at
		}
		if !models.IsDataURL(img.URL) {
			blocks = append(blocks, models.Block{Kind: models.BlockMedia, Text: img.Type})
			continue
		}
		b, err := models.ImageFromDataURL(img.URL)
		if err != nil {
			at := fmt.Sprintf("%s[%d].%s", param(), img.Part, urlField)
			return nil, models.InvalidRequest(at, "%s: %v", at, err)
		}
		blocks = append(blocks, b)
	}
	if rest := afterImage(c.Text[pos:], pos); rest != "" || len(blocks) == 0 {
		blocks = append(blocks, models.Block{Kind: models.BlockText, Text: rest})
	}
	for _, t := range c.NonText {
		blocks = append(blocks, models.Block{Kind: models.BlockMedia, Text: t})
	}
	return blocks, nil
}

// afterImage is text that follows an image at pos of the content's text
// without the "\n" that joined it to the text parts before the image.
func afterImage(text string, pos int) string {
	if pos > 0 {
		return strings.TrimPrefix(text, "\n")
	}
	return text
}

// toToolChoice reads tool_choice: absent or null (auto), "auto", "none",
// "required" (also "any"), or {"type":"function","function":{"name":...}}
// naming a declared tool.
func toToolChoice(raw json.RawMessage, tools []models.Tool) (models.ToolChoice, error) {
	const objectForm = `{"type":"function","function":{"name":"..."}}`
	if choice, ok, err := StringToolChoice(raw, tools, objectForm); ok {
		return choice, err
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
		Name string `json:"name"` // the Anthropic-like short form
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return models.ToolChoice{}, models.InvalidRequest("tool_choice", "tool_choice must be a string or an object like %s", objectForm)
	}
	if obj.Type != "function" && obj.Type != "tool" {
		return models.ToolChoice{}, models.InvalidRequest("tool_choice.type", "tool_choice.type %q is not supported: use \"function\"", utils.Clip(obj.Type, utils.QuoteLen))
	}
	name := obj.Function.Name
	if name == "" {
		name = obj.Name
	}
	return NamedToolChoice(name, tools, "tool_choice.function.name")
}

// StringToolChoice reads the tool_choice forms the OpenAI formats share:
// absent, null, "auto", "none", "required" (and Anthropic's "any"). ok is
// false for an object, which each format reads itself; objectForm is shown
// in the error for an unknown string.
func StringToolChoice(raw json.RawMessage, tools []models.Tool, objectForm string) (choice models.ToolChoice, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return models.ToolChoice{Mode: models.ChoiceAuto}, true, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return models.ToolChoice{}, false, nil
	}
	switch s {
	case "auto":
		return models.ToolChoice{Mode: models.ChoiceAuto}, true, nil
	case "none":
		return models.ToolChoice{Mode: models.ChoiceNone}, true, nil
	case "required", "any":
		if len(tools) == 0 {
			return models.ToolChoice{}, true, models.InvalidRequest("tool_choice", "tool_choice %q needs at least one function in tools", s)
		}
		return models.ToolChoice{Mode: models.ChoiceRequired}, true, nil
	}
	return models.ToolChoice{}, true, models.InvalidRequest("tool_choice", "tool_choice %q is not supported: use \"auto\", \"none\", \"required\" or %s", utils.Clip(s, utils.QuoteLen), objectForm)
}

// NamedToolChoice is the choice of the declared function name, which the
// request gave in param.
func NamedToolChoice(name string, tools []models.Tool, param string) (models.ToolChoice, error) {
	if name == "" {
		return models.ToolChoice{}, models.InvalidRequest(param, "%s is required", param)
	}
	if !models.HasTool(tools, name) {
		return models.ToolChoice{}, models.InvalidRequest(param, "tool_choice names function %q, which is not in tools", utils.Clip(name, utils.QuoteLen))
	}
	return models.ToolChoice{Mode: models.ChoiceFunction, Name: name}, nil
}

// String is raw when it is a JSON string, else "": for a field the gateway
// reads only as a hint, such as prompt_cache_key, where a client's odd
// value must not fail the request.
func String(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
