package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"cursor2api/models"
	"cursor2api/utils"
)

// ModelName is the model the request names.
func (r *MessagesRequest) ModelName() string { return r.Model }

// Request converts the request (ToRequest).
func (r *MessagesRequest) Request() (*models.Request, error) { return ToRequest(r) }

// ToRequest converts a Messages request into the core's request, checking
// what only this wire format can get wrong. Its errors are *models.Error
// with an Anthropic field path; the model name is not resolved.
func ToRequest(req *MessagesRequest) (*models.Request, error) {
	// Thinking counts against max_tokens, as Anthropic counts it.
	bound, err := models.OutputBound("max_tokens", req.MaxTokens)
	if err != nil {
		return nil, err
	}
	out := &models.Request{Model: req.Model, Stream: req.Stream, IncludeUsage: true, MaxOutputTokens: bound, StopSequences: req.StopSequences, Session: SessionOf(req.Metadata)}
	tools, err := toTools(req.Tools)
	if err != nil {
		return nil, err
	}
	out.Tools = tools
	if out.MCPServers, err = mcpServers(req.MCPServers); err != nil {
		return nil, err
	}
	if out.Choice, out.SingleCall, err = toToolChoice(req.ToolChoice, tools); err != nil {
		return nil, err
	}
	// enabled, adaptive, between_tools and whatever comes next all ask for
	// reasoning; only disabled does not. With display "omitted" the model
	// still reasons, and the answer leaves the thinking out altogether (the
	// gateway has no signature that would be worth an empty block).
	if req.Thinking != nil && req.Thinking.Type != "" && req.Thinking.Type != "disabled" {
		out.Thinking = true
		out.ShowThinking = req.Thinking.Display != "omitted"
	}
	if len(req.System) > 0 {
		blocks, err := contentBlocks(req.System, func() string { return "system" }, 0)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, models.Message{Role: models.RoleSystem, Blocks: blocks})
	}
	note, err := formatNote(req)
	if err != nil {
		return nil, err
	}
	if note != "" {
		out.Messages = append(out.Messages, models.Message{Role: models.RoleSystem, Blocks: []models.Block{{Kind: models.BlockText, Text: note}}})
	}
	if len(req.Messages) == 0 {
		return nil, models.InvalidRequest("messages", "messages is empty: send at least one user message")
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "user":
			msgs, err := userMessages(i, m.Content)
			if err != nil {
				return nil, err
			}
			out.Messages = append(out.Messages, msgs...)
		case "assistant":
			msgs, err := assistantMessages(i, m.Content)
			if err != nil {
				return nil, err
			}
			out.Messages = append(out.Messages, msgs...)
		case "system":
			// Instructions among the messages (Claude Code 2.1 sends
			// its environment so); the upstream has one system prompt,
			// and the core gathers them there.
			blocks, err := contentBlocks(m.Content, contentParam(i), 0)
			if err != nil {
				return nil, err
			}
			out.Messages = append(out.Messages, models.Message{Role: models.RoleSystem, Blocks: blocks})
		default:
			return nil, models.InvalidRequest(fmt.Sprintf("messages.%d.role", i), "messages.%d.role %q is not supported: use \"user\", \"assistant\" or \"system\"", i, utils.Clip(m.Role, utils.QuoteLen))
		}
	}
	return out, nil
}

// toTools converts the custom tools. A server tool (any type but custom)
// runs on Anthropic's side, which the gateway cannot do: it is refused
// rather than silently dropped, so that the client knows the model never
// had it.
func toTools(in []Tool) ([]models.Tool, error) {
	var tools []models.Tool
	for i, t := range in {
		if strings.HasPrefix(t.Type, "tool_search_tool_") {
			return nil, models.InvalidRequest(fmt.Sprintf("tools.%d.type", i),
				"tools.%d is Anthropic's server-side tool search %q, which only Anthropic's own API can run: search on the client's side instead (a custom tool whose tool_result holds tool_reference blocks, as Claude Code's ToolSearch does); tools with defer_loading are served either way", i, t.Type)
		}
		if t.Type != "" && t.Type != "custom" {
			return nil, models.InvalidRequest(fmt.Sprintf("tools.%d.type", i),
				"tools.%d is the server tool %q, which only Anthropic's own API can run: this gateway serves custom tools (name, description, input_schema) only; remove it from tools", i, t.Type)
		}
		tools = append(tools, models.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema, Deferred: t.DeferLoading})
	}
	err := models.ValidateTools(tools, func(i int, field string) string {
		if field == "parameters" {
			field = "input_schema"
		}
		return fmt.Sprintf("tools.%d.%s", i, field)
	})
	return tools, err
}

// toToolChoice reads tool_choice (absent: auto) and its
// disable_parallel_tool_use.
func toToolChoice(tc *ToolChoice, tools []models.Tool) (models.ToolChoice, bool, error) {
	if tc == nil {
		return models.ToolChoice{Mode: models.ChoiceAuto}, false, nil
	}
	single := tc.DisableParallelToolUse
	switch tc.Type {
	case "auto", "":
		return models.ToolChoice{Mode: models.ChoiceAuto}, single, nil
	case "none":
		return models.ToolChoice{Mode: models.ChoiceNone}, single, nil
	case "any":
		if len(tools) == 0 {
			return models.ToolChoice{}, false, models.InvalidRequest("tool_choice.type", "tool_choice.type \"any\" needs at least one tool in tools")
		}
		return models.ToolChoice{Mode: models.ChoiceRequired}, single, nil
	case "tool":
		if tc.Name == "" {
			return models.ToolChoice{}, false, models.InvalidRequest("tool_choice.name", "tool_choice.name is required when tool_choice.type is \"tool\"")
		}
		if !models.HasTool(tools, tc.Name) {
			return models.ToolChoice{}, false, models.InvalidRequest("tool_choice.name", "tool_choice.name %q is not the name of a tool in tools", utils.Clip(tc.Name, utils.QuoteLen))
		}
		return models.ToolChoice{Mode: models.ChoiceFunction, Name: tc.Name}, single, nil
	}
	return models.ToolChoice{}, false, models.InvalidRequest("tool_choice.type", "tool_choice.type %q is not supported: use \"auto\", \"any\", \"tool\" or \"none\"", utils.Clip(tc.Type, utils.QuoteLen))
}

// contentBlocks converts a system prompt, user turn or tool result: text,
// inline images, and a marker for what the upstream cannot take (documents,
// images by URL or file). param and offset place an error; param is called
// only then.
func contentBlocks(c Content, param func() string, offset int) ([]models.Block, error) {
	blocks := make([]models.Block, 0, len(c))
	for j, b := range c {
		switch b.Type {
		case "text", "":
			blocks = append(blocks, models.Block{Kind: models.BlockText, Text: b.Text})
		case "thinking", "redacted_thinking":
			blocks = append(blocks, models.Block{Kind: models.BlockThinking, Text: b.Thinking})
		case "tool_reference":
			if b.ToolName == "" {
				at := fmt.Sprintf("%s.%d.tool_name", param(), offset+j)
				return nil, models.InvalidRequest(at, "%s is required: a tool_reference block names the tool it loads", at)
			}
			blocks = append(blocks, models.Block{Kind: models.BlockToolReference, Name: b.ToolName})
		case "image":
			at := fmt.Sprintf("%s.%d.source", param(), offset+j)
			switch {
			case b.Source == nil:
				return nil, models.InvalidRequest(at, "%s is required: an image block needs its source", at)
			case b.Source.Type == "base64":
				img, err := models.ImageBlock(b.Source.MediaType, b.Source.Data)
				if err != nil {
					return nil, models.InvalidRequest(at, "%s: %v", at, err)
				}
				blocks = append(blocks, img)
			default:
				blocks = append(blocks, models.Block{Kind: models.BlockMedia, Text: b.Type})
			}
		default:
			blocks = append(blocks, models.Block{Kind: models.BlockMedia, Text: b.Type})
		}
	}
	return blocks, nil
}

// contentParam is the param of messages[i]'s content.
func contentParam(i int) func() string {
	return func() string { return fmt.Sprintf("messages.%d.content", i) }
}

// userMessages splits user turn i into the core's messages: each
// tool_result becomes a RoleTool message answering its call, and the
// other blocks a user message, in their order.
func userMessages(i int, c Content) ([]models.Message, error) {
	var out []models.Message
	param := contentParam(i)
	start := 0 // of the blocks not yet in a message
	flush := func(end int) error {
		if end > start {
			blocks, err := contentBlocks(c[start:end], param, start)
			if err != nil {
				return err
			}
			out = append(out, models.Message{Role: models.RoleUser, Blocks: blocks})
		}
		return nil
	}
	for j, b := range c {
		if b.Type != "tool_result" {
			continue
		}
		if err := flush(j); err != nil {
			return nil, err
		}
		start = j + 1
		blocks, err := contentBlocks(b.Content, func() string { return fmt.Sprintf("%s.%d.content", param(), j) }, 0)
		if err != nil {
			return nil, err
		}
		if len(blocks) == 0 {
			blocks = []models.Block{{Kind: models.BlockText}}
		}
		out = append(out, models.Message{Role: models.RoleTool, ToolCallID: b.ToolUseID, IsError: b.IsError, Blocks: blocks})
	}
	if err := flush(len(c)); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		out = append(out, models.Message{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockText}}})
	}
	return out, nil
}

// assistantMessage converts an assistant turn, the blocks of messages[i]
// from index offset: text, thinking (history the core never replays as
// text) and tool_use calls.
func assistantMessage(i, offset int, c Content) (models.Message, error) {
	msg := models.Message{Role: models.RoleAssistant}
	for k, b := range c {
		j := offset + k
		switch b.Type {
		case "tool_use":
			if b.Name == "" {
				return models.Message{}, models.InvalidRequest(fmt.Sprintf("messages.%d.content.%d.name", i, j), "messages.%d.content.%d: a tool_use block needs its name", i, j)
			}
			args := strings.TrimSpace(string(b.Input))
			if args == "" || args == "null" {
				args = "{}"
			} else if !bytes.HasPrefix([]byte(args), []byte("{")) {
				return models.Message{}, models.InvalidRequest(fmt.Sprintf("messages.%d.content.%d.input", i, j), "messages.%d.content.%d.input must be a JSON object", i, j)
			}
			msg.Blocks = append(msg.Blocks, models.Block{Kind: models.BlockToolCall, ID: b.ID, Name: b.Name, Arguments: args})
		case "mcp_tool_use":
			msg.Blocks = append(msg.Blocks, mcpCall(b))
		case "tool_result":
			return models.Message{}, models.InvalidRequest(fmt.Sprintf("messages.%d.content.%d.type", i, j), "messages.%d.content.%d: tool_result blocks belong in a user message", i, j)
		default:
			blocks, err := contentBlocks(Content{b}, contentParam(i), j)
			if err != nil {
				return models.Message{}, err
			}
			msg.Blocks = append(msg.Blocks, blocks...)
		}
	}
	return msg, nil
}

// formatNote is the system instruction of output_config.format (or the
// beta's output_format), or "" without one. The upstream has no
// structured output, so the schema becomes a constraint in the prompt, in
// the words every door uses.
func formatNote(req *MessagesRequest) (string, error) {
	param, raw := "output_format", bytes.TrimSpace(req.OutputFormat)
	if f := gjson.GetBytes(req.OutputConfig, "format"); f.Exists() && f.Type != gjson.Null {
		param, raw = "output_config.format", []byte(f.Raw)
	}
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var f struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", models.InvalidRequest(param, `%s must be an object like {"type":"json_schema","schema":{...}}`, param)
	}
	if f.Type != "json_schema" {
		return "", models.InvalidRequest(param+".type", `%s.type %q is not supported: use "json_schema"`, param, utils.Clip(f.Type, utils.QuoteLen))
	}
	schema := bytes.TrimSpace(f.Schema)
	if len(schema) == 0 || schema[0] != '{' {
		return "", models.InvalidRequest(param+".schema", "%s.schema must be a JSON Schema object", param)
	}
	return models.JSONSchemaNote(schema, "", ""), nil
}
