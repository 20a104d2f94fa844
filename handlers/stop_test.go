package handlers

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// TestStopSequencesOpenAI: the chat door's stop, a string or an array,
// is the core's stop sequences, as Anthropic's and Gemini's are.
func TestStopSequencesOpenAI(t *testing.T) {
	turn := []string{"one, two, thr", "ee, fo", "ur, END", "-OF-LIST five, six"}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, turn))
			params := openai.ChatCompletionNewParams{
				Model:    "claude-sonnet-4.6",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Count")},
				Stop:     openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"never", "END-OF-LIST"}},
			}
			var text, finish string
			if m.streaming {
				acc, _, _, err := accumulate(t, s.sdk("sk-any").Chat.Completions.NewStreaming(context.Background(), params))
				require.NoError(t, err)
				text, finish = acc.Choices[0].Message.Content, acc.Choices[0].FinishReason
			} else {
				res, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), params)
				require.NoError(t, err)
				text, finish = res.Choices[0].Message.Content, res.Choices[0].FinishReason
			}
			assert.Equal(t, "one, two, three, four, ", text)
			assert.Equal(t, "stop", finish)
		})
	}
	s := newStack(t, nil, script(t, turn))
	r := s.chat(t, `{"model":"claude-sonnet-4.6","stop":"two","messages":[{"role":"user","content":"Count"}]}`)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "one, ", gjson.Get(r.body, "choices.0.message.content").String(), "a single string")
	r = s.chat(t, `{"model":"claude-sonnet-4.6","stop":7,"messages":[{"role":"user","content":"Count"}]}`)
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, "stop", gjson.Get(r.body, "error.param").String())
}
