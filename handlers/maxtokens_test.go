package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// longAnswer is 64 deltas of 16 bytes: 1 KB, about 256 tokens.
var longAnswer = func() []string {
	d := make([]string, 64)
	for i := range d {
		d[i] = "0123456789abcde "
	}
	return d
}()

// TestMaxTokensOpenAI drives max_tokens and max_completion_tokens with
// the OpenAI library, streamed and not: the answer is cut at the bound
// (four bytes a token, the usage estimate), says "length", and the
// upstream is no longer read.
func TestMaxTokensOpenAI(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params func(*openai.ChatCompletionNewParams)
		want   int // bytes of text
		finish string
	}{
		{"max_tokens", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(10) }, 40, "length"},
		{"max_completion_tokens", func(p *openai.ChatCompletionNewParams) { p.MaxCompletionTokens = openai.Int(20) }, 80, "length"},
		{"both: max_completion_tokens wins", func(p *openai.ChatCompletionNewParams) {
			p.MaxCompletionTokens, p.MaxTokens = openai.Int(5), openai.Int(1000)
		}, 20, "length"},
		{"a bound the answer stays under", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(1000) }, 1024, "stop"},
	} {
		for _, m := range modes {
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				s := newStack(t, nil, script(t, longAnswer))
				params := openai.ChatCompletionNewParams{
					Model:    "claude-sonnet-4.6",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Count")},
				}
				tc.params(&params)
				var text, finish string
				if m.streaming {
					params.StreamOptions.IncludeUsage = openai.Bool(true)
					acc, _, _, err := accumulate(t, s.sdk("sk-any").Chat.Completions.NewStreaming(context.Background(), params))
					require.NoError(t, err)
					require.Len(t, acc.Choices, 1)
					text, finish = acc.Choices[0].Message.Content, acc.Choices[0].FinishReason
					if finish == "length" {
						assert.LessOrEqual(t, acc.Usage.CompletionTokens, int64(tc.want/4))
					}
				} else {
					res, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), params)
					require.NoError(t, err)
					require.Len(t, res.Choices, 1)
					text, finish = res.Choices[0].Message.Content, res.Choices[0].FinishReason
				}
				assert.Equal(t, strings.Join(longAnswer, "")[:tc.want], text)
				assert.Equal(t, tc.finish, finish)
			})
		}
	}
}

// TestMaxTokensAnthropic: max_tokens, which Anthropic requires, bounds
// thinking and text together and ends the message with "max_tokens".
func TestMaxTokensAnthropic(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, scriptWith(t, nil, []string{"Let me count."}, longAnswer))
			msg := claudeAsk(t, s.claude("sk-any"), m.streaming, anthropic.MessageNewParams{
				Model:     "claude-sonnet-4.6",
				MaxTokens: 10,
				Thinking:  anthropic.ThinkingConfigParamOfEnabled(1024),
				Messages:  []anthropic.MessageParam{userText("Count")},
			})
			assert.Equal(t, anthropic.StopReasonMaxTokens, msg.StopReason)
			var thinking, text string
			for _, b := range msg.Content {
				switch b.Type {
				case "thinking":
					thinking += b.Thinking
				case "text":
					text += b.Text
				}
			}
			assert.Equal(t, "Let me count.", thinking)
			assert.Equal(t, strings.Join(longAnswer, "")[:40-len(thinking)], text, "thinking and text share the bound")
			assert.LessOrEqual(t, msg.Usage.OutputTokens, int64(10))
		})
	}
}

// TestMaxTokensInvalid: a bound below one is the client's mistake, named
// by its own field.
func TestMaxTokensInvalid(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"unused"}))
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model":"claude-sonnet-4.6","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{"/v1/chat/completions", `{"model":"claude-sonnet-4.6","max_completion_tokens":-5,"messages":[{"role":"user","content":"hi"}]}`, "max_completion_tokens"},
	} {
		r := s.do(t, http.MethodPost, tc.path, tc.body)
		assertAPIError(t, r, http.StatusBadRequest, "invalid_request_error", tc.param, "", tc.param, "at least 1")
	}
	assert.Empty(t, s.up.Requests(), "nothing reached the upstream")
}

// TestMaxOutputTokensResponses: a response cut at max_output_tokens is
// incomplete, with incomplete_details.reason "max_output_tokens", its
// message incomplete, the stream ending with response.incomplete; it is
// stored, so previous_response_id can follow it.
func TestMaxOutputTokensResponses(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, longAnswer))
			params := responses.ResponseNewParams{
				Model:           "claude-sonnet-4.6",
				Input:           userInput("Count"),
				MaxOutputTokens: openai.Int(10),
			}
			var res *responses.Response
			if m.streaming {
				out, err := readStream(t, s.sdk("sk-any").Responses.NewStreaming(context.Background(), params))
				require.NoError(t, err)
				types := out.Types()
				assert.Equal(t, []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"}, types[len(types)-4:])
				assert.Equal(t, "response.incomplete", out.Snapshot.TerminalEvent)
				require.NotNil(t, out.Final)
				res = out.Final
			} else {
				var err error
				res, err = s.sdk("sk-any").Responses.New(context.Background(), params)
				require.NoError(t, err)
			}
			assert.Equal(t, responses.ResponseStatusIncomplete, res.Status)
			assert.Equal(t, "max_output_tokens", res.IncompleteDetails.Reason)
			assert.Equal(t, strings.Join(longAnswer, "")[:40], res.OutputText())
			require.Len(t, res.Output, 1)
			assert.Equal(t, "incomplete", string(res.Output[0].Status))
			assert.EqualValues(t, 10, res.MaxOutputTokens)

			got, err := s.sdk("sk-any").Responses.Get(context.Background(), res.ID, responses.ResponseGetParams{})
			require.NoError(t, err, "an incomplete response is stored")
			assert.Equal(t, responses.ResponseStatusIncomplete, got.Status)
			assert.Equal(t, res.OutputText(), got.OutputText())
		})
	}
	s := newStack(t, nil, script(t, []string{"unused"}))
	r := s.do(t, http.MethodPost, "/v1/responses", `{"model":"claude-sonnet-4.6","input":"hi","max_output_tokens":0}`)
	require.Equal(t, http.StatusBadRequest, r.status, r.body)
	assert.Equal(t, "max_output_tokens", gjson.Get(r.body, "error.param").String())
}
