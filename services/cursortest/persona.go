package cursortest

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The web chat's 2026 "docs" persona: own tools (read_file, read_dir),
// native tool frames, refusals of work not about Cursor, and answers cut at
// its output cap. The helpers here build those replies; Text and Frames
// stay the plain answers of earlier years.

// ToolInput says how a native call's input travels in the stream.
type ToolInput uint8

const (
	// InputWhole: tool-input-start, then tool-input-available with the
	// whole input, then the server's tool-output-available (a tool the
	// server has, such as read_file).
	InputWhole ToolInput = iota
	// InputDeltas: tool-input-start, the input's text in tool-input-delta
	// pieces, then tool-input-available.
	InputDeltas
	// InputError: tool-input-start, tool-input-delta pieces, then
	// tool-input-error (a tool the server lacks, or input it cannot parse:
	// input is then the raw text, as a JSON string) and tool-output-error.
	InputError
	// InputDeltasOnly: tool-input-start and tool-input-delta pieces,
	// nothing more.
	InputDeltasOnly
)

// NativeCall is a tool call the persona makes natively.
type NativeCall struct {
	ID, Name string
	// Input is the input's JSON text as the model wrote it; it need not
	// be valid.
	Input string
	How   ToolInput
}

// DocsRefusals are refusals of the docs persona, as public gateways'
// issue trackers quote them.
var DocsRefusals = []string{
	"I can only help with questions about Cursor, the AI code editor. Is there anything about Cursor I can help you with?",
	"I'm a documentation assistant for Cursor, so I can't write that poem. I can help you find information in the Cursor docs.",
	"I'm only able to answer questions related to Cursor and its features.",
	"I'm here to help with questions about Cursor. That request falls outside the scope of what I can help with.",
}

// Refusal is a reply that refuses with text.
func Refusal(text string) Response { return Text(nil, text) }

// ToolCalls is a reply that makes calls natively and finishes
// "tool-calls", with no text.
func ToolCalls(usage *Usage, calls ...NativeCall) Response {
	return Persona("tool-calls", usage, nil, calls...)
}

// EmptyToolCalls is a reply that finishes "tool-calls" with neither text
// nor a call.
func EmptyToolCalls() Response { return Persona("tool-calls", nil, nil) }

// Persona is a whole reply of the persona: text deltas (in one text part),
// then calls, then finish with reason and usage (nil: none), then [DONE].
func Persona(reason string, usage *Usage, deltas []string, calls ...NativeCall) Response {
	ev := []string{`{"type":"start","messageId":"msg_fake"}`, `{"type":"start-step"}`}
	if len(deltas) > 0 {
		ev = append(ev, `{"type":"text-start","id":"t0"}`)
		for _, d := range deltas {
			ev = append(ev, frame("text-delta", "t0", d))
		}
		ev = append(ev, `{"type":"text-end","id":"t0"}`)
	}
	for _, c := range calls {
		ev = append(ev, ToolFrames(c)...)
	}
	ev = append(ev, `{"type":"finish-step"}`, Finish(reason, usage), "[DONE]")
	return Response{Events: ev}
}

// Finish is a finish frame with reason and usage (nil: none).
func Finish(reason string, usage *Usage) string {
	if usage == nil {
		return fmt.Sprintf(`{"type":"finish","finishReason":%q}`, reason)
	}
	return fmt.Sprintf(`{"type":"finish","finishReason":%q,"messageMetadata":{"usage":{"inputTokens":%d,"outputTokens":%d,"totalTokens":%d}}}`,
		reason, usage.Input, usage.Output, usage.Input+usage.Output)
}

// ToolFrames are the frames of one native call, as the AI SDK writes them.
func ToolFrames(c NativeCall) []string {
	start := encode(struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
		ToolName   string `json:"toolName"`
	}{"tool-input-start", c.ID, c.Name})
	ev := []string{start}
	if c.How != InputWhole {
		for _, piece := range split(c.Input, 5) {
			ev = append(ev, encode(struct {
				Type           string `json:"type"`
				ToolCallID     string `json:"toolCallId"`
				InputTextDelta string `json:"inputTextDelta"`
			}{"tool-input-delta", c.ID, piece}))
		}
	}
	input := json.RawMessage(c.Input)
	if !json.Valid(input) {
		input, _ = json.Marshal(c.Input) // what the SDK does with input it cannot parse
	}
	switch c.How {
	case InputWhole, InputDeltas:
		ev = append(ev, encode(struct {
			Type       string          `json:"type"`
			ToolCallID string          `json:"toolCallId"`
			ToolName   string          `json:"toolName"`
			Input      json.RawMessage `json:"input"`
		}{"tool-input-available", c.ID, c.Name, input}))
		if c.How == InputWhole {
			ev = append(ev, encode(struct {
				Type       string `json:"type"`
				ToolCallID string `json:"toolCallId"`
				Output     string `json:"output"`
			}{"tool-output-available", c.ID, "# Cursor docs\n"}))
		}
	case InputError:
		errorText := fmt.Sprintf("Model tried to call unavailable tool '%s'. Available tools: read_file, read_dir.", c.Name)
		ev = append(ev, encode(struct {
			Type       string          `json:"type"`
			ToolCallID string          `json:"toolCallId"`
			ToolName   string          `json:"toolName"`
			Input      json.RawMessage `json:"input"`
			ErrorText  string          `json:"errorText"`
		}{"tool-input-error", c.ID, c.Name, input, errorText}), encode(struct {
			Type       string `json:"type"`
			ToolCallID string `json:"toolCallId"`
			ErrorText  string `json:"errorText"`
		}{"tool-output-error", c.ID, errorText}))
	}
	return ev
}

// RestartWord, as LengthCapped's overlap, has a continuation start again
// at the beginning of the word the cut fell in.
const RestartWord = -1

// LengthCapped answers with full in replies of at most capBytes that finish
// "length" while more remains. A continuation gets the rest, starting
// overlap bytes early (or RestartWord) to test stitching; an assistant turn
// that is not a prefix of full gets a 400: the gateway stitched wrong.
func LengthCapped(full string, capBytes, overlap int, usage *Usage) func(int, Request) Response {
	return func(_ int, req Request) Response {
		sofar := ""
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "assistant" {
				sofar = req.Messages[i].Text
				break
			}
		}
		if !strings.HasPrefix(full, sofar) {
			return Response{Status: 400, Body: fmt.Sprintf(`{"error":"continuation does not match the answer: %q"}`, sofar)}
		}
		start := runeStart(full, max(0, len(sofar)-overlap))
		if overlap == RestartWord {
			start = strings.LastIndexAny(sofar, " \n") + 1
		}
		end := runeStart(full, min(len(full), len(sofar)+capBytes))
		reason := "stop"
		if end < len(full) {
			reason = "length"
		}
		return Persona(reason, usage, split(full[start:end], 7))
	}
}

// runeStart moves i back to the start of the character it falls in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// split cuts s into pieces of about n bytes, whole characters each.
func split(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i := runeStart(s, min(n, len(s)))
		if i == 0 {
			_, i = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// encode is a frame as the upstream writes it: keys in order, no HTML
// escapes.
func encode(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}
