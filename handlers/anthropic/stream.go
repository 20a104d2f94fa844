package anthropic

import (
	"encoding/json"
	"strconv"

	"cursor2api/handlers/door"
	"cursor2api/handlers/sse"
	"cursor2api/models"
	"cursor2api/utils"
)

// Ping is the keepalive of a Messages stream, the event Anthropic itself
// sends.
var Ping = []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n")

// blockKind is the type of the open content block.
type blockKind uint8

const (
	blockNone blockKind = iota
	blockText
	blockThinking
	blockToolUse
)

// StreamWriter is a chat.Sink that writes the answer as a Messages stream
// of named events, from message_start to message_stop.
//
// A tool call goes out only once complete: the SDKs run a cut-off input
// anyway (the Go SDK makes it {}, the TypeScript SDK parses what it can),
// so an invalid call must never reach the client.
type StreamWriter struct {
	*sse.Writer
	id, model   string
	inputTokens int
	stopSeq     string // the stop sequence that ended the answer

	started bool      // message_start is written
	open    blockKind // the type of the open block
	index   int       // the index of the next block

	door.HeldCall     // the call being received, not yet sent
	calls         int // tool_use blocks sent

	buf []byte // reused for every delta event
}

// NewStreamWriter returns a writer for one response on w. inputTokens is
// the estimate message_start reports; message_delta has the final count.
func NewStreamWriter(w *sse.Writer, id, model string, inputTokens int) *StreamWriter {
	return &StreamWriter{Writer: w, id: id, model: model, inputTokens: inputTokens}
}

// StopSequence takes the stop sequence that ended the answer, for
// message_delta's stop_sequence (it makes the writer a
// chat.StopSequenceSink).
func (s *StreamWriter) StopSequence(seq string) { s.stopSeq = seq }

// NewMessageID returns a message id.
func NewMessageID() string { return "msg_" + utils.RandomString(utils.Alphanumerics, 24) }

// ToolUseID gives a core call id ("call_…") Anthropic's toolu_ prefix.
func ToolUseID(id string) string { return utils.CallIDAs("toolu_", id) }

// signature stands in for the signature Anthropic puts on thinking: the
// gateway has none to give, and clients only send it back.
func signature() string { return "c2a" + utils.RandomString(utils.Alphanumerics, 40) }

func (s *StreamWriter) start() error {
	if s.started {
		return nil
	}
	s.started = true
	return s.Event("message_start", messageStart{Type: "message_start", Message: Response{
		ID: s.id, Type: "message", Role: "assistant", Model: s.model, Content: []ResponseBlock{},
		Usage: Usage{InputTokens: s.inputTokens, OutputTokens: 1},
	}})
}

// messageStop is message_stop's data, which never changes.
var messageStop = []byte(`{"type":"message_stop"}`)

// messageStart and messageDelta are their events' data, their fields in
// the order of sorted keys, as Anthropic's own streams (and maps) have
// them; structs rather than maps spare the reflective encoder its sorting.
type messageStart struct {
	Message Response `json:"message"`
	Type    string   `json:"type"`
}

type messageDelta struct {
	Delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Type  string     `json:"type"`
	Usage DeltaUsage `json:"usage"`
}

// openBlock closes the open block unless it is of kind, and opens one of
// kind with its content_block_start.
func (s *StreamWriter) openBlock(kind blockKind, block ResponseBlock) error {
	if err := s.start(); err != nil {
		return err
	}
	if s.open == kind && kind != blockToolUse {
		return nil
	}
	if err := s.closeBlock(); err != nil {
		return err
	}
	s.open = kind
	return s.Event("content_block_start", map[string]any{"type": "content_block_start", "index": s.index, "content_block": block})
}

// closeBlock ends the open block, a thinking block with its signature.
func (s *StreamWriter) closeBlock() error {
	switch s.open {
	case blockNone:
		return nil
	case blockThinking:
		if err := s.delta("signature_delta", "signature", signature()); err != nil {
			return err
		}
	}
	s.open = blockNone
	b := append(s.buf[:0], `{"index":`...)
	b = strconv.AppendInt(b, int64(s.index), 10)
	s.buf = append(b, `,"type":"content_block_stop"}`...)
	s.index++
	return s.EventJSON("content_block_stop", s.buf)
}

// delta writes a content_block_delta of the open block. It is the stream's
// hot event, so it appends to a reused buffer the bytes Event would write
// for the same map, without reflection.
func (s *StreamWriter) delta(kind, field, value string) error {
	b := append(s.buf[:0], `{"delta":{"`...)
	b = append(b, field...) // text, thinking, partial_json, signature: all sort before "type"
	b = append(b, `":`...)
	b = sse.AppendString(b, value)
	b = append(b, `,"type":"`...)
	b = append(b, kind...)
	b = append(b, `"},"index":`...)
	b = strconv.AppendInt(b, int64(s.index), 10)
	b = append(b, `,"type":"content_block_delta"}`...)
	s.buf = b
	if cap(s.buf) > 64<<10 {
		s.buf = nil // keep no huge buffer for the rest of the stream
	}
	return s.EventJSON("content_block_delta", b)
}

// Text writes a text_delta, opening a text block if need be.
func (s *StreamWriter) Text(text string) error {
	if text == "" {
		return nil
	}
	if s.open != blockText { // the block is built only when it opens
		if err := s.openBlock(blockText, ResponseBlock{"type": "text", "text": ""}); err != nil {
			return err
		}
	}
	return s.delta("text_delta", "text", text)
}

// Reasoning writes a thinking_delta, opening a thinking block if need be.
func (s *StreamWriter) Reasoning(text string) error {
	if text == "" {
		return nil
	}
	if s.open != blockThinking {
		if err := s.openBlock(blockThinking, ResponseBlock{"type": "thinking", "thinking": "", "signature": ""}); err != nil {
			return err
		}
	}
	return s.delta("thinking_delta", "thinking", text)
}

// ToolCallEnd sends a complete call as a tool_use block whose input
// starts empty and is filled by input_json_delta events; an incomplete
// one is dropped.
func (s *StreamWriter) ToolCallEnd(complete bool) error {
	call, ok := s.EndCall(complete)
	if !ok {
		return nil
	}
	if err := s.openBlock(blockToolUse, map[string]any{"type": "tool_use", "id": ToolUseID(call.ID), "name": call.Name, "input": json.RawMessage("{}")}); err != nil {
		return err
	}
	for _, f := range call.Fragments {
		if err := s.delta("input_json_delta", "partial_json", f); err != nil {
			return err
		}
	}
	s.calls++
	return s.closeBlock()
}

// Finish closes the open block and writes message_delta and message_stop.
func (s *StreamWriter) Finish(r models.FinishReason, usage models.Usage) error {
	if err := s.start(); err != nil {
		return err
	}
	if err := s.closeBlock(); err != nil {
		return err
	}
	if r == models.FinishToolCalls && s.calls == 0 {
		r = models.FinishStop // every call was dropped
	}
	reason, seq := stopReason(r, s.stopSeq)
	md := messageDelta{Type: "message_delta", Usage: deltaUsageOf(usage)}
	md.Delta.StopReason, md.Delta.StopSequence = reason, seq
	if err := s.Event("message_delta", md); err != nil {
		return err
	}
	s.Close()
	return s.EventJSON("message_stop", messageStop)
}

// Error ends a stream that has already started with an error event.
func (s *StreamWriter) Error(e *models.Error) error {
	if s.Closed() {
		return nil
	}
	s.Close()
	return s.Event("error", ErrorBodyOf(e))
}

// stopReason names why the message ended, with the stop sequence met.
func stopReason(r models.FinishReason, stopSeq string) (string, *string) {
	switch r {
	case models.FinishStopSequence:
		return "stop_sequence", &stopSeq
	case models.FinishToolCalls:
		return "tool_use", nil
	case models.FinishLength:
		return "max_tokens", nil
	}
	return "end_turn", nil
}

// usageOf renders the core's usage, whose InputTokens is the whole prompt,
// in Anthropic's convention.
func usageOf(u models.Usage) Usage {
	d := deltaUsageOf(u)
	return Usage{
		InputTokens: d.InputTokens, OutputTokens: d.OutputTokens,
		CacheCreationInputTokens: d.CacheCreationInputTokens, CacheReadInputTokens: d.CacheReadInputTokens,
		OutputTokensDetails: d.OutputTokensDetails,
	}
}

func deltaUsageOf(u models.Usage) DeltaUsage {
	d := DeltaUsage{
		// A back door whose cache counts exceed its prompt count is wrong
		// somewhere; a negative count would be worse for the client.
		InputTokens:              max(0, u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens),
		OutputTokens:             u.OutputTokens,
		CacheCreationInputTokens: u.CacheWriteTokens,
		CacheReadInputTokens:     u.CacheReadTokens,
	}
	if u.ReasoningTokens > 0 {
		d.OutputTokensDetails = &OutputTokensDetails{ThinkingTokens: u.ReasoningTokens}
	}
	return d
}

// FromAnswer builds a non-streaming message: thinking (when shown), text,
// then the tool calls (the core has cut the answer at a stop sequence).
func FromAnswer(id, model string, ans *models.Answer) Response {
	content := []ResponseBlock{}
	if ans.Thinking != "" {
		content = append(content, ThinkingBlock(ans.Thinking, signature()))
	}
	for _, run := range ans.ToolRuns {
		content = append(content, MCPToolUseBlock(run), MCPToolResultBlock(run))
	}
	if ans.Text != "" {
		content = append(content, TextBlock(ans.Text))
	}
	for _, c := range ans.ToolCalls {
		content = append(content, ToolUseBlock(ToolUseID(c.ID), c.Name, json.RawMessage(c.Arguments)))
	}
	reason, seq := stopReason(ans.Finish, ans.StopSequence)
	return Response{
		ID: id, Type: "message", Role: "assistant", Model: model, Content: content,
		StopReason: &reason, StopSequence: seq,
		Usage: usageOf(ans.Usage),
	}
}
