package native

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"cursor2api/models"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// toolProvider is the MCP provider the client's tools are declared
// under. The official SDK declares its custom tools the same way, as
// "<provider>-<tool>" under a provider of its own.
const toolProvider = "cursor2api"

// continueText is the user message of a replayed turn that ends with tool
// results rather than with a user message: a run starts with a user
// message, and the results themselves go in the history.
const continueText = "Continue with the tool results above."

// imagesOnlyText is the text of a user message that is images alone: a
// run's user message has text.
const imagesOnlyText = "(see the attached images)"

// mcpName is the name a client tool is declared under.
func mcpName(tool string) string { return toolProvider + "-" + tool }

// toolNames maps every name the model may call a declared tool by (its
// MCP name and its own) to the client's name.
func toolNames(tools []models.Tool) map[string]string {
	out := make(map[string]string, 2*len(tools))
	for _, t := range tools {
		out[t.Name] = t.Name
		out[mcpName(t.Name)] = t.Name
	}
	return out
}

// mcpDefinitions declares the client's tools as MCP tools.
func mcpDefinitions(tools []models.Tool) ([]*agentv1.McpToolDefinition, error) {
	out := make([]*agentv1.McpToolDefinition, 0, len(tools))
	for _, t := range tools {
		schema := any(map[string]any{"type": "object", "properties": map[string]any{}})
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return nil, models.InvalidRequest("tools", "the parameters of tool %q are not valid JSON: %v", utils.Clip(t.Name, utils.QuoteLen), err)
			}
		}
		v, err := structpb.NewValue(schema)
		if err != nil {
			return nil, models.InvalidRequest("tools", "the parameters of tool %q cannot be sent: %v", utils.Clip(t.Name, utils.QuoteLen), err)
		}
		out = append(out, &agentv1.McpToolDefinition{
			Name: mcpName(t.Name), ProviderIdentifier: toolProvider, ToolName: t.Name,
			Description: t.Description, InputSchema: v,
		})
	}
	return out, nil
}

// requestContext is what the gateway says of its "workspace": none, and
// the client's tools. The server asks for it (request_context_args) and
// gets the same answer every time.
func requestContext(defs []*agentv1.McpToolDefinition) *agentv1.RequestContext {
	// The server's own web tools and lints are switched off too: what
	// the model may do is the client's tools and nothing else.
	return &agentv1.RequestContext{
		Env: &agentv1.RequestContextEnv{
			OsVersion: runtime.GOOS, Shell: "none", TimeZone: "UTC",
			ComputerUseSupported: proto.Bool(false), SandboxSupported: proto.Bool(false),
		},
		Tools:            defs,
		WebSearchEnabled: proto.Bool(false),
		WebFetchEnabled:  proto.Bool(false),
		ReadLintsEnabled: proto.Bool(false),
		McpInfoComplete:  proto.Bool(true),
		EnvInfoComplete:  proto.Bool(true),
	}
}

// runPlan is a fresh run's first message and what the run must know to
// answer the server.
type runPlan struct {
	msg     *agentv1.AgentClientMessage
	reqCtx  *agentv1.RequestContext
	names   map[string]string
	history int // messages in conversation_history, for logs and tests
}

// buildRun writes a conversation's run request: the last user message as
// the action, the rest as conversation_history with calls kept structured,
// the tools as MCP tools. The system text is the custom system prompt, or
// with systemInHistory (accounts that may not replace it) the history's head.
func buildRun(req upstream.Request, runID, convID, messageID string, systemInHistory bool) (*runPlan, error) {
	conv := req.Conversation
	if len(conv) == 0 {
		// A core that sends text turns only: they are the conversation.
		for _, t := range req.Messages {
			conv = append(conv, models.Message{Role: t.Role, Blocks: []models.Block{{Kind: models.BlockText, Text: t.Text}}})
		}
	}
	var system []string
	var rest []models.Message
	for _, m := range conv {
		if m.Role == models.RoleSystem {
			if t := m.Text(); strings.TrimSpace(t) != "" {
				system = append(system, t)
			}
			continue
		}
		rest = append(rest, m)
	}
	text := continueText
	var selected *agentv1.SelectedContext
	if n := len(rest); n > 0 && rest[n-1].Role == models.RoleUser {
		imgs, err := images(rest[n-1])
		if err != nil {
			return nil, err
		}
		text = userText(rest[n-1])
		if len(imgs) > 0 {
			selected = &agentv1.SelectedContext{SelectedImages: selectedImages(imgs)}
			if strings.TrimSpace(text) == "" {
				text = imagesOnlyText
			}
		}
		rest = rest[:n-1]
	}
	if strings.TrimSpace(text) == "" {
		text = continueText
	}
	systemText := strings.Join(system, "\n\n")
	var history []*agentv1.ConversationHistoryMessage
	if systemInHistory && systemText != "" {
		history = append(history, userHistory("<system>\n"+systemText+"\n</system>"))
	}
	callNames := map[string]string{}
	for _, m := range rest {
		imgs, err := images(m)
		if err != nil {
			return nil, err
		}
		switch m.Role {
		case models.RoleUser:
			h := userHistory(userText(m))
			if len(imgs) > 0 {
				u := h.GetUser()
				u.Content = u.Content[:0]
				for _, p := range inOrder(m, imgs) {
					c := &agentv1.ConversationHistoryUserContent{Content: &agentv1.ConversationHistoryUserContent_Text{Text: &agentv1.ConversationHistoryTextContent{Text: p.text}}}
					if p.img != nil {
						c = &agentv1.ConversationHistoryUserContent{Content: &agentv1.ConversationHistoryUserContent_Image{Image: p.img.history()}}
					}
					u.Content = append(u.Content, c)
				}
			}
			history = append(history, h)
		case models.RoleAssistant:
			var content []*agentv1.ConversationHistoryAssistantContent
			for _, b := range m.Blocks {
				switch b.Kind {
				case models.BlockText:
					if b.Text != "" {
						content = append(content, &agentv1.ConversationHistoryAssistantContent{Content: &agentv1.ConversationHistoryAssistantContent_Text{
							Text: &agentv1.ConversationHistoryTextContent{Text: b.Text}}})
					}
				case models.BlockToolCall:
					callNames[b.ID] = b.Name
					args := b.Arguments
					if strings.TrimSpace(args) == "" {
						args = "{}"
					}
					content = append(content, &agentv1.ConversationHistoryAssistantContent{Content: &agentv1.ConversationHistoryAssistantContent_ToolCall{
						ToolCall: &agentv1.ConversationHistoryToolCall{ToolCallId: b.ID, ToolName: mcpName(b.Name), ArgsJson: args}}})
				}
				// Earlier reasoning is not replayed: it is unsigned here,
				// and the model need not see it again.
			}
			if len(content) > 0 {
				history = append(history, &agentv1.ConversationHistoryMessage{Message: &agentv1.ConversationHistoryMessage_Assistant{
					Assistant: &agentv1.ConversationHistoryAssistantMessage{Content: content}}})
			}
		case models.RoleTool:
			name := m.ToolName
			if name == "" {
				name = callNames[m.ToolCallID]
			}
			tm := &agentv1.ConversationHistoryToolMessage{ToolCallId: m.ToolCallID, ToolName: mcpName(name),
				Content: []*agentv1.ConversationHistoryToolResultContent{{Content: &agentv1.ConversationHistoryToolResultContent_Text{
					Text: &agentv1.ConversationHistoryTextContent{Text: resultText(m)}}}}}
			if len(imgs) > 0 {
				if userText(m) != "" {
					tm.Content = tm.Content[:0] // the text goes where the client put it
				}
				for _, p := range inOrder(m, imgs) {
					c := &agentv1.ConversationHistoryToolResultContent{Content: &agentv1.ConversationHistoryToolResultContent_Text{Text: &agentv1.ConversationHistoryTextContent{Text: p.text}}}
					if p.img != nil {
						c = &agentv1.ConversationHistoryToolResultContent{Content: &agentv1.ConversationHistoryToolResultContent_Image{Image: p.img.history()}}
					}
					tm.Content = append(tm.Content, c)
				}
			}
			if m.IsError {
				tm.IsError = proto.Bool(true)
			}
			history = append(history, &agentv1.ConversationHistoryMessage{Message: &agentv1.ConversationHistoryMessage_Tool{Tool: tm}})
		}
	}
	tools := req.Tools
	if req.Choice.Mode == models.ChoiceNone {
		tools = nil
	}
	defs, err := mcpDefinitions(tools)
	if err != nil {
		return nil, err
	}
	rc := requestContext(defs)
	action := &agentv1.UserMessageAction{
		UserMessage: &agentv1.UserMessage{
			Text: text, MessageId: messageID, SelectedContext: selected,
			// Agent mode: the mode in which the model calls tools. The
			// built-in tools are taken away by the allowed-tools header
			// (allowedToolsHeader), not by the mode.
			Mode: agentv1.AgentMode_AGENT_MODE_AGENT,
		},
		RequestContext: rc,
	}
	if len(history) > 0 {
		action.ConversationHistory = &agentv1.ConversationHistory{Messages: history}
	}
	run := &agentv1.AgentRunRequest{
		// Always present, empty for a fresh run: the server refuses a run
		// without it ("Conversation state is required").
		ConversationState: &agentv1.ConversationStateStructure{},
		Action:            &agentv1.ConversationAction{Action: &agentv1.ConversationAction_UserMessageAction{UserMessageAction: action}},
		ModelDetails:      &agentv1.ModelDetails{ModelId: req.Model},
		RequestedModel:    &agentv1.RequestedModel{ModelId: req.Model},
		McpTools:          &agentv1.McpTools{McpTools: defs},
		ConversationId:    proto.String(convID),
		RunId:             proto.String(runID),
	}
	if systemText != "" && !systemInHistory {
		run.CustomSystemPrompt = proto.String(systemText)
	}
	return &runPlan{
		msg:     &agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_RunRequest{RunRequest: run}},
		reqCtx:  rc,
		names:   toolNames(tools),
		history: len(history),
	}, nil
}

func userHistory(text string) *agentv1.ConversationHistoryMessage {
	return &agentv1.ConversationHistoryMessage{Message: &agentv1.ConversationHistoryMessage_User{User: &agentv1.ConversationHistoryUserMessage{
		Content: []*agentv1.ConversationHistoryUserContent{{Content: &agentv1.ConversationHistoryUserContent_Text{
			Text: &agentv1.ConversationHistoryTextContent{Text: text}}}}}}}
}

// userText is a user message's text, with a note for each piece of media
// the gateway cannot pass on.
func userText(m models.Message) string {
	var b strings.Builder
	for _, blk := range m.Blocks {
		var s string
		switch blk.Kind {
		case models.BlockText:
			s = blk.Text
		case models.BlockMedia:
			s = fmt.Sprintf("[%s omitted]", blk.Text)
		default:
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	return b.String()
}

// resultText is a tool result's content as text.
func resultText(m models.Message) string {
	if t := userText(m); t != "" {
		return t
	}
	if slices.ContainsFunc(m.Blocks, func(b models.Block) bool { return b.Kind == models.BlockImage }) {
		return "(the result is the images that follow)"
	}
	return "(no output)"
}

// image is an inline image of a message, decoded.
type image struct {
	mediaType string
	data      []byte
}

// images are the inline images of m, decoded: Cursor takes their bytes.
// Line breaks in the base64 are ignored, and padding may be left out, as
// clients (and encoders wrapping at 76 columns) do.
func images(m models.Message) ([]image, error) {
	var out []image
	for _, b := range m.Blocks {
		if b.Kind != models.BlockImage {
			continue
		}
		// The doors checked the data already (models.ImageBlock).
		data, err := models.DecodeImageData(b.Data)
		if err != nil {
			where := fmt.Sprintf("a message of role %s", m.Role)
			if m.Role == models.RoleTool {
				where = fmt.Sprintf("the result of tool call %q", utils.Clip(m.ToolCallID, utils.QuoteLen))
			}
			return nil, models.InvalidRequest("messages", "%s has an image whose data is not base64 (%v); send the image's bytes in standard base64", where, err)
		}
		out = append(out, image{mediaType: b.MediaType, data: data})
	}
	return out, nil
}

// piece is a run of a message's text, or one of its images.
type piece struct {
	text string
	img  *image
}

// inOrder is m's text and images (imgs, decoded from m by images) in
// the client's order: the text between two images joined as userText
// joins it. A history message can hold them so; the run's own user
// message cannot (its images are selected context beside one text).
func inOrder(m models.Message, imgs []image) []piece {
	var out []piece
	var run []models.Block
	flush := func() {
		if t := userText(models.Message{Blocks: run}); t != "" {
			out = append(out, piece{text: t})
		}
		run = nil
	}
	for _, b := range m.Blocks {
		if b.Kind != models.BlockImage {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, piece{img: &imgs[0]})
		imgs = imgs[1:]
	}
	flush()
	return out
}

// selectedImages are the images of a run's user message, each with an id
// of its own, as the official SDK attaches them.
func selectedImages(imgs []image) []*agentv1.SelectedImage {
	out := make([]*agentv1.SelectedImage, len(imgs))
	for i, img := range imgs {
		out[i] = &agentv1.SelectedImage{Uuid: uuid(), MimeType: img.mediaType, DataOrBlobId: &agentv1.SelectedImage_Data{Data: img.data}}
	}
	return out
}

// history is the image as conversation history holds it: base64 text.
func (img image) history() *agentv1.ConversationHistoryImageContent {
	return &agentv1.ConversationHistoryImageContent{Data: base64.StdEncoding.EncodeToString(img.data), MimeType: proto.String(img.mediaType)}
}

// mcpImages are the images of a tool result, as a tool's result carries
// them back to a parked run.
func mcpImages(imgs []image) []*agentv1.McpToolResultContentItem {
	out := make([]*agentv1.McpToolResultContentItem, len(imgs))
	for i, img := range imgs {
		out[i] = &agentv1.McpToolResultContentItem{Content: &agentv1.McpToolResultContentItem_Image{Image: &agentv1.McpImageContent{Data: img.data, MimeType: img.mediaType}}}
	}
	return out
}

// argsJSON is an MCP call's arguments as a JSON object.
func argsJSON(args map[string]*structpb.Value) (string, error) {
	if len(args) == 0 {
		return "{}", nil
	}
	b, err := protojson.Marshal(&structpb.Struct{Fields: args})
	if err != nil {
		return "", err
	}
	return string(b), nil
}
