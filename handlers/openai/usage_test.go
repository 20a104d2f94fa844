package openai

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

// TestUsageRendering holds a chat completion's usage, in a stream's usage
// chunk and a whole answer, to OpenAI's fields: cached and reasoning tokens
// in the details, which are left out when the back door has no such counts.
func TestUsageRendering(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage models.Usage
		want  string
	}{
		{"text back door", models.Usage{InputTokens: 10, OutputTokens: 3, TotalTokens: 13},
			`{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}`},
		{"cache and reasoning", models.Usage{InputTokens: 1000, OutputTokens: 200, TotalTokens: 1200, CacheReadTokens: 600, CacheWriteTokens: 150, ReasoningTokens: 80},
			`{"prompt_tokens":1000,"completion_tokens":200,"total_tokens":1200,"prompt_tokens_details":{"cached_tokens":600},"completion_tokens_details":{"reasoning_tokens":80}}`},
		{"cache written only: OpenAI has no field for it", models.Usage{InputTokens: 100, OutputTokens: 5, TotalTokens: 105, CacheWriteTokens: 90},
			`{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105}`},
		{"reasoning only", models.Usage{InputTokens: 100, OutputTokens: 50, TotalTokens: 150, ReasoningTokens: 40},
			`{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,"completion_tokens_details":{"reasoning_tokens":40}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewStreamWriter(sse.NewWriter(&buf, nil, nil, nil), "chatcmpl-1", "m", 1700000000, true)
			require.NoError(t, w.Text("hi"))
			require.NoError(t, w.Finish(models.FinishStop, tc.usage))
			events := strings.Split(strings.TrimSuffix(buf.String(), "\n\n"), "\n\n")
			require.GreaterOrEqual(t, len(events), 3)
			require.Equal(t, "data: [DONE]", events[len(events)-1])
			last := gjson.Parse(strings.TrimPrefix(events[len(events)-2], "data: "))
			assert.Equal(t, "[]", last.Get("choices").Raw, "the usage chunk has no choice")
			assert.Equal(t, tc.want, last.Get("usage").Raw, "streamed")

			whole, err := json.Marshal(FromAnswer("chatcmpl-1", "m", 1700000000, &models.Answer{Text: "hi", Finish: models.FinishStop, Usage: tc.usage}))
			require.NoError(t, err)
			assert.Equal(t, tc.want, gjson.GetBytes(whole, "usage").Raw, "whole")
		})
	}
}
