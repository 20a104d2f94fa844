package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cursortest"
)

// End-to-end tests: the official OpenAI Go library drives the running
// gateway, which talks to the fake upstream. What the library parses is
// what real clients get.

// sdk is an OpenAI client of the gateway, without retries (a retry would
// hide a failure and ask the fake upstream again).
func (s *stack) sdk(key string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(s.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
	return &c
}

var (
	e2eWeather = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("Current weather of a city"),
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string", "enum": []string{"c", "f"}}},
			"required":   []string{"city"},
		},
	})
	e2eReadFile = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "read_file",
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"path": map[string]any{"type": "string"}},
			"required":   []string{"path"},
		},
	})
	e2eTools = []openai.ChatCompletionToolUnionParam{e2eWeather, e2eReadFile}
)

// accumulate reads a whole stream into an accumulator, checking that the
// library accepts every chunk and that every chunk has the same id.
func accumulate(t *testing.T, stream *ssestream.Stream[openai.ChatCompletionChunk]) (openai.ChatCompletionAccumulator, []openai.FinishedChatCompletionToolCall, string, error) {
	t.Helper()
	var acc openai.ChatCompletionAccumulator
	var finished []openai.FinishedChatCompletionToolCall
	var finishedContent string
	for stream.Next() {
		chunk := stream.Current()
		require.True(t, acc.AddChunk(chunk), "the accumulator accepts chunk %s", chunk.RawJSON())
		assert.Equal(t, acc.ID, chunk.ID)
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc)
		}
		if c, ok := acc.JustFinishedContent(); ok {
			finishedContent += c
		}
	}
	return acc, finished, finishedContent, stream.Err()
}

func TestE2EPlainText(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"Hello", ", world", "!"}))
	res, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "claude-sonnet-4.6",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You greet people."),
			openai.UserMessage("Say hello"),
		},
		Temperature: openai.Float(0.2),
		MaxTokens:   openai.Int(100),
	})
	require.NoError(t, err)
	assert.Equal(t, "chat.completion", string(res.Object))
	assert.True(t, strings.HasPrefix(res.ID, "chatcmpl-"), res.ID)
	assert.Equal(t, "claude-sonnet-4.6", res.Model)
	require.Len(t, res.Choices, 1)
	assert.Equal(t, "Hello, world!", res.Choices[0].Message.Content)
	assert.Equal(t, "assistant", string(res.Choices[0].Message.Role))
	assert.Equal(t, "stop", res.Choices[0].FinishReason)
	assert.Empty(t, res.Choices[0].Message.ToolCalls)
	assert.EqualValues(t, 321, res.Usage.PromptTokens)
	assert.EqualValues(t, 45, res.Usage.CompletionTokens)
	assert.EqualValues(t, 366, res.Usage.TotalTokens)

	reqs := s.up.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "anthropic/claude-sonnet-4.6", reqs[0].Model)
	require.Len(t, reqs[0].Messages, 2)
	assert.Equal(t, cursortest.Message{Role: "system", Text: "You greet people."}, reqs[0].Messages[0])
	assert.Equal(t, cursortest.Message{Role: "user", Text: "Say hello"}, reqs[0].Messages[1])
	assert.Equal(t, "test-x-is-human", reqs[0].Header.Get("x-is-human"))
}

func TestE2EStreamedText(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"Str", "eam", "ed <b>text</b>", " & more\n", "ünïcode ✓"}))
	stream := s.sdk("sk-any").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "gemini-3-flash",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Stream please")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc, calls, finishedContent, err := accumulate(t, stream)
	require.NoError(t, err)
	require.Len(t, acc.Choices, 1)
	want := "Streamed <b>text</b> & more\nünïcode ✓"
	assert.Equal(t, want, acc.Choices[0].Message.Content)
	assert.Equal(t, want, finishedContent, "the library saw the content finish")
	assert.Equal(t, "stop", acc.Choices[0].FinishReason)
	assert.Empty(t, calls)
	assert.Equal(t, "gemini-3-flash", acc.Model)
	assert.True(t, strings.HasPrefix(acc.ID, "chatcmpl-"))
	assert.EqualValues(t, 366, acc.Usage.TotalTokens)
	assert.EqualValues(t, 321, acc.Usage.PromptTokens)
	assert.Equal(t, "google/gemini-3-flash", s.up.Requests()[0].Model)
}

func TestE2EToolCall(t *testing.T) {
	turn := []string{"Let me check.\n", "TRIGGER\n", `<invoke name="get_weather">{"city": "Pa`, `ris", "unit"`, `: "c"}`, `</invoke>`}
	params := openai.ChatCompletionNewParams{
		Model:    "claude-sonnet-4.6",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools:    e2eTools,
	}
	checkCall := func(t *testing.T, id, name, arguments string) {
		t.Helper()
		assert.True(t, strings.HasPrefix(id, "call_"), id)
		assert.Equal(t, "get_weather", name)
		var args map[string]string
		require.NoError(t, json.Unmarshal([]byte(arguments), &args), arguments)
		assert.Equal(t, map[string]string{"city": "Paris", "unit": "c"}, args)
	}

	t.Run("non-streaming", func(t *testing.T) {
		s := newStack(t, nil, script(t, turn))
		res, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), params)
		require.NoError(t, err)
		ch := res.Choices[0]
		assert.Equal(t, "tool_calls", ch.FinishReason)
		require.Len(t, ch.Message.ToolCalls, 1)
		call := ch.Message.ToolCalls[0]
		assert.Equal(t, "function", call.Type)
		checkCall(t, call.ID, call.Function.Name, call.Function.Arguments)
		assert.Equal(t, "Let me check.", ch.Message.Content)
	})
	t.Run("streaming", func(t *testing.T) {
		s := newStack(t, nil, script(t, turn))
		acc, finished, _, err := accumulate(t, s.sdk("sk-any").Chat.Completions.NewStreaming(context.Background(), params))
		require.NoError(t, err)
		ch := acc.Choices[0]
		assert.Equal(t, "tool_calls", ch.FinishReason)
		require.Len(t, ch.Message.ToolCalls, 1)
		call := ch.Message.ToolCalls[0]
		checkCall(t, call.ID, call.Function.Name, call.Function.Arguments)
		assert.Equal(t, "Let me check.\n", ch.Message.Content)
		require.Len(t, finished, 1, "the library saw the call finish")
		assert.Equal(t, call.ID, finished[0].ID)
		assert.Equal(t, 0, finished[0].Index)
	})
}

func TestE2EParallelToolCalls(t *testing.T) {
	turn := []string{"TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>\n", `<invoke name="read_file">{"path":"notes.md"}</invoke>`}
	params := openai.ChatCompletionNewParams{
		Model:             "claude-sonnet-4.6",
		Messages:          []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris, and read my notes")},
		Tools:             e2eTools,
		ParallelToolCalls: openai.Bool(true),
	}
	check := func(t *testing.T, calls []openai.ChatCompletionMessageToolCallUnion) {
		t.Helper()
		require.Len(t, calls, 2)
		assert.Equal(t, "get_weather", calls[0].Function.Name)
		assert.JSONEq(t, `{"city":"Paris"}`, calls[0].Function.Arguments)
		assert.Equal(t, "read_file", calls[1].Function.Name)
		assert.JSONEq(t, `{"path":"notes.md"}`, calls[1].Function.Arguments)
		assert.NotEqual(t, calls[0].ID, calls[1].ID)
		for _, c := range calls {
			assert.True(t, strings.HasPrefix(c.ID, "call_"), c.ID)
		}
	}
	t.Run("non-streaming", func(t *testing.T) {
		s := newStack(t, nil, script(t, turn))
		res, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), params)
		require.NoError(t, err)
		assert.Equal(t, "tool_calls", res.Choices[0].FinishReason)
		assert.Empty(t, res.Choices[0].Message.Content)
		assert.Equal(t, "null", res.Choices[0].Message.JSON.Content.Raw(), "content is null")
		check(t, res.Choices[0].Message.ToolCalls)
	})
	t.Run("streaming", func(t *testing.T) {
		s := newStack(t, nil, script(t, turn))
		acc, finished, _, err := accumulate(t, s.sdk("sk-any").Chat.Completions.NewStreaming(context.Background(), params))
		require.NoError(t, err)
		assert.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
		assert.Empty(t, acc.Choices[0].Message.Content)
		check(t, acc.Choices[0].Message.ToolCalls)
		require.Len(t, finished, 2, "the library saw each call finish in turn")
		assert.Equal(t, []int{0, 1}, []int{finished[0].Index, finished[1].Index})
		assert.Equal(t, "get_weather", finished[0].Name)
		assert.Equal(t, "read_file", finished[1].Name)
	})
}

func TestE2EMultiTurnTools(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		name := map[bool]string{false: "non-streaming", true: "streaming"}[streaming]
		t.Run(name, func(t *testing.T) {
			s := newStack(t, nil, script(t,
				[]string{"I'll look.\n", "TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>\n<invoke name=\"read_file\">{\"path\":\"notes.md\"}</invoke>"},
				[]string{"It is 21°C and clear in Paris; your notes say: buy bread."},
			))
			client := s.sdk("sk-any")
			ctx := context.Background()
			params := openai.ChatCompletionNewParams{
				Model:    "claude-sonnet-4.6",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a helpful agent."), openai.UserMessage("Weather in Paris, and my notes?")},
				Tools:    e2eTools,
			}
			var first openai.ChatCompletionMessage
			if streaming {
				acc, _, _, err := accumulate(t, client.Chat.Completions.NewStreaming(ctx, params))
				require.NoError(t, err)
				first = acc.Choices[0].Message
			} else {
				res, err := client.Chat.Completions.New(ctx, params)
				require.NoError(t, err)
				first = res.Choices[0].Message
			}
			require.Len(t, first.ToolCalls, 2)
			weather, notes := first.ToolCalls[0], first.ToolCalls[1]

			// The agent runs the tools and sends the results back.
			params.Messages = append(params.Messages,
				first.ToParam(),
				openai.ToolMessage(`{"temp_c":21,"sky":"clear"}`, weather.ID),
				openai.ToolMessage("buy bread", notes.ID),
			)
			second, err := client.Chat.Completions.New(ctx, params)
			require.NoError(t, err)
			assert.Equal(t, "It is 21°C and clear in Paris; your notes say: buy bread.", second.Choices[0].Message.Content)
			assert.Equal(t, "stop", second.Choices[0].FinishReason)
			assert.Empty(t, second.Choices[0].Message.ToolCalls)

			// The upstream got the call and the results replayed as text.
			reqs := s.up.Requests()
			require.Len(t, reqs, 2)
			replay := reqs[1].Messages
			trigger := sentTrigger(reqs[1])
			require.NotEmpty(t, trigger)
			require.GreaterOrEqual(t, len(replay), 4)
			assert.Equal(t, "system", replay[0].Role)
			assert.Contains(t, replay[0].Text, "You are a helpful agent.")
			var assistant, results []string
			for _, m := range replay[1:] {
				assert.Contains(t, []string{"user", "assistant"}, m.Role, "no role tool upstream")
				if m.Role == "assistant" {
					assistant = append(assistant, m.Text)
				}
				if m.Role == "user" && strings.Contains(m.Text, "<tool_result") {
					results = append(results, m.Text)
				}
			}
			require.Len(t, assistant, 1, "%+v", replay)
			assert.Contains(t, assistant[0], "I'll look.")
			assert.Contains(t, assistant[0], trigger+"\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>", "replayed with this request's trigger")
			assert.Contains(t, assistant[0], `<invoke name="read_file">{"path":"notes.md"}</invoke>`)
			require.Len(t, results, 1, "the results of one round arrive in one user message: %+v", replay)
			assert.Contains(t, results[0], `<tool_result id="`+weather.ID+`" name="get_weather">`)
			assert.Contains(t, results[0], `{"temp_c":21,"sky":"clear"}`)
			assert.Contains(t, results[0], `<tool_result id="`+notes.ID+`" name="read_file">`)
			assert.Contains(t, results[0], "buy bread")
			assert.Equal(t, "user", replay[len(replay)-1].Role, "the conversation ends with the results")
		})
	}
}

func TestE2EThinkingModel(t *testing.T) {
	cases := []struct {
		name   string
		turn   []string
		answer string
		call   string // name of the expected tool call, if any
	}{
		{"answer", []string{"<think", "ing>The user wants 2+2.\nThat is 4.</thi", "nking>\n\nThe answer is 4."}, "The answer is 4.", ""},
		{"call", []string{"<thinking>I need the weather tool.</thinking>\n", "TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Oslo\"}</invoke>"}, "", "get_weather"},
	}
	for _, tc := range cases {
		for _, streaming := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: " streaming"}[streaming], func(t *testing.T) {
				s := newStack(t, nil, script(t, tc.turn))
				params := openai.ChatCompletionNewParams{
					Model:    "claude-sonnet-4.6-thinking",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is 2+2? Or the weather in Oslo.")},
					Tools:    e2eTools,
				}
				var msg openai.ChatCompletionMessage
				var raw string
				if streaming {
					acc, _, _, err := accumulate(t, s.sdk("sk-any").Chat.Completions.NewStreaming(context.Background(), params))
					require.NoError(t, err)
					msg = acc.Choices[0].Message
					assert.Equal(t, "claude-sonnet-4.6-thinking", acc.Model)
				} else {
					res, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), params)
					require.NoError(t, err)
					msg = res.Choices[0].Message
					raw = res.RawJSON()
					assert.Equal(t, "claude-sonnet-4.6-thinking", res.Model)
				}
				assert.Equal(t, tc.answer, msg.Content, "the client sees only the answer")
				for _, leak := range []string{"thinking>", "2+2.", "weather tool", "<<CALL_", "<invoke"} {
					assert.NotContains(t, msg.Content, leak)
					assert.NotContains(t, raw, leak, "nothing of the thinking in the response")
				}
				assert.NotContains(t, raw, "reasoning_content", "thinking stays internal without EXPOSE_THINKING")
				if tc.call == "" {
					assert.Empty(t, msg.ToolCalls)
				} else {
					require.Len(t, msg.ToolCalls, 1)
					assert.Equal(t, tc.call, msg.ToolCalls[0].Function.Name)
					assert.JSONEq(t, `{"city":"Oslo"}`, msg.ToolCalls[0].Function.Arguments)
				}
				req := s.up.Requests()[0]
				assert.Equal(t, "anthropic/claude-sonnet-4.6", req.Model, "-thinking maps to its base model")
				assert.Contains(t, req.Messages[0].Text, "<thinking>", "the system message asks for thinking tags")
			})
		}
	}
}

func TestE2EErrors(t *testing.T) {
	asAPIError := func(t *testing.T, err error) *openai.Error {
		t.Helper()
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "an *openai.Error: %v", err)
		return apiErr
	}
	t.Run("unknown model", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"unused"}))
		_, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "llama-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		e := asAPIError(t, err)
		assert.Equal(t, http.StatusNotFound, e.StatusCode)
		assert.Equal(t, "model_not_found", e.Code)
		assert.Equal(t, "invalid_request_error", e.Type)
		assert.Equal(t, "model", e.Param)
		assert.Contains(t, e.Message, "claude-sonnet-4.6")
	})
	t.Run("wrong key", func(t *testing.T) {
		s := newStack(t, map[string]string{"API_KEY": "right"}, script(t, []string{"hello"}))
		_, err := s.sdk("wrong").Models.List(context.Background())
		e := asAPIError(t, err)
		assert.Equal(t, http.StatusUnauthorized, e.StatusCode)
		assert.Equal(t, "authentication_error", e.Type)

		page, err := s.sdk("right").Models.List(context.Background())
		require.NoError(t, err)
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		assert.Equal(t, []string{"claude-sonnet-4.6", "claude-sonnet-4.6-thinking", "gemini-3-flash", "gemini-3-flash-thinking"}, ids)
	})
	t.Run("rate limited", func(t *testing.T) {
		s := newStack(t, nil, cursortest.Always(cursortest.Response{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: "<html><title>Vercel Security Checkpoint</title></html>"}))
		_, err := s.sdk("sk-any").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "claude-sonnet-4.6", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		e := asAPIError(t, err)
		assert.Equal(t, http.StatusTooManyRequests, e.StatusCode)
		assert.Equal(t, "rate_limit_error", e.Type)
		assert.Equal(t, "7", e.Response.Header.Get("Retry-After"))
		assert.NotContains(t, e.Message, "<html")
	})
	t.Run("error after streamed text", func(t *testing.T) {
		s := newStack(t, nil, cursortest.Always(cursortest.Response{Events: []string{
			`{"type":"start"}`, `{"type":"text-start","id":"t0"}`, `{"type":"text-delta","id":"t0","delta":"Partial answer"}`,
			`{"type":"error","errorText":"model overloaded"}`,
		}}))
		acc, _, _, err := accumulate(t, s.sdk("sk-any").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model: "claude-sonnet-4.6", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		}))
		var streamErr *ssestream.StreamError
		require.True(t, errors.As(err, &streamErr), "the library reports the error chunk: %v", err)
		assert.Contains(t, streamErr.Message, "model overloaded")
		assert.Equal(t, "Partial answer", acc.Choices[0].Message.Content)
	})
}
