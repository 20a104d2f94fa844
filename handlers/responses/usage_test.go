package responses

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/models"
)

// TestUsageRendering holds a response's usage, in a stream's terminal
// event and in a whole response, to the details the Responses API always
// sends: cached prompt and reasoning output tokens.
func TestUsageRendering(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage models.Usage
		want  string
	}{
		{"text back door", models.Usage{InputTokens: 10, OutputTokens: 3, TotalTokens: 13},
			`{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":13}`},
		{"cache and reasoning", models.Usage{InputTokens: 1000, OutputTokens: 200, TotalTokens: 1200, CacheReadTokens: 600, CacheWriteTokens: 150, ReasoningTokens: 80},
			`{"input_tokens":1000,"input_tokens_details":{"cached_tokens":600},"output_tokens":200,"output_tokens_details":{"reasoning_tokens":80},"total_tokens":1200}`},
	} {
		for _, finish := range []struct {
			reason        models.FinishReason
			event, status string
		}{
			{models.FinishStop, "response.completed", StatusCompleted},
			{models.FinishLength, "response.incomplete", StatusIncomplete},
		} {
			t.Run(tc.name+"/"+finish.event, func(t *testing.T) {
				w, buf := newTestWriter(nil)
				require.NoError(t, w.Text("hi"))
				require.NoError(t, w.Finish(finish.reason, tc.usage))
				evs := parseEvents(t, buf.String())
				last := evs[len(evs)-1]
				require.Equal(t, finish.event, last.Name)
				assert.Equal(t, tc.want, last.Data.Get("response.usage").Raw, "streamed")

				base := NewResponse("resp_x", 1700000000, &Request{Model: "m"})
				r := FromAnswer(base, &models.Answer{Text: "hi", Finish: finish.reason, Usage: tc.usage}, nil)
				assert.Equal(t, finish.status, r.Status)
				whole, err := json.Marshal(r)
				require.NoError(t, err)
				assert.Equal(t, tc.want, gjson.GetBytes(whole, "usage").Raw, "whole")
			})
		}
	}
}
