package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/handlers/sse"
	"cursor2api/models"
)

// TestUsageRendering holds a message's usage to Anthropic's convention
// (input_tokens excludes the cache) in message_start, message_delta (cache
// fields and details only when not zero) and a whole message.
func TestUsageRendering(t *testing.T) {
	for _, tc := range []struct {
		name         string
		usage        models.Usage
		delta, whole string
	}{
		{"text back door", models.Usage{InputTokens: 10, OutputTokens: 3, TotalTokens: 13},
			`{"input_tokens":10,"output_tokens":3}`,
			`{"input_tokens":10,"output_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}`},
		{"cache and reasoning", models.Usage{InputTokens: 1000, OutputTokens: 200, TotalTokens: 1200, CacheReadTokens: 600, CacheWriteTokens: 150, ReasoningTokens: 80},
			`{"input_tokens":250,"output_tokens":200,"cache_creation_input_tokens":150,"cache_read_input_tokens":600,"output_tokens_details":{"thinking_tokens":80}}`,
			`{"input_tokens":250,"output_tokens":200,"cache_creation_input_tokens":150,"cache_read_input_tokens":600,"output_tokens_details":{"thinking_tokens":80}}`},
		{"the whole prompt read from the cache", models.Usage{InputTokens: 500, OutputTokens: 5, TotalTokens: 505, CacheReadTokens: 500},
			`{"input_tokens":0,"output_tokens":5,"cache_read_input_tokens":500}`,
			`{"input_tokens":0,"output_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":500}`},
		{"cache counts over the prompt count no negative input", models.Usage{InputTokens: 10, OutputTokens: 1, TotalTokens: 11, CacheWriteTokens: 30},
			`{"input_tokens":0,"output_tokens":1,"cache_creation_input_tokens":30}`,
			`{"input_tokens":0,"output_tokens":1,"cache_creation_input_tokens":30,"cache_read_input_tokens":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewStreamWriter(sse.NewWriter(&buf, nil, nil, Ping), "msg_1", "m", 7)
			require.NoError(t, w.Text("hi"))
			require.NoError(t, w.Finish(models.FinishStop, tc.usage))
			got := map[string]gjson.Result{}
			for _, ev := range events(buf.String()) {
				name, data, _ := strings.Cut(ev, " ")
				got[name] = gjson.Parse(data)
			}
			assert.Equal(t, `{"input_tokens":7,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}`,
				got["message_start"].Get("message.usage").Raw, "message_start has the estimate")
			assert.Equal(t, tc.delta, got["message_delta"].Get("usage").Raw, "message_delta")

			whole, err := json.Marshal(FromAnswer("msg_1", "m", &models.Answer{Text: "hi", Finish: models.FinishStop, Usage: tc.usage}))
			require.NoError(t, err)
			assert.Equal(t, tc.whole, gjson.GetBytes(whole, "usage").Raw, "whole")
		})
	}
}
