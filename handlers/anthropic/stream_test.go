package anthropic

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/handlers/sse"
	"cursor2api/models"
)

// events returns the names and data lines of a written stream.
func events(body string) []string {
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		out = append(out, strings.ReplaceAll(strings.TrimPrefix(ev, "event: "), "\ndata: ", " "))
	}
	return out
}

func TestStreamWriterLazyStartAndPing(t *testing.T) {
	var buf bytes.Buffer
	started := false
	w := NewStreamWriter(sse.NewWriter(&buf, nil, func() { started = true }, Ping), "msg_1", "m", 7)
	assert.False(t, w.Started())
	require.NoError(t, w.PingIfIdle(0))
	assert.True(t, started)
	assert.Equal(t, "event: ping\ndata: {\"type\": \"ping\"}\n\n", buf.String(), "Anthropic's own keepalive")
}

func TestStreamWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(sse.NewWriter(&buf, nil, nil, Ping), "msg_1", "claude-x", 7)
	require.NoError(t, w.Reasoning("think"))
	require.NoError(t, w.Text("Hi #"))
	require.NoError(t, w.ToolCallStart("call_abc", "read"))
	require.NoError(t, w.ToolCallArguments(`{"p":`))
	require.NoError(t, w.ToolCallArguments(`1}`))
	require.NoError(t, w.ToolCallEnd(true))
	require.NoError(t, w.Finish(models.FinishToolCalls, models.Usage{InputTokens: 10, OutputTokens: 3}))
	require.NoError(t, w.Error(&models.Error{Kind: models.KindAPI, Message: "late"}), "nothing after the end")
	got := events(buf.String())
	require.Len(t, got, 14, "%q", got)
	assert.Equal(t, []string{
		`message_start {"message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}},"type":"message_start"}`,
		`content_block_start {"content_block":{"signature":"","thinking":"","type":"thinking"},"index":0,"type":"content_block_start"}`,
		`content_block_delta {"delta":{"thinking":"think","type":"thinking_delta"},"index":0,"type":"content_block_delta"}`,
	}, got[:3])
	assert.Regexp(t, `^content_block_delta \{"delta":\{"signature":"\w+","type":"signature_delta"\},"index":0`, got[3])
	assert.Equal(t, []string{
		`content_block_stop {"index":0,"type":"content_block_stop"}`,
		`content_block_start {"content_block":{"text":"","type":"text"},"index":1,"type":"content_block_start"}`,
		`content_block_delta {"delta":{"text":"Hi #","type":"text_delta"},"index":1,"type":"content_block_delta"}`,
		`content_block_stop {"index":1,"type":"content_block_stop"}`,
		`content_block_start {"content_block":{"id":"toolu_abc","input":{},"name":"read","type":"tool_use"},"index":2,"type":"content_block_start"}`,
		`content_block_delta {"delta":{"partial_json":"{\"p\":","type":"input_json_delta"},"index":2,"type":"content_block_delta"}`,
		`content_block_delta {"delta":{"partial_json":"1}","type":"input_json_delta"},"index":2,"type":"content_block_delta"}`,
		`content_block_stop {"index":2,"type":"content_block_stop"}`,
		`message_delta {"delta":{"stop_reason":"tool_use","stop_sequence":null},"type":"message_delta","usage":{"input_tokens":10,"output_tokens":3}}`,
		`message_stop {"type":"message_stop"}`,
	}, got[4:])
}

// TestStreamWriterStopSequence: the core cuts the text and names the
// sequence met (chat.StopSequenceSink); the door says so.
func TestStreamWriterStopSequence(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(sse.NewWriter(&buf, nil, nil, Ping), "msg_1", "m", 1)
	require.NoError(t, w.Text("done "))
	w.StopSequence("STOP")
	require.NoError(t, w.Finish(models.FinishStopSequence, models.Usage{}))
	body := buf.String()
	assert.Contains(t, body, `"text":"done "`)
	assert.Contains(t, body, `"stop_reason":"stop_sequence","stop_sequence":"STOP"`)
}

func TestStreamWriterErrorAfterStart(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(sse.NewWriter(&buf, nil, nil, Ping), "msg_1", "m", 1)
	require.NoError(t, w.Text("partial"))
	require.NoError(t, w.Error(&models.Error{Kind: models.KindOverloaded, Message: "busy"}))
	got := events(buf.String())
	assert.Equal(t, `error {"type":"error","error":{"type":"overloaded_error","message":"busy"}}`, got[len(got)-1])
	assert.True(t, w.Closed(), "no ping after the error")
}

func TestFromAnswer(t *testing.T) {
	ans := &models.Answer{Text: "Looking.", Thinking: "plan", Finish: models.FinishToolCalls, Usage: models.Usage{InputTokens: 5, OutputTokens: 2},
		ToolCalls: []models.ToolCall{{ID: "call_x1", Name: "read", Arguments: `{"p":1}`}}}
	r := FromAnswer("msg_1", "m", ans)
	assert.Equal(t, "tool_use", *r.StopReason)
	assert.Nil(t, r.StopSequence)
	require.Len(t, r.Content, 3)
	assert.Equal(t, "thinking", r.Content[0]["type"])
	assert.Equal(t, TextBlock("Looking."), r.Content[1])
	assert.Equal(t, ToolUseBlock("toolu_x1", "read", []byte(`{"p":1}`)), r.Content[2])
	assert.Equal(t, Usage{InputTokens: 5, OutputTokens: 2}, r.Usage)

	r = FromAnswer("msg_1", "m", &models.Answer{Text: "Loo", Finish: models.FinishStopSequence, StopSequence: "king"})
	assert.Equal(t, "stop_sequence", *r.StopReason)
	assert.Equal(t, "king", *r.StopSequence)
	require.Len(t, r.Content, 1)
	assert.Equal(t, TextBlock("Loo"), r.Content[0])

	r = FromAnswer("msg_1", "m", &models.Answer{Finish: models.FinishStop})
	assert.Equal(t, "end_turn", *r.StopReason)
	assert.NotNil(t, r.Content)
	assert.Empty(t, r.Content)
}

func TestStreamWriterDropsAnIncompleteCall(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(sse.NewWriter(&buf, nil, nil, Ping), "msg_1", "m", 1)
	require.NoError(t, w.Text("Writing."))
	require.NoError(t, w.ToolCallStart("call_1", "write"))
	require.NoError(t, w.ToolCallArguments(`{"path": "a/b`))
	assert.NotContains(t, buf.String(), "tool_use", "nothing of a call before its end")
	require.NoError(t, w.ToolCallEnd(false))
	require.NoError(t, w.Text("\n[The call was cut off.]"))
	require.NoError(t, w.Finish(models.FinishToolCalls, models.Usage{}))
	body := buf.String()
	assert.NotContains(t, body, "tool_use", "the incomplete call never reaches the client")
	assert.NotContains(t, body, "a/b")
	assert.Contains(t, body, `"stop_reason":"end_turn"`, "no tool_use stop without a tool_use block")
	got := events(body)
	assert.Equal(t, []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
		names(got), "one text block holds the text and the note")
}

func names(events []string) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i], _, _ = strings.Cut(e, " ")
	}
	return out
}

// TestDeltaMatchesEncodingJSON holds the appended delta events to what
// Event writes for the same event as a map, for every delta type and
// texts with every special case.
func TestDeltaMatchesEncodingJSON(t *testing.T) {
	texts := []string{
		"plain", `quote " and backslash \`, "new\nline\r\ttab", "\b\f\x00\x01\x1f\x7f", "<html> & 'apostrophe'",
		"é ü 漢字 🎉", "\u2028\u2029", "bad \xff utf-8 \xe2\x82", "\xed\xa0\x80 surrogate", strings.Repeat("long <&> ", 9000),
	}
	for _, kind := range [][2]string{{"text_delta", "text"}, {"thinking_delta", "thinking"}, {"input_json_delta", "partial_json"}, {"signature_delta", "signature"}} {
		for _, text := range texts {
			for _, index := range []int{0, 7, 12345} {
				var fast, slow bytes.Buffer
				w := NewStreamWriter(sse.NewWriter(&fast, nil, nil, nil), "msg_x", "m", 1)
				w.index = index
				require.NoError(t, w.delta(kind[0], kind[1], text))
				require.NoError(t, w.delta(kind[0], kind[1], text), "the reused buffer")
				ref := sse.NewWriter(&slow, nil, nil, nil)
				for range 2 {
					require.NoError(t, ref.Event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": kind[0], kind[1]: text}}))
				}
				require.Equal(t, slow.String(), fast.String(), "%s %q", kind[0], text)
			}
		}
	}
}

func BenchmarkTextDelta(b *testing.B) {
	w := NewStreamWriter(sse.NewWriter(io.Discard, nil, nil, nil), "msg_x", "claude-sonnet-4.6", 10)
	require.NoError(b, w.Text("open"))
	text := strings.Repeat("abcdefgh", 32)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		_ = w.Text(text)
	}
}
