package gemini

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/handlers/sse"
	"cursor2api/models"
)

func TestStreamWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(sse.NewWriter(&buf, nil, nil, NoPing), "R", "m", false)
	require.NoError(t, w.Reasoning("hidden"))
	assert.False(t, w.Started(), "a thought not asked for is not sent")
	require.NoError(t, w.Text("a"))
	assert.True(t, w.Started(), "a part goes out as it comes")
	require.NoError(t, w.ToolCallStart("call_1", "f"))
	require.NoError(t, w.ToolCallArguments(`{"x":`))
	require.NoError(t, w.ToolCallArguments(`1}`))
	require.NoError(t, w.ToolCallEnd(true))
	require.NoError(t, w.ToolCallStart("call_2", "g"))
	require.NoError(t, w.ToolCallArguments(`{"y":`))
	require.NoError(t, w.ToolCallEnd(false))
	require.NoError(t, w.Finish(models.FinishToolCalls, models.Usage{InputTokens: 10, OutputTokens: 5, ReasoningTokens: 2, CacheReadTokens: 4}))
	assert.Equal(t, ""+
		`data: {"candidates":[{"content":{"parts":[{"text":"a"}],"role":"model"},"index":0}],"modelVersion":"m","responseId":"R"}`+"\n\n"+
		`data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"call_1","name":"f","args":{"x":1}}}],"role":"model"},"index":0}],"modelVersion":"m","responseId":"R"}`+"\n\n"+
		`data: {"candidates":[{"content":{"parts":[],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"thoughtsTokenCount":2,"cachedContentTokenCount":4,"totalTokenCount":15},"modelVersion":"m","responseId":"R"}`+"\n\n",
		buf.String())
	require.NoError(t, w.Error(&models.Error{Status: 500, Kind: models.KindAPI, Message: "late"}))
	assert.NotContains(t, buf.String(), "late", "nothing follows the finish")
}

func TestStreamWriterEmptyAndError(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(sse.NewWriter(&buf, nil, nil, NoPing), "R", "m", true)
	require.NoError(t, w.Finish(models.FinishLength, models.Usage{}))
	assert.Contains(t, buf.String(), `"parts":[],"role":"model"},"finishReason":"MAX_TOKENS"`, "even an empty answer finishes")

	buf.Reset()
	w = NewStreamWriter(sse.NewWriter(&buf, nil, nil, NoPing), "R", "m", true)
	require.NoError(t, w.Reasoning("think"))
	require.NoError(t, w.Error(&models.Error{Status: 504, Kind: models.KindAPI, Message: "slow"}))
	assert.Equal(t, `data: {"candidates":[{"content":{"parts":[{"text":"think","thought":true}],"role":"model"},"index":0}],"modelVersion":"m","responseId":"R"}`+"\n\n"+
		`data: {"error":{"code":504,"message":"slow","status":"DEADLINE_EXCEEDED"}}`+"\n\n", buf.String(), "Google's error body ends a started stream")
	require.NoError(t, w.PingIfIdle(0))
	assert.NotContains(t, buf.String(), "ping")
}

func TestFromAnswer(t *testing.T) {
	ans := &models.Answer{Thinking: "t", Text: "x", ToolCalls: []models.ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":1}`}}, Finish: models.FinishToolCalls}
	r := FromAnswer("R", "m", ans, true)
	parts := r.Candidates[0].Content.Parts
	require.Len(t, parts, 3)
	assert.True(t, parts[0].Thought)
	assert.Equal(t, "x", *parts[1].Text)
	assert.Equal(t, "call_1", parts[2].FunctionCall.ID)
	assert.Equal(t, "STOP", r.Candidates[0].FinishReason)
	assert.Len(t, FromAnswer("R", "m", ans, false).Candidates[0].Content.Parts, 2, "no thoughts unasked")
}

// TestTextPartMatchesEncodingJSON holds the appended text and thought
// events to what the reflective encoder writes for the same part.
func TestTextPartMatchesEncodingJSON(t *testing.T) {
	texts := []string{
		"plain", `quote " and backslash \`, "new\nline\r\ttab", "\b\f\x00\x01\x1f\x7f", "<html> & 'apostrophe'",
		"é ü 漢字 🎉", "\u2028\u2029", "bad \xff utf-8 \xe2\x82", "\xed\xa0\x80 surrogate",
	}
	for _, names := range [][2]string{{"resp_1", "gemini-2.5-pro"}, {"", ""}, {"odd \"id\"", "model <x>\u2028"}} {
		for _, text := range texts {
			for _, thought := range []bool{false, true} {
				var fast, slow bytes.Buffer
				fw := NewStreamWriter(sse.NewWriter(&fast, nil, nil, NoPing), names[0], names[1], true)
				sw := NewStreamWriter(sse.NewWriter(&slow, nil, nil, NoPing), names[0], names[1], true)
				for range 2 { // the second through the reused buffer
					require.NoError(t, fw.textPart(text, thought))
					require.NoError(t, sw.part(ResponsePart{Text: &text, Thought: thought}))
				}
				require.Equal(t, slow.String(), fast.String(), "%q thought=%v names %q", text, thought, names)
			}
		}
	}
}
