package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"cursor2api/models"
	"cursor2api/utils"
)

// ToRequest converts a generateContent request for model into the core's
// request, checking what only this wire format can get wrong. Its errors
// are *models.Error with a Gemini field path; the model name is not resolved.
func ToRequest(req *GenerateContentRequest, model string, stream bool) (*models.Request, error) {
	out := &models.Request{Model: model, Stream: stream, IncludeUsage: true}
	tools, err := toTools(req.Tools)
	if err != nil {
		return nil, err
	}
	if out.Choice, out.Tools, err = toToolChoice(req.ToolConfig, tools); err != nil {
		return nil, err
	}
	if err := generationConfig(req.GenerationConfig, model, out); err != nil {
		return nil, err
	}
	if req.SystemInstruction != nil {
		blocks, err := partBlocks(req.SystemInstruction.Parts, "systemInstruction.parts")
		if err != nil {
			return nil, err
		}
		if len(blocks) > 0 {
			out.Messages = append(out.Messages, models.Message{Role: models.RoleSystem, Blocks: blocks})
		}
	}
	if note, err := formatNote(req.GenerationConfig); err != nil {
		return nil, err
	} else if note != "" {
		out.Messages = append(out.Messages, models.Message{Role: models.RoleSystem, Blocks: []models.Block{{Kind: models.BlockText, Text: note}}})
	}
	if len(req.Contents) == 0 {
		return nil, models.InvalidRequest("contents", "contents is empty: send at least one user content")
	}
	msgs, err := contents(req.Contents)
	if err != nil {
		return nil, err
	}
	out.Messages = append(out.Messages, msgs...)
	return out, nil
}

// generationConfig reads the output bound, the stop sequences and the
// thinking settings.
func generationConfig(gc *GenerationConfig, model string, out *models.Request) error {
	// A -thinking model shows its thoughts: the name asks for them.
	out.ShowThinking = strings.HasSuffix(model, models.ThinkingSuffix)
	if gc == nil {
		return nil
	}
	var err error
	if out.MaxOutputTokens, err = models.OutputBound("generationConfig.maxOutputTokens", gc.MaxOutputTokens); err != nil {
		return err
	}
	out.StopSequences = gc.StopSequences
	if tc := gc.ThinkingConfig; tc != nil {
		// A budget above zero or any level asks a base model to think, as
		// Anthropic's thinking: enabled does; includeThoughts only asks to
		// see the thoughts of a model that thinks.
		level := strings.ToUpper(tc.ThinkingLevel)
		out.Thinking = tc.ThinkingBudget != nil && *tc.ThinkingBudget > 0 || level != "" && level != "THINKING_LEVEL_UNSPECIFIED"
		out.ShowThinking = out.ShowThinking || tc.IncludeThoughts
	}
	return nil
}

// formatNote is the system instruction JSON mode asks for, or "".
func formatNote(gc *GenerationConfig) (string, error) {
	if gc == nil || !strings.EqualFold(strings.TrimSpace(gc.ResponseMIMEType), "application/json") {
		return "", nil
	}
	param, schema := "generationConfig.responseJsonSchema", gc.ResponseJSONSchema
	if len(bytes.TrimSpace(schema)) == 0 {
		param, schema = "generationConfig.responseSchema", gc.ResponseSchema
	}
	schema = JSONSchema(schema)
	if schema == nil {
		return models.JSONObjectNote, nil
	}
	if schema[0] != '{' && !bytes.Equal(schema, []byte("true")) {
		return "", models.InvalidRequest(param, "%s must be a schema object", param)
	}
	return models.JSONSchemaNote(schema, "", ""), nil
}

// toTools converts the function declarations of every tools entry. A
// built-in tool (googleSearch, codeExecution, ...) runs on Google's side,
// which the gateway cannot do: it is refused rather than silently dropped.
func toTools(in []Tool) ([]models.Tool, error) {
	var tools []models.Tool
	var paths []string
	for i, t := range in {
		if len(t.Other) > 0 {
			param := fmt.Sprintf("tools[%d].%s", i, t.Other[0])
			return nil, models.InvalidRequest(param, "%s is a built-in tool that only Google's own API can run: this gateway serves functionDeclarations only; remove it from tools", utils.Clip(param, utils.QuoteLen))
		}
		for j, d := range t.FunctionDeclarations {
			path := fmt.Sprintf("tools[%d].functionDeclarations[%d]", i, j)
			params := d.ParametersJSONSchema
			if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
				params = d.Parameters
			} else if len(bytes.TrimSpace(d.Parameters)) > 0 && !bytes.Equal(bytes.TrimSpace(d.Parameters), []byte("null")) {
				return nil, models.InvalidRequest(path, "%s has both parameters and parametersJsonSchema: send one", path)
			}
			tools = append(tools, models.Tool{Name: d.Name, Description: d.Description, Parameters: JSONSchema(params)})
			paths = append(paths, path)
		}
	}
	err := models.ValidateTools(tools, func(i int, field string) string {
		if field == "parameters" {
			return paths[i] + ".parameters"
		}
		return paths[i] + "." + field
	})
	return tools, err
}

// toToolChoice reads toolConfig.functionCallingConfig: AUTO (also absent,
// VALIDATED and MODE_UNSPECIFIED), NONE, or ANY with the functions it
// allows. ANY that allows one function is a call of it; ANY that allows
// several offers only those. It returns the tools the turn may call.
func toToolChoice(tc *ToolConfig, tools []models.Tool) (models.ToolChoice, []models.Tool, error) {
	if tc == nil || tc.FunctionCallingConfig == nil {
		return models.ToolChoice{Mode: models.ChoiceAuto}, tools, nil
	}
	const param = "toolConfig.functionCallingConfig"
	fc := tc.FunctionCallingConfig
	switch strings.ToUpper(fc.Mode) {
	case "", "AUTO", "VALIDATED", "MODE_UNSPECIFIED":
		return models.ToolChoice{Mode: models.ChoiceAuto}, tools, nil
	case "NONE":
		return models.ToolChoice{Mode: models.ChoiceNone}, tools, nil
	case "ANY":
		if len(tools) == 0 {
			return models.ToolChoice{}, nil, models.InvalidRequest(param+".mode", "%s.mode ANY needs at least one function in tools[].functionDeclarations", param)
		}
		if len(fc.AllowedFunctionNames) == 0 {
			return models.ToolChoice{Mode: models.ChoiceRequired}, tools, nil
		}
		var allowed []models.Tool
		for k, name := range fc.AllowedFunctionNames {
			if !models.HasTool(tools, name) {
				p := fmt.Sprintf("%s.allowedFunctionNames[%d]", param, k)
				return models.ToolChoice{}, nil, models.InvalidRequest(p, "%s %q is not the name of a function in tools[].functionDeclarations", p, utils.Clip(name, utils.QuoteLen))
			}
			if !models.HasTool(allowed, name) {
				for _, t := range tools {
					if t.Name == name {
						allowed = append(allowed, t)
					}
				}
			}
		}
		if len(allowed) == 1 {
			return models.ToolChoice{Mode: models.ChoiceFunction, Name: allowed[0].Name}, tools, nil
		}
		return models.ToolChoice{Mode: models.ChoiceRequired}, allowed, nil
	}
	return models.ToolChoice{}, nil, models.InvalidRequest(param+".mode", "%s.mode %q is not supported: use AUTO, ANY or NONE", param, utils.Clip(fc.Mode, utils.QuoteLen))
}

// partBlocks converts the parts of a system instruction, or of a
// function response, that are not calls or results: text, thoughts,
// images, and a marker for other media. param names the parts.
func partBlocks(parts []Part, param string) ([]models.Block, error) {
	var blocks []models.Block
	for j, p := range parts {
		b, ok, err := partBlock(p, fmt.Sprintf("%s[%d]", param, j))
		if err != nil {
			return nil, err
		}
		if ok {
			blocks = append(blocks, b)
		}
	}
	return blocks, nil
}

// partBlock converts one part at path: inline data of an image type a
// model takes is the image; other media are a marker (Gemini takes more
// kinds than the models behind the gateway, and files are not fetched).
func partBlock(p Part, path string) (models.Block, bool, error) {
	switch {
	case p.Text != nil && p.Thought:
		return models.Block{Kind: models.BlockThinking, Text: *p.Text}, true, nil
	case p.Text != nil:
		return models.Block{Kind: models.BlockText, Text: *p.Text}, true, nil
	case p.InlineData != nil && slices.Contains(models.ImageMediaTypes, strings.ToLower(p.InlineData.MIMEType)):
		b, err := models.ImageBlock(p.InlineData.MIMEType, p.InlineData.Data)
		if err != nil {
			return models.Block{}, false, models.InvalidRequest(path+".inlineData", "%s.inlineData: %v", path, err)
		}
		return b, true, nil
	case p.InlineData != nil:
		return models.Block{Kind: models.BlockMedia, Text: mediaName(p.InlineData)}, true, nil
	case p.FileData != nil:
		return models.Block{Kind: models.BlockMedia, Text: mediaName(p.FileData)}, true, nil
	case p.empty():
		return models.Block{}, false, models.InvalidRequest(path, "%s is empty: a part needs one of text, inlineData, fileData, functionCall or functionResponse", path)
	}
	return models.Block{}, false, nil
}

func mediaName(b *Blob) string {
	if b.MIMEType == "" {
		return "file"
	}
	return b.MIMEType
}

// pendingCall is a call of the history that no result has answered yet.
type pendingCall struct{ id, name string }

// contents converts the turns. Consecutive turns of one role stay apart
// (the core replays them in order). A call without an id gets one made
// from its place, and a result finds its call by id, else by name and
// order among the calls not yet answered: the Go SDK sends neither id.
func contents(in []Content) ([]models.Message, error) {
	var out []models.Message
	var pending []pendingCall
	for i, c := range in {
		switch c.Role {
		case "model":
			msg := models.Message{Role: models.RoleAssistant}
			for j, p := range c.Parts {
				path := fmt.Sprintf("contents[%d].parts[%d]", i, j)
				switch {
				case p.FunctionCall != nil:
					call := p.FunctionCall
					if call.Name == "" {
						return nil, models.InvalidRequest(path+".functionCall.name", "%s.functionCall.name is required", path)
					}
					args := bytes.TrimSpace(call.Args)
					if len(args) == 0 || bytes.Equal(args, []byte("null")) {
						args = []byte("{}")
					} else if args[0] != '{' {
						return nil, models.InvalidRequest(path+".functionCall.args", "%s.functionCall.args must be a JSON object", path)
					}
					id := call.ID
					if id == "" {
						id = fmt.Sprintf("call_c%dp%d", i, j)
					}
					pending = append(pending, pendingCall{id: id, name: call.Name})
					msg.Blocks = append(msg.Blocks, models.Block{Kind: models.BlockToolCall, ID: id, Name: call.Name, Arguments: string(args)})
				case p.FunctionResponse != nil:
					return nil, models.InvalidRequest(path+".functionResponse", "%s.functionResponse belongs in a user content: results are the client's, not the model's", path)
				default:
					b, ok, err := partBlock(p, path)
					if err != nil {
						return nil, err
					}
					if ok {
						msg.Blocks = append(msg.Blocks, b)
					}
				}
			}
			out = append(out, msg)
		case "user", "", "function":
			var blocks []models.Block
			flush := func() {
				if len(blocks) > 0 {
					out = append(out, models.Message{Role: models.RoleUser, Blocks: blocks})
					blocks = nil
				}
			}
			// afterResult: the parts read so far since a result are media
			// only, which belong to it (Gemini CLI sends a file it read
			// so, as inline data after the functionResponse).
			afterResult := false
			for j, p := range c.Parts {
				path := fmt.Sprintf("contents[%d].parts[%d]", i, j)
				switch {
				case p.FunctionResponse != nil:
					flush()
					msg, err := result(path+".functionResponse", p.FunctionResponse, &pending)
					if err != nil {
						return nil, err
					}
					out = append(out, msg)
					afterResult = true
				case p.FunctionCall != nil:
					return nil, models.InvalidRequest(path+".functionCall", "%s.functionCall belongs in a model content: calls are the model's", path)
				default:
					b, ok, err := partBlock(p, path)
					if err != nil {
						return nil, err
					}
					switch {
					case !ok:
					case afterResult && p.Text == nil:
						last := &out[len(out)-1]
						last.Blocks = append(last.Blocks, b)
					default:
						afterResult = false
						blocks = append(blocks, b)
					}
				}
			}
			flush()
		default:
			p := fmt.Sprintf("contents[%d].role", i)
			return nil, models.InvalidRequest(p, "%s %q is not supported: use \"user\" or \"model\"", p, utils.Clip(c.Role, utils.QuoteLen))
		}
	}
	return out, nil
}

// result converts a functionResponse into the message answering its call.
func result(path string, r *FunctionResponse, pending *[]pendingCall) (models.Message, error) {
	if r.Name == "" && r.ID == "" {
		return models.Message{}, models.InvalidRequest(path, "%s needs the name (or the id) of the call it answers", path)
	}
	at := -1
	for k, p := range *pending {
		if r.ID != "" && p.id == r.ID {
			at = k
			break
		}
	}
	if at < 0 && r.Name != "" {
		for k, p := range *pending {
			if p.name == r.Name {
				at = k
				break
			}
		}
	}
	id, name := r.ID, r.Name
	if at >= 0 {
		id = (*pending)[at].id
		if name == "" {
			name = (*pending)[at].name
		}
		*pending = append((*pending)[:at], (*pending)[at+1:]...)
	}
	text, isError := resultText(r.Response)
	media, err := partBlocks(r.Parts, path+".parts")
	if err != nil {
		return models.Message{}, err
	}
	blocks := append([]models.Block{{Kind: models.BlockText, Text: text}}, media...)
	return models.Message{Role: models.RoleTool, ToolCallID: id, ToolName: name, IsError: isError, Blocks: blocks}, nil
}

// resultText is what a result says: the text of {output: "..."} (Gemini
// CLI's form), the text of {error: "..."} as a failure, or the object as
// JSON.
func resultText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && len(obj) == 1 {
		for k, v := range obj {
			var s string
			if (k == "output" || k == "error") && json.Unmarshal(v, &s) == nil {
				return s, k == "error"
			}
		}
	}
	return string(raw), false
}
