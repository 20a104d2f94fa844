package handlers

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"
)

// TestToolSchemaBoundsE2E: a tool schema nested 1,000 levels deep (37 KB)
// took seconds to compile; the doors refuse it before, naming the tool.
func TestToolSchemaBoundsE2E(t *testing.T) {
	const levels = 1000
	t.Run("chat completions", func(t *testing.T) {
		deep := map[string]any{"type": "string"}
		for range levels {
			deep = map[string]any{"type": "object", "properties": map[string]any{"a": deep}}
		}
		s := newStack(t, nil, script(t, []string{"unused"}))
		_, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    "claude-sonnet-4.6",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			Tools: []openai.ChatCompletionToolUnionParam{
				openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "ok", Parameters: openai.FunctionParameters{"type": "object"}}),
				openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "deep", Parameters: deep}),
			},
		})
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
		assert.Equal(t, "tools[1].function.parameters", apiErr.Param)
		assert.Contains(t, apiErr.Message, "tools[1].function.parameters: the schema nests deeper than 64 levels")
		assert.Empty(t, s.up.Requests())
	})
	t.Run("gemini", func(t *testing.T) {
		deep := &genai.Schema{Type: genai.TypeString}
		for range levels {
			deep = &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{"a": deep}}
		}
		s := newStack(t, nil, script(t, []string{"unused"}))
		cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "deep", Parameters: deep}}}}}
		_, err := geminiAsk(t, s.gemini(t, "sk-any"), false, "gemini-3-flash", geminiUser("hi"), cfg)
		assertGeminiError(t, err, http.StatusBadRequest, "INVALID_ARGUMENT", "nests deeper than 64 levels")
		assert.Empty(t, s.up.Requests())
	})
}
