package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests drive the gateway with the official OpenAI Go library, so
// that what it returns is checked by the parser real clients use.

func openaiClient(g *gateway) openai.Client {
	return openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("Current weather of a city"),
	Parameters: shared.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []string{"city"},
	},
})

const weatherCall = "TRIGGER\n<invoke name=\"get_weather\">{\"city\": \"Paris\"}</invoke>"
const twoCalls = "TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>\n<invoke name=\"get_weather\">{\"city\":\"Rome\"}</invoke>"

func TestOpenAIClientPlainText(t *testing.T) {
	g := newGateway(t, nil, replyWith("Hello", ", world", "!"))
	client := openaiClient(g)
	res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "claude-sonnet-4.6",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello")},
	})
	require.NoError(t, err)
	require.Len(t, res.Choices, 1)
	assert.Equal(t, "Hello, world!", res.Choices[0].Message.Content)
	assert.Equal(t, "stop", res.Choices[0].FinishReason)
	assert.Equal(t, "claude-sonnet-4.6", res.Model)
	assert.EqualValues(t, 150, res.Usage.TotalTokens)
	assert.Equal(t, "anthropic/claude-sonnet-4.6", g.upstream.Requests()[0].Model)
}

func TestOpenAIClientStreamedText(t *testing.T) {
	g := newGateway(t, nil, replyWith("Str", "eam", "ed <b>text</b>"))
	client := openaiClient(g)
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "claude-sonnet-4.6",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Stream please")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	require.NoError(t, stream.Err())
	assert.Greater(t, chunks, 3)
	require.Len(t, acc.Choices, 1)
	assert.Equal(t, "Streamed <b>text</b>", acc.Choices[0].Message.Content)
	assert.Equal(t, "stop", acc.Choices[0].FinishReason)
	assert.EqualValues(t, 150, acc.Usage.TotalTokens)
}

func TestOpenAIClientToolCall(t *testing.T) {
	g := newGateway(t, nil, replyWith("Let me check.\n", weatherCall))
	client := openaiClient(g)
	res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "claude-sonnet-4.6",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools:    []openai.ChatCompletionToolUnionParam{weatherTool},
	})
	require.NoError(t, err)
	msg := res.Choices[0].Message
	assert.Equal(t, "tool_calls", res.Choices[0].FinishReason)
	require.Len(t, msg.ToolCalls, 1)
	call := msg.ToolCalls[0]
	assert.True(t, strings.HasPrefix(call.ID, "call_"), call.ID)
	assert.Equal(t, "get_weather", call.Function.Name)
	var args map[string]string
	require.NoError(t, json.Unmarshal([]byte(call.Function.Arguments), &args))
	assert.Equal(t, map[string]string{"city": "Paris"}, args)
	assert.Equal(t, "Let me check.", msg.Content)

	// The system prompt the upstream got lists the tool and the trigger.
	sys := g.upstream.Requests()[0].Messages[0]
	assert.Equal(t, "system", sys.Role)
	assert.Contains(t, sys.Text, "<function_list>")
	assert.Contains(t, sys.Text, `<function name="get_weather">`)
	assert.Regexp(t, triggerRE, sys.Text)
}

func TestOpenAIClientParallelToolCalls(t *testing.T) {
	params := openai.ChatCompletionNewParams{
		Model:    "claude-sonnet-4.6",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris and Rome?")},
		Tools:    []openai.ChatCompletionToolUnionParam{weatherTool},
	}
	check := func(t *testing.T, calls []openai.ChatCompletionMessageToolCallUnion) {
		require.Len(t, calls, 2)
		assert.Equal(t, `{"city":"Paris"}`, calls[0].Function.Arguments)
		assert.Equal(t, `{"city":"Rome"}`, calls[1].Function.Arguments)
		assert.NotEqual(t, calls[0].ID, calls[1].ID)
	}
	t.Run("non-streaming", func(t *testing.T) {
		g := newGateway(t, nil, replyWith(twoCalls))
		client := openaiClient(g)
		res, err := client.Chat.Completions.New(context.Background(), params)
		require.NoError(t, err)
		check(t, res.Choices[0].Message.ToolCalls)
	})
	t.Run("streaming", func(t *testing.T) {
		g := newGateway(t, nil, replyWith(twoCalls[:20], twoCalls[20:70], twoCalls[70:]))
		client := openaiClient(g)
		stream := client.Chat.Completions.NewStreaming(context.Background(), params)
		acc := openai.ChatCompletionAccumulator{}
		var finished []string
		for stream.Next() {
			acc.AddChunk(stream.Current())
			if tc, ok := acc.JustFinishedToolCall(); ok {
				finished = append(finished, tc.Name+tc.Arguments)
			}
		}
		require.NoError(t, stream.Err())
		check(t, acc.Choices[0].Message.ToolCalls)
		assert.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
		assert.Empty(t, acc.Choices[0].Message.Content)
		assert.Equal(t, []string{`get_weather{"city":"Paris"}`, `get_weather{"city":"Rome"}`}, finished, "the accumulator sees each call finish")
	})
}

func TestOpenAIClientMultiTurnTools(t *testing.T) {
	g := newGateway(t, nil, replySeq([][]string{{weatherCall}, {"It is sunny in Paris."}}))
	client := openaiClient(g)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "claude-sonnet-4.6",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools:    []openai.ChatCompletionToolUnionParam{weatherTool},
	}
	first, err := client.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	require.Len(t, first.Choices[0].Message.ToolCalls, 1)
	call := first.Choices[0].Message.ToolCalls[0]

	params.Messages = append(params.Messages, first.Choices[0].Message.ToParam(), openai.ToolMessage(`{"sky":"clear","temp_c":21}`, call.ID))
	second, err := client.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	assert.Equal(t, "It is sunny in Paris.", second.Choices[0].Message.Content)

	// The second upstream request replays the call and its result as text.
	reqs := g.upstream.Requests()
	require.Len(t, reqs, 2)
	replay := reqs[1].Messages
	trigger := triggerRE.FindString(replay[0].Text)
	require.NotEmpty(t, trigger)
	var assistant, result string
	for _, m := range replay {
		switch {
		case m.Role == "assistant":
			assistant = m.Text
		case m.Role == "user" && strings.Contains(m.Text, "<tool_result"):
			result = m.Text
		}
	}
	assert.Contains(t, assistant, trigger+"\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>")
	assert.Contains(t, result, `<tool_result id="`+call.ID+`" name="get_weather">`)
	assert.Contains(t, result, `{"sky":"clear","temp_c":21}`)
	for _, m := range replay {
		assert.NotEqual(t, "tool", m.Role, "the upstream rejects role tool")
	}
}

func TestOpenAIClientThinkingModel(t *testing.T) {
	g := newGateway(t, nil, replyWith("<think", "ing>The user wants 2+2. That is 4.</thi", "nking>\n\nThe answer is 4."))
	client := openaiClient(g)
	for _, streaming := range []bool{false, true} {
		params := openai.ChatCompletionNewParams{
			Model:    "claude-sonnet-4.6-thinking",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is 2+2?")},
		}
		var content string
		if streaming {
			stream := client.Chat.Completions.NewStreaming(context.Background(), params)
			acc := openai.ChatCompletionAccumulator{}
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			require.NoError(t, stream.Err())
			content = acc.Choices[0].Message.Content
		} else {
			res, err := client.Chat.Completions.New(context.Background(), params)
			require.NoError(t, err)
			content = res.Choices[0].Message.Content
		}
		assert.Equal(t, "The answer is 4.", content, "streaming=%v", streaming)
	}
	req := g.upstream.Requests()[0]
	assert.Equal(t, "anthropic/claude-sonnet-4.6", req.Model, "-thinking maps to the base model")
	last := req.Messages[len(req.Messages)-1]
	assert.True(t, strings.HasSuffix(last.Text, "Keep your final visible answer outside the thinking tags."), last.Text)
}
