package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"cursor2api/handlers/openai"
	"cursor2api/models"
	"cursor2api/utils"
	"cursor2api/utils/jsondec"
)

// NamespaceSeparator joins a namespace and the name of one of its
// functions into the one tool name the core knows: "crm" and "find" are
// "crm__find" (see FlatName). The way out splits it again by Names, not
// by the separator, so a namespace may contain it too.
const NamespaceSeparator = "__"

// maxFlatName is the longest tool name the core takes (models.ValidateTools).
const maxFlatName = 64

// FlatName is the core's name of function name in namespace:
// namespace__name, or, when that is too long for a tool name, its first
// characters and a hash of the whole, so that distinct long names stay
// distinct. Names maps it back either way.
func FlatName(namespace, name string) string {
	full := namespace + NamespaceSeparator + name
	if len(full) <= maxFlatName {
		return full
	}
	h := fnv.New32a()
	h.Write([]byte(full))
	return fmt.Sprintf("%s_%08x", full[:maxFlatName-9], h.Sum32())
}

// QualifiedName is a tool's own name, the namespace it belongs to ("" for
// a top-level tool), and whether it is a custom tool, whose calls carry
// raw text (input) rather than JSON arguments, or the client's
// tool_search, whose calls are tool_search_call items.
type QualifiedName struct {
	Namespace, Name string
	Custom, Search  bool
}

// Names maps the core's name of every namespaced or custom tool to its
// namespace, own name and kind.
type Names map[string]QualifiedName

// Split returns the namespace and own name of a core tool name; a name
// that is not a namespace member is its own name.
func (n Names) Split(name string) QualifiedName {
	if q, ok := n[name]; ok {
		return q
	}
	return QualifiedName{Name: name}
}

// Decoded is a request converted for the core, with what the door needs to
// answer in its own terms.
type Decoded struct {
	Request *models.Request
	// Items are the conversation's input items, the earlier response's
	// first, as received, for the store.
	Items []json.RawMessage
	Names Names
	// MCPServers are the request's mcp tools: servers for this request.
	MCPServers []models.MCPServer
	// Ignored says what the gateway dropped: built-in tools, and history
	// items of tools it does not run. The handler logs it.
	Ignored []string
	// Compaction is set when the input's last item is a
	// compaction_trigger: the answer is one compaction item (see Compact).
	Compaction bool
	// search is set when the request offers the client's tool_search:
	// deferred tools then wait for a tool_search_output to load them.
	search bool
}

// ToRequest converts a Responses request, after history (the items of
// previous_response_id's response, or nil), into the core's request. Its
// errors are *models.Error with a Responses field path.
func ToRequest(req *Request, history []json.RawMessage) (*Decoded, error) {
	return ToRequestWith(req, history, nil)
}

// ToRequestWith is ToRequest with open, the reader of the compaction
// items the gateway made for this client (Sealer.For its tenant): each
// becomes the summary it holds. With open nil a compaction item is refused.
func ToRequestWith(req *Request, history []json.RawMessage, open func(string) (string, error)) (*Decoded, error) {
	out := &Decoded{Names: Names{}}
	r := &models.Request{
		Model:        req.Model,
		Stream:       req.Stream,
		IncludeUsage: true,
		SingleCall:   req.ParallelToolCalls != nil && !*req.ParallelToolCalls,
		Session:      openai.String(req.PromptCacheKey),
	}
	out.Request = r
	if rs := req.Reasoning; rs != nil && rs.Summary != nil && *rs.Summary != "" && *rs.Summary != "none" {
		r.ShowThinking = true
	}
	var err error
	if r.MaxOutputTokens, err = models.OutputBound("max_output_tokens", req.MaxOutputTokens); err != nil {
		return nil, err
	}
	out.search = hasClientSearch(req.Tools)
	var paths []string
	if r.Tools, paths, err = out.tools(req.Tools, "tools", false); err != nil {
		return nil, err
	}
	r.MCPServers = out.MCPServers

	if strings.TrimSpace(req.Instructions) != "" {
		r.Messages = append(r.Messages, textMessage(models.RoleSystem, req.Instructions))
	}
	if note, err := formatNote(req.Text); err != nil {
		return nil, err
	} else if note != "" {
		r.Messages = append(r.Messages, textMessage(models.RoleSystem, note))
	}
	items, text, err := inputItems(req.Input)
	if err != nil {
		return nil, err
	}
	c := conversation{out: out, open: open, trigger: -1}
	for i, raw := range history {
		if err := c.add(raw, "previous_response_id", i); err != nil {
			return nil, models.InvalidRequest("previous_response_id", "the stored conversation of previous_response_id cannot be read: %v", err)
		}
	}
	if text != nil {
		// The user message a string input stands for, as add reads its item.
		c.push(models.Message{Role: models.RoleUser, Blocks: blocks(openai.Content{Text: *text})})
	} else {
		for i, raw := range items {
			if err := c.add(raw, "input", i); err != nil {
				return nil, err
			}
		}
	}
	if c.turns == 0 && (req.Generate == nil || *req.Generate) { // a warm-up may hold instructions alone
		return nil, models.InvalidRequest("input", "input must contain at least one user message, assistant message or function_call_output")
	}
	r.Messages = append(r.Messages, c.msgs...)
	// The tools that tool_search_output items loaded join the request's,
	// which win a clash of names. A set keeps a long history linear.
	if len(c.loaded) > 0 {
		have := make(map[string]bool, len(r.Tools)+len(c.loaded))
		for _, t := range r.Tools {
			have[t.Name] = true
		}
		for i, t := range c.loaded {
			if !have[t.Name] {
				have[t.Name] = true
				r.Tools, paths = append(r.Tools, t), append(paths, c.loadedPaths[i])
			}
		}
	}
	if err := models.ValidateTools(r.Tools, func(i int, field string) string { return paths[i] + "." + field }); err != nil {
		return nil, err
	}
	if r.Choice, err = toolChoice(req.ToolChoice, r.Tools, r.MCPServers); err != nil {
		return nil, err
	}
	out.Items = append(append(make([]json.RawMessage, 0, len(history)+len(items)), history...), items...)
	if c.trigger >= 0 && c.trigger == len(items)-1 {
		out.Compact()
	}
	return out, nil
}

// tools flattens the function and custom tools and the members of
// namespaces in raws (at field) into the core's tools, with the field
// path of each, noting the built-in tools it drops. loaded marks the
// tools of a tool_search_output: only functions are taken there.
func (d *Decoded) tools(raws []json.RawMessage, field string, loaded bool) ([]models.Tool, []string, error) {
	var tools []models.Tool
	var paths []string
	add := func(t Tool, path string, ns *Tool) error {
		name, desc, params := t.Name, t.Description, t.Parameters
		q := QualifiedName{Name: t.Name, Custom: t.Type == "custom"}
		if q.Custom {
			var err error
			if params, err = customParameters(t.Format, path+".format"); err != nil {
				return err
			}
		}
		deferred := t.DeferLoading
		if ns != nil {
			name, q.Namespace = FlatName(ns.Name, t.Name), ns.Name
			deferred = deferred || ns.DeferLoading
			if ns.Description != "" {
				// The namespace's description is the only place that says
				// what its server is for.
				desc = strings.TrimSpace(desc + "\n(" + ns.Name + ": " + ns.Description + ")")
			}
		}
		if q.Custom || ns != nil {
			d.Names[name] = q
		}
		// Without the client's tool_search nothing could load a deferred
		// tool: it is offered from the start.
		tool := models.Tool{Name: name, Description: desc, Parameters: params, Deferred: deferred && d.search}
		if q.Custom {
			tool.RawInput = CustomInput
		}
		tools = append(tools, tool)
		paths = append(paths, path)
		return nil
	}
	for i, raw := range raws {
		path := fmt.Sprintf("%s[%d]", field, i)
		var t Tool
		if err := jsondec.Unmarshal(raw, &t); err != nil {
			return nil, nil, models.InvalidRequest(path, "%s must be a tool object like {\"type\":\"function\",\"name\":\"...\",\"parameters\":{...}}", path)
		}
		switch t.Type {
		case "function", "custom":
			if err := add(t, path, nil); err != nil {
				return nil, nil, err
			}
		case "namespace":
			if t.Name == "" {
				return nil, nil, models.InvalidRequest(path+".name", "%s.name is required: it names the namespace in calls", path)
			}
			for j, m := range t.Tools {
				mpath := fmt.Sprintf("%s.tools[%d]", path, j)
				switch m.Type {
				case "":
					m.Type = "function"
				case "function", "custom":
				default:
					d.Ignored = append(d.Ignored, fmt.Sprintf("%s (%s)", mpath, m.Type))
					continue
				}
				if m.Name == "" {
					return nil, nil, models.InvalidRequest(mpath+".name", "%s.name is required", mpath)
				}
				if err := add(m, mpath, &t); err != nil {
					return nil, nil, err
				}
			}
		case "tool_search":
			if loaded || t.Execution != "client" {
				// OpenAI runs a hosted search; here the deferred tools are
				// offered from the start instead.
				d.Ignored = append(d.Ignored, fmt.Sprintf("%s (%s)", path, t.Type))
				continue
			}
			tools = append(tools, searchTool(t))
			paths = append(paths, path)
			d.Names[SearchToolName] = QualifiedName{Name: SearchToolName, Search: true}
		case "mcp":
			if loaded {
				d.Ignored = append(d.Ignored, fmt.Sprintf("%s (%s)", path, t.Type))
				continue
			}
			server, err := mcpServer(t, path)
			if err != nil {
				return nil, nil, err
			}
			d.MCPServers = append(d.MCPServers, server)
		case "":
			return nil, nil, models.InvalidRequest(path+".type", "%s.type is required: use \"function\", \"custom\" or \"namespace\"", path)
		default:
			// Built-in tools (web_search, file_search, computer_use,
			// local_shell...) run on OpenAI's side; the model here
			// cannot use them.
			d.Ignored = append(d.Ignored, fmt.Sprintf("%s (%s)", path, t.Type))
		}
	}
	return tools, paths, nil
}

// CustomInput is the one argument, a string, of the function that stands
// for a custom tool in the core: the model writes the tool's raw text
// there, and the way out unwraps it (see CustomCallInput).
const CustomInput = "input"

// customParameters is the JSON Schema of the function standing for a
// custom tool of the given format: one string argument, input, described
// by the format, so that a grammar reaches the model as text.
func customParameters(f *CustomFormat, path string) (json.RawMessage, error) {
	// The model writes arguments as JSON; the text goes in a JSON string
	// and the tool gets it raw. Saying only "raw text" invites the model
	// to leave the JSON out.
	desc := "The tool's input, written as one JSON string: the tool receives the string's text as it is."
	if f != nil {
		switch f.Type {
		case "", "text":
		case "grammar":
			if f.Syntax != "lark" && f.Syntax != "regex" {
				return nil, models.InvalidRequest(path+".syntax", "%s.syntax %q is not supported: use \"lark\" or \"regex\"", path, utils.Clip(f.Syntax, utils.QuoteLen))
			}
			if strings.TrimSpace(f.Definition) == "" {
				return nil, models.InvalidRequest(path+".definition", "%s.definition is required: it is the grammar the input follows", path)
			}
			desc += fmt.Sprintf(" That text must match this %s grammar:\n%s", f.Syntax, f.Definition)
		default:
			return nil, models.InvalidRequest(path+".type", "%s.type %q is not supported: use \"text\" or \"grammar\"", path, utils.Clip(f.Type, utils.QuoteLen))
		}
	}
	type property struct {
		Type        string `json:"type"`
		Description string `json:"description"`
	}
	return json.Marshal(struct {
		Type                 string              `json:"type"`
		Properties           map[string]property `json:"properties"`
		Required             []string            `json:"required"`
		AdditionalProperties bool                `json:"additionalProperties"`
	}{"object", map[string]property{CustomInput: {"string", desc}}, []string{CustomInput}, false})
}

// customArguments are the core's arguments of a custom call with input,
// as the model would write them.
func customArguments(input string) string { return utils.StringObject(CustomInput, input) }

// CustomCallInput is the input of a custom call whose core arguments are
// args: their input string, or args themselves when they are not the
// object the tool's schema asks for (a call cut off or found invalid).
func CustomCallInput(args string) string {
	if v := gjson.Get(args, CustomInput); gjson.Valid(args) && v.Type == gjson.String {
		return v.String()
	}
	return args
}

// toolChoice reads tool_choice: the OpenAI strings, a function or custom
// tool by name (a namespace member also by its flat name), or an mcp
// server_label with an optional tool name, which the core checks once it
// has listed the server's tools.
func toolChoice(raw json.RawMessage, tools []models.Tool, servers []models.MCPServer) (models.ToolChoice, error) {
	const objectForm = `{"type":"function","name":"..."}`
	if choice, ok, err := openai.StringToolChoice(raw, tools, objectForm); ok {
		return choice, err
	}
	var obj struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Namespace   string `json:"namespace"`
		ServerLabel string `json:"server_label"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return models.ToolChoice{}, models.InvalidRequest("tool_choice", "tool_choice must be a string or an object like %s", objectForm)
	}
	if obj.Type == "mcp" {
		return mcpToolChoice(obj.ServerLabel, obj.Name, servers)
	}
	if obj.Type != "function" && obj.Type != "custom" {
		return models.ToolChoice{}, models.InvalidRequest("tool_choice.type", "tool_choice.type %q is not supported: the gateway runs no built-in tools; use \"function\", \"custom\" or \"mcp\"", utils.Clip(obj.Type, utils.QuoteLen))
	}
	name := obj.Name
	if obj.Namespace != "" && obj.Name != "" {
		name = FlatName(obj.Namespace, obj.Name)
	}
	return openai.NamedToolChoice(name, tools, "tool_choice.name")
}

// mcpToolChoice is tool_choice {"type":"mcp"}: a call, in the answer's
// first round, of the tool name (or of any tool) of the request's MCP
// server labelled label.
func mcpToolChoice(label, name string, servers []models.MCPServer) (models.ToolChoice, error) {
	if label == "" {
		return models.ToolChoice{}, models.InvalidRequest("tool_choice.server_label", `tool_choice of type "mcp" needs the server_label of one of the request's mcp tools`)
	}
	if !slices.ContainsFunc(servers, func(s models.MCPServer) bool { return s.Label == label }) {
		return models.ToolChoice{}, models.InvalidRequest("tool_choice.server_label",
			"tool_choice.server_label %q names no mcp tool of this request; add {\"type\":\"mcp\",\"server_label\":%q,\"server_url\":...} to tools",
			utils.Clip(label, utils.QuoteLen), utils.Clip(label, utils.QuoteLen))
	}
	if name == "" {
		return models.ToolChoice{Mode: models.ChoiceRequired, Server: label}, nil
	}
	return models.ToolChoice{Mode: models.ChoiceFunction, Name: models.MCPToolName(label, name), Server: label}, nil
}

// formatNote is the system instruction that text.format asks for, or ""
// for plain text. The upstream has no structured output, so a schema
// becomes a constraint in the prompt.
func formatNote(t *TextConfig) (string, error) {
	if t == nil || t.Format == nil {
		return "", nil
	}
	f := t.Format
	return openai.FormatNote(openai.Format{Type: f.Type, Schema: f.Schema, Name: f.Name, Description: f.Description}, "text.format", "text.format.schema")
}

// inputItems splits input (JSON the request's decoder has checked) into
// items. A string stands for one user message, whose text is returned as
// well (text is set), so that the caller need not decode the item again.
func inputItems(input json.RawMessage) (items []json.RawMessage, text *string, err error) {
	input = bytes.TrimSpace(input)
	switch {
	case len(input) == 0 || bytes.Equal(input, []byte("null")):
		return nil, nil, nil
	case input[0] == '"':
		s, err := utils.DecodeJSONString(input)
		if err != nil {
			return nil, nil, models.InvalidRequest("input", "input is not a valid JSON string")
		}
		// The item a string stands for, appended rather than encoded by
		// reflection: it is the whole prompt.
		item := make([]byte, 0, len(input)+48)
		item = append(item, `{"type":"message","role":"user","content":`...)
		item = utils.AppendJSONString(item, s)
		return []json.RawMessage{append(item, '}')}, &s, nil
	case input[0] == '[':
		// The items as they came, each a slice of input, which the
		// request's decoder has checked: split in one pass, without
		// encoding/json's check and copy of each, or a copy of the whole
		// (input may hold megabytes of images).
		jsondec.Elements(input, func(item []byte) bool {
			items = append(items, item[:len(item):len(item)]) // an append to one copies it
			return true
		})
		return items, nil, nil
	}
	return nil, nil, models.InvalidRequest("input", "input must be a string or an array of items")
}

// conversation builds the core's messages from items. The items of one
// assistant turn (its reasoning, message and function calls) become one
// assistant message, as a chat completion would carry them.
type conversation struct {
	out   *Decoded
	msgs  []models.Message
	turns int // messages other than system ones
	// open reads a compaction item's encrypted_content (nil: refused).
	open func(string) (string, error)
	// trigger is the index of the input's last compaction_trigger, -1
	// for none.
	trigger int
	// loaded are the tools of the tool_search_output items, with the
	// field path of each.
	loaded      []models.Tool
	loadedPaths []string
}

func (c *conversation) add(raw json.RawMessage, field string, i int) error {
	path := fmt.Sprintf("%s[%d]", field, i)
	var it InputItem
	if err := jsondec.Unmarshal(raw, &it); err != nil {
		return models.InvalidRequest(path, "%s is not a valid input item: %v", path, err)
	}
	switch it.Type {
	case "", "message":
		bs, err := openai.ContentBlocks(it.Content, func() string { return path + ".content" }, "image_url")
		if err != nil {
			return err
		}
		switch it.Role {
		case "system", "developer":
			c.msgs = append(c.msgs, models.Message{Role: models.RoleSystem, Blocks: bs})
		case "user":
			c.push(models.Message{Role: models.RoleUser, Blocks: bs})
		case "assistant":
			c.assistant(bs...)
		default:
			return models.InvalidRequest(path+".role", "%s.role %q is not supported: use system, developer, user or assistant", path, utils.Clip(it.Role, utils.QuoteLen))
		}
	case "function_call", "custom_tool_call":
		if it.Name == "" || it.CallID == "" {
			return models.InvalidRequest(path, "%s: a %s needs a name and a call_id", path, it.Type)
		}
		name := it.Name
		if it.Namespace != "" {
			name = FlatName(it.Namespace, it.Name)
		}
		args := string(it.Arguments)
		if it.Type == "custom_tool_call" {
			args = customArguments(it.Input)
		}
		c.assistant(models.Block{Kind: models.BlockToolCall, ID: it.CallID, Name: name, Arguments: args})
	case "function_call_output", "custom_tool_call_output":
		if it.CallID == "" {
			return models.InvalidRequest(path+".call_id", "%s.call_id is required: it names the call this output answers", path)
		}
		bs, err := openai.ContentBlocks(it.Output, func() string { return path + ".output" }, "image_url")
		if err != nil {
			return err
		}
		c.push(models.Message{Role: models.RoleTool, ToolCallID: it.CallID, Blocks: bs})
	case ItemToolSearchCall, ItemToolSearchOutput:
		if it.Execution == "server" || it.Execution == "" && it.CallID == "" {
			// OpenAI's hosted search, in a history from it: the deferred
			// tools it searched are in the request's tools.
			c.out.Ignored = append(c.out.Ignored, fmt.Sprintf("%s (%s)", path, it.Type))
			return nil
		}
		if it.CallID == "" {
			return models.InvalidRequest(path+".call_id", "%s.call_id is required: it pairs a tool_search_call with its tool_search_output", path)
		}
		if it.Type == ItemToolSearchCall {
			c.assistant(models.Block{Kind: models.BlockToolCall, ID: it.CallID, Name: SearchToolName, Arguments: string(it.Arguments)})
			return nil
		}
		var raws []json.RawMessage
		if t := bytes.TrimSpace(it.Tools); len(t) > 0 && t[0] == '[' {
			jsondec.Elements(t, func(tool []byte) bool {
				raws = append(raws, tool)
				return true
			})
		} else if len(t) > 0 && !bytes.Equal(t, []byte("null")) {
			return models.InvalidRequest(path+".tools", "%s.tools must be an array of the tools the search loaded", path)
		}
		tools, paths, err := c.out.tools(raws, path+".tools", true)
		if err != nil {
			return err
		}
		c.loaded, c.loadedPaths = append(c.loaded, tools...), append(c.loadedPaths, paths...)
		c.push(models.Message{Role: models.RoleTool, ToolCallID: it.CallID, Blocks: searchResult(tools)})
	case ItemMCPCall:
		if it.Name == "" || it.ServerLabel == "" {
			return models.InvalidRequest(path, "%s: an mcp_call needs a name and a server_label", path)
		}
		call, result := mcpHistory(it)
		c.assistant(call)
		c.push(result)
	case ItemCompaction, "compaction_summary":
		summary, err := c.openCompaction(it.EncryptedContent, path)
		if err != nil {
			return err
		}
		c.push(SummaryMessage(summary))
	case ItemCompactionTrigger:
		// A request control, not history: only the input's last item asks.
		if field == "input" {
			c.trigger = i
		}
	case ItemMCPListTools:
		// A listing the gateway showed earlier: the servers' tools are
		// listed and offered anew with each request that names them.
	case "reasoning":
		// Earlier reasoning is hidden history: its summary, when there is
		// one, stays thinking; encrypted content means nothing here.
		text := it.Summary.Text
		if text == "" {
			text = it.Content.Text
		}
		if strings.TrimSpace(text) != "" {
			c.assistant(models.Block{Kind: models.BlockThinking, Text: text})
		}
	default:
		c.out.Ignored = append(c.out.Ignored, fmt.Sprintf("%s (%s)", path, it.Type))
	}
	return nil
}

// push appends a user or tool message.
func (c *conversation) push(m models.Message) {
	c.msgs = append(c.msgs, m)
	c.turns++
}

// assistant adds blocks to the assistant turn in progress, or starts one.
func (c *conversation) assistant(bs ...models.Block) {
	if n := len(c.msgs); n > 0 && c.msgs[n-1].Role == models.RoleAssistant {
		c.msgs[n-1].Blocks = append(c.msgs[n-1].Blocks, bs...)
		return
	}
	c.push(models.Message{Role: models.RoleAssistant, Blocks: bs})
}

func textMessage(role models.Role, text string) models.Message {
	return models.Message{Role: role, Blocks: []models.Block{{Kind: models.BlockText, Text: text}}}
}

// blocks are content's text, then a marker for each part without text
// (input_image, input_file): what an mcp_call's output keeps of them.
func blocks(c openai.Content) []models.Block {
	out := make([]models.Block, 0, 1+len(c.Images)+len(c.NonText))
	out = append(out, models.Block{Kind: models.BlockText, Text: c.Text})
	for _, img := range c.Images {
		out = append(out, models.Block{Kind: models.BlockMedia, Text: img.Type})
	}
	for _, t := range c.NonText {
		out = append(out, models.Block{Kind: models.BlockMedia, Text: t})
	}
	return out
}
