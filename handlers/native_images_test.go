package handlers

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
)

// An image sent through each door by its official client library reaches
// Cursor's run as the user message's image: its bytes, its media type.
func TestNativeImagesThroughEachDoor(t *testing.T) {
	png := nativetest.PNG(3, 2)
	b64 := base64.StdEncoding.EncodeToString(png)
	dataURL := "data:image/png;base64," + b64
	ctx := context.Background()
	doors := []struct {
		name string
		ask  func(t *testing.T, s *stack) string
	}{
		{"openai", func(t *testing.T, s *stack) string {
			c, err := s.sdk("sk-any").Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "composer-2",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
					openai.TextContentPart("what is in this picture?"),
					openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL}),
				})}})
			require.NoError(t, err)
			return c.Choices[0].Message.Content
		}},
		{"anthropic", func(t *testing.T, s *stack) string {
			m, err := s.claude("sk-any").Messages.New(ctx, anthropic.MessageNewParams{Model: "composer-2", MaxTokens: 100,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(
					anthropic.NewTextBlock("what is in this picture?"), anthropic.NewImageBlockBase64("image/png", b64))}})
			require.NoError(t, err)
			return m.Content[0].Text
		}},
		{"responses", func(t *testing.T, s *stack) string {
			r, err := s.sdk("sk-any").Responses.New(ctx, responses.ResponseNewParams{Model: "composer-2",
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
						responses.ResponseInputContentParamOfInputText("what is in this picture?"),
						{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String(dataURL), Detail: responses.ResponseInputImageDetailAuto}},
					}, responses.EasyInputMessageRoleUser),
				}}})
			require.NoError(t, err)
			return r.OutputText()
		}},
		{"gemini", func(t *testing.T, s *stack) string {
			r, err := s.gemini(t, "sk-any").Models.GenerateContent(ctx, "composer-2", []*genai.Content{
				genai.NewContentFromParts([]*genai.Part{genai.NewPartFromText("what is in this picture?"), genai.NewPartFromBytes(png, "image/png")}, genai.RoleUser),
			}, nil)
			require.NoError(t, err)
			return r.Text()
		}},
	}
	for _, door := range doors {
		t.Run(door.name, func(t *testing.T) {
			s, up := newNativeStack(t, func(*agentv1.AgentRunRequest) nativetest.Script {
				return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("A red rectangle.")}}
			})
			assert.Equal(t, "A red rectangle.", door.ask(t, s))
			runs := up.Runs()
			require.Len(t, runs, 1)
			assert.Equal(t, "what is in this picture?", runs[0].UserText(), "no marker for an image that went along")
			imgs := runs[0].Images()
			require.Len(t, imgs, 1)
			assert.Equal(t, png, imgs[0].GetData())
			assert.Equal(t, "image/png", imgs[0].GetMimeType())
		})
	}
}

// Claude Code's Read of a picture: the tool_result carries the image, and
// it goes back to the parked call as MCP image content.
func TestNativeToolResultImageThroughMessages(t *testing.T) {
	shot := nativetest.PNG(4, 4)
	s, up := newNativeStack(t, func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.ToolCalls(nativetest.Call{Tool: "read_file", Args: map[string]any{"path": "shot.png"}}),
			nativetest.Text("I see a red square."),
		}}
	})
	ctx := context.Background()
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "read_file",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}}}}}
	first := anthropic.NewUserMessage(anthropic.NewTextBlock("read shot.png"))
	m, err := s.claude("sk-any").Messages.New(ctx, anthropic.MessageNewParams{Model: "composer-2", MaxTokens: 100, Tools: tools,
		Messages: []anthropic.MessageParam{first}})
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonToolUse, m.StopReason)
	var use anthropic.ToolUseBlock
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			use = b.AsToolUse()
		}
	}
	require.NotEmpty(t, use.ID)
	result := anthropic.ToolResultBlockParam{ToolUseID: use.ID, Content: []anthropic.ToolResultBlockParamContentUnion{
		{OfImage: &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{
			OfBase64: &anthropic.Base64ImageSourceParam{MediaType: "image/png", Data: base64.StdEncoding.EncodeToString(shot)}}}},
	}}
	m, err = s.claude("sk-any").Messages.New(ctx, anthropic.MessageNewParams{Model: "composer-2", MaxTokens: 100, Tools: tools,
		Messages: []anthropic.MessageParam{first, m.ToParam(), anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfToolResult: &result})}})
	require.NoError(t, err)
	assert.Equal(t, "I see a red square.", m.Content[0].Text)

	runs := up.Runs()
	require.Len(t, runs, 1, "the parked run went on")
	content := runs[0].LastResult()
	require.Len(t, content, 2, "a text, then the image")
	assert.Equal(t, shot, content[1].GetImage().GetData())
	assert.Equal(t, "image/png", content[1].GetImage().GetMimeType())
}

// TestClaudeCodeCLIReadsAPictureNative: Claude Code's Read of a PNG
// answers with the image itself, which reaches the run as an image: MCP
// image content of the resumed call, or image content of the replayed
// history's tool result.
func TestClaudeCodeCLIReadsAPictureNative(t *testing.T) {
	bin := claudeBinary(t)
	for _, mode := range parkModes {
		t.Run(mode.name, func(t *testing.T) {
			work := t.TempDir()
			pic := filepath.Join(work, "shot.png")
			require.NoError(t, os.WriteFile(pic, nativetest.PNG(8, 8), 0o644))
			s, up := newNativeStackEnv(t, mode.env, agentModel([]agentStep{
				{"Looking at it.", nativetest.Call{Tool: "Read", Args: map[string]any{"file_path": pic}}},
			}, "It is a red square."))
			out := runClaude(t, bin, s.URL, work, "What is in shot.png?", "Read")
			assert.Equal(t, "It is a red square.", gjson.GetBytes(out, "result").String(), "%s", out)
			assert.NotContains(t, s.logs.String(), "status=4", "none of Claude Code's requests was refused")

			runs := up.Runs()
			var mimes []string
			if mode.resumed {
				require.Len(t, runs, 1, "%s", out)
				for _, img := range runs[0].ResultImages() {
					assert.NotEmpty(t, img.GetData())
					mimes = append(mimes, img.GetMimeType())
				}
			} else {
				require.Len(t, runs, 2, "%s", out)
				for _, m := range runs[1].Request.GetAction().GetUserMessageAction().GetConversationHistory().GetMessages() {
					for _, c := range m.GetTool().GetContent() {
						if img := c.GetImage(); img != nil {
							_, err := base64.StdEncoding.DecodeString(img.GetData())
							assert.NoError(t, err, "history images are base64")
							mimes = append(mimes, img.GetMimeType())
						}
					}
				}
			}
			require.Len(t, mimes, 1, "the picture reached the run: %s", out)
			assert.Contains(t, []string{"image/png", "image/jpeg", "image/webp"}, mimes[0])
		})
	}
}

// TestGeminiCLIReadsAPictureNative: Gemini CLI's read_file of a PNG sends
// the picture with its functionResponse; it reaches the run as the
// result's image.
func TestGeminiCLIReadsAPictureNative(t *testing.T) {
	work := t.TempDir()
	pic := filepath.Join(work, "shot.png")
	require.NoError(t, os.WriteFile(pic, nativetest.PNG(8, 8), 0o644))
	s, up := newNativeStackEnv(t, nil, agentModel([]agentStep{
		{"Looking at it.", nativetest.Call{Tool: "read_file", Args: map[string]any{"file_path": pic}}},
	}, "It is a red square."))
	out := runGemini(t, s, work, "What is in shot.png?", "-m", "composer-2")
	assert.Contains(t, string(out), "It is a red square.")
	assert.NotContains(t, s.logs.String(), "status=4", "none of Gemini CLI's requests was refused")

	runs := up.Runs()
	require.Len(t, runs, 1, "%s", out)
	images := runs[0].ResultImages()
	require.Len(t, images, 1, "the picture reached the run: %s", out)
	assert.Equal(t, nativetest.PNG(8, 8), images[0].GetData())
	assert.Equal(t, "image/png", images[0].GetMimeType())
}

// TestCodexCLISendsAPictureNative: codex exec -i attaches a picture to
// the prompt (an input_image); it reaches the run as its image.
func TestCodexCLISendsAPictureNative(t *testing.T) {
	bin := codexBinary(t)
	catalog := filepath.Join(t.TempDir(), "catalog.json")
	require.NoError(t, os.WriteFile(catalog, []byte(codexCatalog), 0o600))
	work := t.TempDir()
	pic := filepath.Join(work, "shot.png")
	require.NoError(t, os.WriteFile(pic, nativetest.PNG(8, 8), 0o644))
	s, up := newNativeStackEnv(t, nil, agentModel(nil, "It is a red square."))
	out := runCodex(t, bin, s.URL, work, `model_catalog_json = "`+catalog+`"`, "What is in this picture?", "--image="+pic)
	assert.Contains(t, string(out), "It is a red square.")
	assert.NotContains(t, s.logs.String(), "status=4", "none of Codex's requests was refused")

	runs := up.Runs()
	require.Len(t, runs, 1, "%s", out)
	imgs := runs[0].Images()
	require.Len(t, imgs, 1, "the picture reached the run: %s", out)
	assert.NotEmpty(t, imgs[0].GetData())
	assert.Contains(t, []string{"image/png", "image/jpeg", "image/webp"}, imgs[0].GetMimeType())
}
