package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"
)

// TestBadImageDataE2E: an inline image whose data is not base64 is a 400
// naming its part on every door, as README says, before any back door is
// asked (the web chat, which sends no image, made it a marker).
func TestBadImageDataE2E(t *testing.T) {
	const bad = "not*base64"
	t.Run("chat completions", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"unused"}))
		_, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "claude-sonnet-4.6",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("What is this?"), openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + bad}),
			})},
		})
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
		assert.Equal(t, "messages[0].content[1].image_url.url", apiErr.Param)
		assert.Contains(t, apiErr.Message, "not base64")
		assert.Empty(t, s.up.Requests())
	})
	t.Run("responses", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"unused"}))
		_, err := s.sdk("sk-any").Responses.New(context.Background(), responses.ResponseNewParams{
			Model: "claude-sonnet-4.6",
			Input: itemsInput(responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				{OfInputText: &responses.ResponseInputTextParam{Text: "Look:"}},
				{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("data:image/png;base64," + bad), Detail: responses.ResponseInputImageDetailAuto}},
			}, responses.EasyInputMessageRoleUser)),
		})
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
		assert.Equal(t, "input[0].content[1].image_url", apiErr.Param)
		assert.Contains(t, apiErr.Message, "not base64")
		assert.Empty(t, s.up.Requests())
	})
	t.Run("anthropic", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"unused"}))
		_, err := s.claude("sk-any").Messages.New(context.Background(), anthropic.MessageNewParams{
			Model: "claude-sonnet-4.6", MaxTokens: 1024,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is this?"), anthropic.NewImageBlockBase64("image/png", bad))},
		})
		assertClaudeError(t, err, http.StatusBadRequest, "invalid_request_error", "messages.0.content.1.source:", "not base64")
		assert.Empty(t, s.up.Requests())
	})
}

// TestGeminiEmptyPartE2E: Gemini refuses a part with no data ({}) with
// INVALID_ARGUMENT; so does the door, naming the part.
func TestGeminiEmptyPartE2E(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"unused"}))
	contents := []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{genai.NewPartFromText("hi"), {}}}}
	for _, m := range modes {
		_, err := geminiAsk(t, s.gemini(t, "sk-any"), m.streaming, "gemini-3-flash", contents, nil)
		assertGeminiError(t, err, http.StatusBadRequest, "INVALID_ARGUMENT", "contents[0].parts[1] is empty")
	}
	_, err := s.gemini(t, "sk-any").Models.CountTokens(context.Background(), "gemini-3-flash", contents, nil)
	assertGeminiError(t, err, http.StatusBadRequest, "INVALID_ARGUMENT", "contents[0].parts[1]")
	assert.Empty(t, s.up.Requests())
}

// TestMaxAnswerBytesE2E: a reply longer than MAX_ANSWER_BYTES ends at it
// with each door's length reason, whole or streamed.
func TestMaxAnswerBytesE2E(t *testing.T) {
	long := strings.Repeat("0123456789", 1000) // 10,000 bytes in one delta
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, map[string]string{"MAX_ANSWER_BYTES": "4096"}, script(t, []string{long, long}))
			msg := claudeAsk(t, s.claude("sk-any"), m.streaming, anthropic.MessageNewParams{
				Model: "claude-sonnet-4.6", MaxTokens: 8000, Messages: []anthropic.MessageParam{userText("count")},
			})
			require.Len(t, msg.Content, 1)
			assert.Equal(t, long[:4096], msg.Content[0].Text)
			assert.Equal(t, anthropic.StopReasonMaxTokens, msg.StopReason)
		})
	}
	s := newStack(t, map[string]string{"MAX_ANSWER_BYTES": "4096"}, script(t, []string{long, long}))
	res, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "claude-sonnet-4.6", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count")},
	})
	require.NoError(t, err)
	assert.Equal(t, long[:4096], res.Choices[0].Message.Content)
	assert.Equal(t, "length", res.Choices[0].FinishReason)
}
