package toolproto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"cursor2api/models"
	"cursor2api/utils"
)

// NewTrigger returns a fresh trigger signal, <<CALL_ and 8 random
// alphanumerics and >>, from crypto/rand, so that a model cannot produce it
// by accident and a user cannot forge it in a message.
func NewTrigger() string { return "<<CALL_" + utils.RandomString(utils.Alphanumerics, 8) + ">>" }

// ThinkingHint is appended to every user message for thinking turns.
const ThinkingHint = "Use <thinking>...</thinking> for hidden reasoning when it helps. Keep your final visible answer outside the thinking tags."

// PromptOptions says what the upstream conversation must carry.
type PromptOptions struct {
	Tools    []models.Tool
	Choice   models.ToolChoice
	Trigger  string
	Thinking bool
	// SingleCall asks for at most one call per turn.
	SingleCall bool
	// MaxInputLength bounds the characters of all messages together.
	MaxInputLength int
}

// ToolsActive reports whether the request exposes its tools to the model.
func (o PromptOptions) ToolsActive() bool {
	return len(o.Tools) > 0 && o.Choice.Mode != models.ChoiceNone
}

// BuildConversation turns the history into text turns: one system message
// (the protocol, then the client's), calls replayed as <invoke> blocks,
// results as <tool_result>, thinking dropped, same-role turns merged, and
// the oldest history trimmed to MaxInputLength.
func BuildConversation(msgs []models.Message, opts PromptOptions) ([]models.Turn, error) {
	if len(msgs) == 0 {
		return nil, models.InvalidRequest("messages", "messages must contain at least one message")
	}
	var system []string
	if opts.ToolsActive() {
		system = append(system, toolPrompt(opts))
	}
	if opts.Thinking {
		system = append(system, thinkingPrompt)
	}

	toolNames := map[string]string{} // tool call id -> function name, for results
	var conv []models.Turn
	// Merged texts are collected in parts and joined once, so that a
	// history of many short messages costs linear time.
	var pending []string
	flush := func() {
		if len(pending) > 0 {
			conv[len(conv)-1].Text = strings.Join(pending, "\n\n")
			pending = pending[:0]
		}
	}
	add := func(role models.Role, text string) {
		if n := len(conv); n > 0 && conv[n-1].Role == role {
			pending = append(pending, text)
			return
		}
		flush()
		conv = append(conv, models.Turn{Role: role})
		pending = append(pending, text)
	}
	for _, m := range msgs {
		text := flatten(m.Blocks)
		switch m.Role {
		case models.RoleSystem:
			if strings.TrimSpace(text) != "" {
				system = append(system, text)
			}
		case models.RoleUser:
			if opts.Thinking {
				text = strings.TrimRight(text, "\n") + "\n\n" + ThinkingHint
			}
			add(models.RoleUser, text)
		case models.RoleAssistant:
			if text := replayAssistant(m, text, opts.Trigger, toolNames); text != "" {
				add(models.RoleAssistant, text)
			}
		case models.RoleTool:
			name := toolNames[m.ToolCallID]
			if name == "" {
				name = m.ToolName
			}
			// A failure is marked, as Anthropic's is_error marks it: the
			// error text alone can read like a result.
			status := ""
			if m.IsError {
				status = ` status="error"`
			}
			add(models.RoleUser, fmt.Sprintf("<tool_result id=%q name=%q%s>\n%s\n</tool_result>", m.ToolCallID, name, status, text))
		default:
			return nil, models.InvalidRequest("messages", "message role %q is not supported", m.Role)
		}
	}
	flush()
	if len(conv) == 0 {
		return nil, models.InvalidRequest("messages", "messages must contain at least one user or assistant message besides the system messages")
	}
	out := make([]models.Turn, 0, len(conv)+1)
	if len(system) > 0 {
		out = append(out, models.Turn{Role: models.RoleSystem, Text: strings.Join(system, "\n\n")})
	}
	out = append(out, conv...)
	return trimHistory(out, opts.MaxInputLength)
}

// replayAssistant writes an assistant message as the model would have
// written it under the protocol, noting each call's name by id for the
// results that follow.
func replayAssistant(m models.Message, text, trigger string, toolNames map[string]string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(text))
	if calls := m.ToolCalls(); len(calls) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(trigger)
		for _, tc := range calls {
			toolNames[tc.ID] = tc.Name
			args := strings.TrimSpace(tc.Arguments)
			if args == "" {
				args = "{}"
			}
			if trigger == "" {
				// No tools in this request: describe the call in words, so
				// the model has no markup to copy into its answer.
				fmt.Fprintf(&b, "(I called the function %s with %s.)\n", tc.Name, args)
				continue
			}
			// The JSON escape keeps a </invoke> in a string from reading
			// as the end of the block, as the prompt asks.
			args = strings.ReplaceAll(args, invokeClose, `<\/invoke>`)
			fmt.Fprintf(&b, "\n%s name=\"%s\">%s%s", invokeOpen, tc.Name, args, invokeClose)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// trimHistory drops the oldest messages until the conversation fits in
// limit characters. It never drops the system message or the last user
// message, and never leaves a conversation that starts with an assistant
// turn or a tool result. If even that is too long, the request is refused
// with the code agents react to by condensing their context.
func trimHistory(msgs []models.Turn, limit int) ([]models.Turn, error) {
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
	if msgs[0].Role == models.RoleSystem {
		head = 1
	}
	lastUser := -1
	for i := len(msgs) - 1; i >= head; i-- {
		if msgs[i].Role == models.RoleUser {
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
	for cut < len(msgs)-1 && (msgs[cut].Role != models.RoleUser || strings.HasPrefix(msgs[cut].Text, "<tool_result")) && (lastUser < 0 || cut < lastUser) {
		total -= utf8.RuneCountInString(msgs[cut].Text)
		cut++
	}
	if total > limit {
		return nil, &models.Error{
			Status: 400, Kind: models.KindInvalidRequest, Code: "context_length_exceeded", Param: "messages",
			Message: fmt.Sprintf("the system prompt and the last user message alone are %d characters, over MAX_INPUT_LENGTH=%d: shorten them or raise MAX_INPUT_LENGTH", total, limit),
		}
	}
	out := make([]models.Turn, 0, len(msgs)-(cut-head))
	out = append(out, msgs[:head]...)
	return append(out, msgs[cut:]...), nil
}

// flatten returns a message's text, with a short marker for every part the
// upstream cannot take. Thinking and tool calls are not text.
func flatten(blocks []models.Block) string {
	if len(blocks) == 1 && blocks[0].Kind == models.BlockText {
		return blocks[0].Text
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		switch b.Kind {
		case models.BlockText:
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		case models.BlockMedia:
			parts = append(parts, "["+b.Text+" omitted: this model accepts text only]")
		case models.BlockImage:
			parts = append(parts, "[image omitted: this model accepts text only]")
		}
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
You are working for a client application that can run functions for you. The functions are listed in <function_list> below. The application runs a function when you call it and sends the result back to you in a <tool_result> block in the next message, marked status="error" when the function failed.

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
	case models.ChoiceRequired:
		fmt.Fprintf(&b, "- In this reply you MUST call at least one function: start your reply with %s.\n", t)
	case models.ChoiceFunction:
		fmt.Fprintf(&b, "- In this reply you MUST call the function %q: start your reply with %s and <invoke name=%q>.\n", o.Choice.Name, t, o.Choice.Name)
	}
	b.WriteString("\n<function_list>\n")
	for _, f := range o.Tools {
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

// RetryBadCallsNote asks the model to call again after calls that could
// not be run; names are the declared functions.
func RetryBadCallsNote(names []string, trigger string) string {
	return fmt.Sprintf("Call again with a declared function (%s) and arguments that match its parameters schema, in the format %s followed by <invoke name=\"...\">{json}</invoke>.",
		strings.Join(names, ", "), trigger)
}

// RetryMissingCallNote asks the model for the call its reply lacked.
func RetryMissingCallNote(trigger string) string {
	return fmt.Sprintf("this reply MUST call a function. Start it with %s followed by an <invoke> block, as the system prompt describes.", trigger)
}
