package services

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"cursor2api/models"
)

// ToolChoiceMode is how the request wants tools used.
type ToolChoiceMode uint8

const (
	ChoiceAuto     ToolChoiceMode = iota // the model decides
	ChoiceNone                           // no tool may be called
	ChoiceRequired                       // at least one call
	ChoiceFunction                       // a call of one named function
)

// ToolChoice is the parsed tool_choice.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string // for ChoiceFunction
}

// ParseToolChoice reads tool_choice: absent or null (auto), "auto", "none",
// "required" (also "any"), or {"type":"function","function":{"name":...}}
// naming a declared tool.
func ParseToolChoice(raw json.RawMessage, tools []models.Tool) (ToolChoice, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ToolChoice{Mode: ChoiceAuto}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		var c ToolChoice
		switch s {
		case "auto":
			c.Mode = ChoiceAuto
		case "none":
			return ToolChoice{Mode: ChoiceNone}, nil
		case "required", "any":
			c.Mode = ChoiceRequired
		default:
			return c, models.InvalidRequest("tool_choice", "tool_choice %q is not supported: use \"auto\", \"none\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":\"...\"}}", s)
		}
		if c.Mode == ChoiceRequired && len(tools) == 0 {
			return c, models.InvalidRequest("tool_choice", "tool_choice \"required\" needs at least one tool in tools")
		}
		return c, nil
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
		Name string `json:"name"` // the Anthropic-like short form
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return ToolChoice{}, models.InvalidRequest("tool_choice", "tool_choice must be a string or an object like {\"type\":\"function\",\"function\":{\"name\":\"...\"}}")
	}
	if obj.Type != "function" && obj.Type != "tool" {
		return ToolChoice{}, models.InvalidRequest("tool_choice.type", "tool_choice.type %q is not supported: use \"function\"", obj.Type)
	}
	name := obj.Function.Name
	if name == "" {
		name = obj.Name
	}
	if name == "" {
		return ToolChoice{}, models.InvalidRequest("tool_choice.function.name", "tool_choice.function.name is required")
	}
	for _, t := range tools {
		if t.Function.Name == name {
			return ToolChoice{Mode: ChoiceFunction, Name: name}, nil
		}
	}
	return ToolChoice{}, models.InvalidRequest("tool_choice.function.name", "tool_choice names function %q, which is not in tools", name)
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)

// ValidateTools checks the tools array: only type "function", a name of at
// most 64 letters, digits, '_', '-' or '.', names unique, parameters (when
// given) a JSON object.
func ValidateTools(tools []models.Tool) error {
	seen := make(map[string]int, len(tools))
	for i, t := range tools {
		if t.Type != "function" && t.Type != "" {
			return models.InvalidRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d].type is %q: only \"function\" tools are supported", i, t.Type)
		}
		name := t.Function.Name
		param := fmt.Sprintf("tools[%d].function.name", i)
		if name == "" {
			return models.InvalidRequest(param, "tools[%d].function.name is required", i)
		}
		if !toolNameRE.MatchString(name) {
			return models.InvalidRequest(param, "tools[%d].function.name %q is invalid: use 1 to 64 letters, digits, '_', '-' or '.'", i, name)
		}
		if j, dup := seen[name]; dup {
			return models.InvalidRequest(param, "tools[%d].function.name %q repeats tools[%d]: tool names must be unique", i, name, j)
		}
		seen[name] = i
		if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && !bytes.Equal(p, []byte("null")) && p[0] != '{' {
			return models.InvalidRequest(fmt.Sprintf("tools[%d].function.parameters", i), "tools[%d].function.parameters must be a JSON Schema object", i)
		}
	}
	return nil
}

const triggerAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewTrigger returns a fresh trigger signal, <<CALL_ and 8 random
// alphanumerics and >>, from crypto/rand, so that a model cannot produce it
// by accident and a user cannot forge it in a message.
func NewTrigger() string { return "<<CALL_" + RandomString(8) + ">>" }

// RandomString returns n letters and digits from crypto/rand, drawn
// without bias: for triggers and ids.
func RandomString(n int) string {
	out := make([]byte, 0, n)
	var buf [32]byte
	for len(out) < n {
		if _, err := rand.Read(buf[:]); err != nil {
			panic(fmt.Sprintf("crypto/rand: %v", err)) // cannot happen on a working OS
		}
		for _, b := range buf {
			// 248 = 4*62: reject the bytes that would bias the draw.
			if b < 248 && len(out) < n {
				out = append(out, triggerAlphabet[int(b)%len(triggerAlphabet)])
			}
		}
	}
	return string(out)
}

// ThinkingHint is appended to every user message for -thinking models.
const ThinkingHint = "Use <thinking>...</thinking> for hidden reasoning when it helps. Keep your final visible answer outside the thinking tags."

// PromptOptions says what the upstream conversation must carry.
type PromptOptions struct {
	Tools    []models.Tool
	Choice   ToolChoice
	Trigger  string
	Thinking bool
	// SingleCall asks for at most one call per turn (parallel_tool_calls: false).
	SingleCall bool
	// MaxInputLength bounds the characters of all messages together.
	MaxInputLength int
}

// toolsActive reports whether the request exposes its tools to the model.
func (o PromptOptions) toolsActive() bool {
	return len(o.Tools) > 0 && o.Choice.Mode != ChoiceNone
}

// UpstreamMessage is one text message of the upstream conversation.
type UpstreamMessage struct {
	Role string // system, user or assistant
	Text string
}

// BuildConversation turns the OpenAI history into the upstream's text-only
// conversation: one system message first (the gateway's protocol, then the
// client's own system text), tool calls replayed with the trigger and
// <invoke> blocks, tool results as <tool_result> in user messages, and
// consecutive messages of one role merged. Then the oldest history is
// trimmed to MaxInputLength.
func BuildConversation(msgs []models.Message, opts PromptOptions) ([]UpstreamMessage, error) {
	if len(msgs) == 0 {
		return nil, models.InvalidRequest("messages", "messages must contain at least one message")
	}
	var system []string
	if opts.toolsActive() {
		system = append(system, toolPrompt(opts))
	}
	if opts.Thinking {
		system = append(system, thinkingPrompt)
	}

	toolNames := map[string]string{} // tool_call_id -> function name, for results
	var conv []UpstreamMessage
	add := func(role, text string) {
		if n := len(conv); n > 0 && conv[n-1].Role == role {
			conv[n-1].Text += "\n\n" + text
			return
		}
		conv = append(conv, UpstreamMessage{Role: role, Text: text})
	}
	for i, m := range msgs {
		text := flatten(m.Content)
		switch m.Role {
		case "system", "developer":
			if strings.TrimSpace(text) != "" {
				system = append(system, text)
			}
		case "user":
			if opts.Thinking {
				text = strings.TrimRight(text, "\n") + "\n\n" + ThinkingHint
			}
			add("user", text)
		case "assistant":
			var b strings.Builder
			b.WriteString(strings.TrimSpace(text))
			if len(m.ToolCalls) > 0 {
				if b.Len() > 0 {
					b.WriteString("\n\n")
				}
				b.WriteString(opts.Trigger)
				for _, tc := range m.ToolCalls {
					toolNames[tc.ID] = tc.Function.Name
					args := strings.TrimSpace(tc.Function.Arguments)
					if args == "" {
						args = "{}"
					}
					if opts.Trigger == "" {
						// No tools in this request: describe the call in words, so
						// the model has no markup to copy into its answer.
						fmt.Fprintf(&b, "(I called the function %s with %s.)\n", tc.Function.Name, args)
						continue
					}
					// The JSON escape keeps a </invoke> in a string from
					// reading as the end of the block, as the prompt asks.
					args = strings.ReplaceAll(args, "</invoke>", `<\/invoke>`)
					fmt.Fprintf(&b, "\n<invoke name=\"%s\">%s</invoke>", tc.Function.Name, args)
				}
			}
			if text := strings.TrimRight(b.String(), "\n"); text != "" {
				add("assistant", text)
			}
		case "tool", "function":
			id := m.ToolCallID
			name := toolNames[id]
			if m.Role == "function" || name == "" {
				name = m.Name
			}
			add("user", fmt.Sprintf("<tool_result id=%q name=%q>\n%s\n</tool_result>", id, name, text))
		default:
			return nil, models.InvalidRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role %q is not supported: use system, developer, user, assistant or tool", i, m.Role)
		}
	}
	if len(conv) == 0 {
		return nil, models.InvalidRequest("messages", "messages must contain at least one user or assistant message besides the system messages")
	}
	out := make([]UpstreamMessage, 0, len(conv)+1)
	if len(system) > 0 {
		out = append(out, UpstreamMessage{Role: "system", Text: strings.Join(system, "\n\n")})
	}
	out = append(out, conv...)
	return trimHistory(out, opts.MaxInputLength)
}

// trimHistory drops the oldest messages until the conversation fits in
// limit characters. It never drops the system message or the last user
// message, and never leaves a conversation that starts with an assistant
// turn or a tool result. If even that is too long, the request is refused
// with the code agents react to by condensing their context.
func trimHistory(msgs []UpstreamMessage, limit int) ([]UpstreamMessage, error) {
	if limit <= 0 {
		return msgs, nil
	}
	total := 0
	for _, m := range msgs {
		total += utf8.RuneCountInString(m.Text)
	}
	if total <= limit {
		return msgs, nil
	}
	head := 0
	if msgs[0].Role == "system" {
		head = 1
	}
	lastUser := -1
	for i := len(msgs) - 1; i >= head; i-- {
		if msgs[i].Role == "user" {
			lastUser = i
			break
		}
	}
	cut := head // msgs[head:cut] are dropped
	for total > limit && cut < len(msgs)-1 && (lastUser < 0 || cut < lastUser) {
		total -= utf8.RuneCountInString(msgs[cut].Text)
		cut++
	}
	// Start the kept history on a plain user turn where one is left.
	for cut < len(msgs)-1 && (msgs[cut].Role != "user" || strings.HasPrefix(msgs[cut].Text, "<tool_result")) && (lastUser < 0 || cut < lastUser) {
		total -= utf8.RuneCountInString(msgs[cut].Text)
		cut++
	}
	if total > limit {
		return nil, &models.APIError{
			Status: 400, Type: models.ErrInvalidRequest, Code: "context_length_exceeded", Param: "messages",
			Message: fmt.Sprintf("the system prompt and the last user message alone are %d characters, over MAX_INPUT_LENGTH=%d: shorten them or raise MAX_INPUT_LENGTH", total, limit),
		}
	}
	out := make([]UpstreamMessage, 0, len(msgs)-(cut-head))
	out = append(out, msgs[:head]...)
	return append(out, msgs[cut:]...), nil
}

// flatten returns a message's text, with a short marker for every part the
// upstream cannot take.
func flatten(c models.Content) string {
	if len(c.NonText) == 0 {
		return c.Text
	}
	parts := make([]string, 0, len(c.NonText)+1)
	if c.Text != "" {
		parts = append(parts, c.Text)
	}
	for _, t := range c.NonText {
		parts = append(parts, "["+t+" omitted: this model accepts text only]")
	}
	return strings.Join(parts, "\n")
}

const thinkingPrompt = `# Reasoning
You may think step by step before answering. Put that hidden reasoning inside <thinking>...</thinking> tags at the start of your reply; the user does not see it. Write the final visible answer, and any function call, after </thinking>, never inside the tags.`

// toolPrompt is the system prompt that teaches the upstream model the
// trigger protocol and lists the tools.
func toolPrompt(o PromptOptions) string {
	var b strings.Builder
	t := o.Trigger
	fmt.Fprintf(&b, `# Function calling
You are working for a client application that can run functions for you. The functions are listed in <function_list> below. The application runs a function when you call it and sends the result back to you in a <tool_result> block in the next message.

To call a function, write the trigger %[1]s on a line of its own, then one <invoke> block per call, then stop writing:

%[1]s
<invoke name="FUNCTION_NAME">{"parameter": "value"}</invoke>

Rules:
- The body of <invoke> is one JSON object holding the arguments, matching the function's parameters schema. Use strict JSON: double quotes, \n for line breaks inside strings, and <\/invoke> for the text </invoke> inside strings.
`, t)
	if o.SingleCall {
		b.WriteString("- Call at most one function per reply.\n")
	} else {
		b.WriteString("- To call several functions at once, write several <invoke> blocks one after another after a single trigger.\n")
	}
	fmt.Fprintf(&b, `- Write %[1]s only to call a function, never when talking about one.
- After the last </invoke>, stop. Never write a <tool_result> yourself and never guess a function's result: wait for it.
- When no function is needed, answer in plain text without the trigger.
`, t)
	switch o.Choice.Mode {
	case ChoiceRequired:
		fmt.Fprintf(&b, "- In this reply you MUST call at least one function: start your reply with %s.\n", t)
	case ChoiceFunction:
		fmt.Fprintf(&b, "- In this reply you MUST call the function %q: start your reply with %s and <invoke name=%q>.\n", o.Choice.Name, t, o.Choice.Name)
	}
	b.WriteString("\n<function_list>\n")
	for _, tool := range o.Tools {
		f := tool.Function
		fmt.Fprintf(&b, "<function name=%q>\n", f.Name)
		if d := strings.TrimSpace(f.Description); d != "" {
			fmt.Fprintf(&b, "<description>%s</description>\n", d)
		}
		params := compactJSON(f.Parameters)
		if params == "" {
			params = `{"type":"object","properties":{}}`
		}
		fmt.Fprintf(&b, "<parameters>%s</parameters>\n</function>\n", params)
	}
	b.WriteString("</function_list>")
	return b.String()
}

func compactJSON(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}
