package handlers

import (
	"bytes"
	"context"
	"encoding/base64"
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

// Images sent inline through every door, as the official libraries send
// them, to the web chat, which takes text only: each reaches the upstream
// as the omitted-image note, and none of its data does.

// e2ePNG is a 1×1 PNG in standard base64.
const e2ePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="

const imageNote = "[image omitted: this model accepts text only]"

// assertImagesOmitted checks the one upstream request: as many notes as
// images (notes), the prompt containing each of want, and no image data
// anywhere in the body.
func assertImagesOmitted(t *testing.T, s *stack, notes int, want ...string) {
	t.Helper()
	reqs := s.up.Requests()
	require.Len(t, reqs, 1)
	assert.False(t, bytes.Contains(reqs[0].Body, []byte(e2ePNG[:24])), "no image data upstream: %s", reqs[0].Body)
	var all []string
	for _, m := range reqs[0].Messages {
		all = append(all, m.Text)
	}
	prompt := strings.Join(all, "\n")
	assert.Equal(t, notes, strings.Count(prompt, imageNote), "%s", prompt)
	for _, w := range want {
		assert.Contains(t, prompt, w)
	}
}

func TestImagesE2EChatCompletions(t *testing.T) {
	image := func(mediaType string) openai.ChatCompletionContentPartUnionParam {
		return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:" + mediaType + ";base64," + e2ePNG, Detail: "auto"})
	}
	t.Run("to a text-only upstream", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"A red dot."}))
		res, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "claude-sonnet-4.6",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("What is in this image?"), image("image/png"),
				openai.TextContentPart("And in this one?"), image("image/jpeg"),
			})},
		})
		require.NoError(t, err)
		assert.Equal(t, "A red dot.", res.Choices[0].Message.Content)
		// The door keeps the client's order of text and images.
		assertImagesOmitted(t, s, 2, "What is in this image?\n"+imageNote+"\nAnd in this one?\n"+imageNote)
	})
	t.Run("a media type the gateway does not pass on", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"unused"}))
		_, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "claude-sonnet-4.6",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("What is this?"), image("image/bmp"),
			})},
		})
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
		assert.Equal(t, "invalid_request_error", apiErr.Type)
		assert.Equal(t, "messages[0].content[1].image_url.url", apiErr.Param)
		assert.Contains(t, apiErr.Message, `"image/bmp" is not one a model takes: use image/png, image/jpeg, image/gif, image/webp`)
		assert.Empty(t, s.up.Requests())
	})
}

func TestImagesE2EResponses(t *testing.T) {
	image := func(mediaType string) responses.ResponseFunctionCallOutputItemUnionParam {
		return responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{
			ImageURL: openai.String("data:" + mediaType + ";base64," + e2ePNG), Detail: responses.ResponseInputImageContentDetailAuto,
		}}
	}
	items := func(mediaType string) responses.ResponseNewParamsInputUnion {
		return itemsInput(
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				{OfInputText: &responses.ResponseInputTextParam{Text: "Look at this:"}},
				{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("data:image/png;base64," + e2ePNG), Detail: responses.ResponseInputImageDetailAuto}},
				{OfInputText: &responses.ResponseInputTextParam{Text: "then read a.png."}},
			}, responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfFunctionCall(`{"path":"a.png"}`, "call_1", "read_file"),
			responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: openai.String("call_1"),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfResponseFunctionCallOutputItemArray: responses.ResponseFunctionCallOutputItemListParam{
					{OfInputText: &responses.ResponseInputTextContentParam{Text: "a.png:"}}, image(mediaType),
				}},
			}},
		)
	}
	t.Run("to a text-only upstream", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"Two red dots."}))
		res, err := s.sdk("sk-any").Responses.New(context.Background(), responses.ResponseNewParams{
			Model: "claude-sonnet-4.6", Input: items("image/webp"), Tools: respTools,
		})
		require.NoError(t, err)
		assert.Equal(t, "Two red dots.", res.OutputText())
		assertImagesOmitted(t, s, 2, "Look at this:\n"+imageNote+"\nthen read a.png.", "a.png:\n"+imageNote)
	})
	t.Run("a media type the gateway does not pass on", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"unused"}))
		_, err := s.sdk("sk-any").Responses.New(context.Background(), responses.ResponseNewParams{
			Model: "claude-sonnet-4.6", Input: items("image/svg+xml"), Tools: respTools,
		})
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
		assert.Equal(t, "invalid_request_error", apiErr.Type)
		assert.Equal(t, "input[2].output[1].image_url", apiErr.Param)
		assert.Contains(t, apiErr.Message, `"image/svg+xml"`)
		assert.Empty(t, s.up.Requests())
	})
}

func TestImagesE2EAnthropic(t *testing.T) {
	// Claude Code's Read of an image: the tool_result's content is the
	// image, and the user may add one of their own.
	params := func(mediaType string) anthropic.MessageNewParams {
		return anthropic.MessageNewParams{
			Model: "claude-sonnet-4.6", MaxTokens: 1024, Tools: claudeTools,
			Messages: []anthropic.MessageParam{
				userText("Read a.png"),
				anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_1", map[string]any{"path": "a.png"}, "read_file")),
				anthropic.NewUserMessage(
					anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{ToolUseID: "toolu_1", Content: []anthropic.ToolResultBlockParamContentUnion{
						{OfImage: &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{OfBase64: &anthropic.Base64ImageSourceParam{
							MediaType: anthropic.Base64ImageSourceMediaType(mediaType), Data: e2ePNG,
						}}}},
					}}},
					anthropic.NewTextBlock("Compare it with this:"),
					anthropic.NewImageBlockBase64("image/gif", e2ePNG),
				),
			},
		}
	}
	t.Run("to a text-only upstream", func(t *testing.T) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				s := newStack(t, nil, script(t, []string{"Both are red dots."}))
				msg := claudeAsk(t, s.claude("sk-any"), m.streaming, params("image/png"))
				require.Len(t, msg.Content, 1)
				assert.Equal(t, "Both are red dots.", msg.Content[0].Text)
				assertImagesOmitted(t, s, 2, `<tool_result id="toolu_1" name="read_file">`, "Compare it with this:\n"+imageNote)
			})
		}
	})
	t.Run("a media type the gateway does not pass on", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"unused"}))
		_, err := s.claude("sk-any").Messages.New(context.Background(), params("image/heic"))
		assertClaudeError(t, err, http.StatusBadRequest, "invalid_request_error", "messages.2.content.0.content.0.source:", `"image/heic" is not one a model takes: use image/png, image/jpeg, image/gif, image/webp`)
		assert.Empty(t, s.up.Requests())
	})
}

func TestImagesE2EGemini(t *testing.T) {
	png, err := base64.StdEncoding.DecodeString(e2ePNG)
	require.NoError(t, err)
	contents := func(result []byte, mediaType string) []*genai.Content {
		return []*genai.Content{
			{Role: genai.RoleUser, Parts: []*genai.Part{genai.NewPartFromText("Read a.png, and look at this:"), genai.NewPartFromBytes(png, "image/png")}},
			{Role: genai.RoleModel, Parts: []*genai.Part{genai.NewPartFromFunctionCall("read_file", map[string]any{"path": "a.png"})}},
			{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
				Name: "read_file", Response: map[string]any{"output": "a.png:"},
				Parts: []*genai.FunctionResponsePart{genai.NewFunctionResponsePartFromBytes(result, mediaType)},
			}}}},
		}
	}
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "read_file", Parameters: &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{"path": {Type: genai.TypeString}}},
	}}}}}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, []string{"Both are red dots."}))
			resp, err := geminiAsk(t, s.gemini(t, "sk-any"), m.streaming, "gemini-3-flash", contents(png, "image/jpeg"), cfg)
			require.NoError(t, err)
			assert.Equal(t, "Both are red dots.", resp.Text())
			assertImagesOmitted(t, s, 2, "Read a.png, and look at this:\n"+imageNote, "a.png:\n"+imageNote)
		})
	}
	t.Run("an image without data", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"unused"}))
		_, err := geminiAsk(t, s.gemini(t, "sk-any"), false, "gemini-3-flash", contents(nil, "image/png"), cfg)
		assertGeminiError(t, err, http.StatusBadRequest, "INVALID_ARGUMENT", "contents[2].parts[0].functionResponse.parts[0].inlineData")
		assertGeminiError(t, err, http.StatusBadRequest, "INVALID_ARGUMENT", "the image has no data")
		assert.Empty(t, s.up.Requests())
	})
}
