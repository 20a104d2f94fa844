package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cursortest"
)

// End-to-end tests of the Anthropic door: the official Anthropic Go
// library drives the running gateway, which talks to the fake upstream.

// claude is an Anthropic client of the gateway, without retries (a retry
// would hide a failure and ask the fake upstream again).
func (s *stack) claude(key string, opts ...option.RequestOption) *anthropic.Client {
	base := []option.RequestOption{option.WithBaseURL(s.URL), option.WithMaxRetries(0)}
	if key != "" {
		// v2 takes one credential: an empty key leaves room for the caller's.
		base = append(base, option.WithAPIKey(key))
	}
	c := anthropic.NewClient(append(base, opts...)...)
	return &c
}

var (
	claudeWeather = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name:        "get_weather",
		Description: anthropic.String("Current weather of a city"),
		InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string", "enum": []string{"c", "f"}}},
			Required:   []string{"city"},
		},
	}}
	claudeReadFile = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name:        "read_file",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}, Required: []string{"path"}},
	}}
	claudeTools = []anthropic.ToolUnionParam{claudeWeather, claudeReadFile}
)

// userText is a user message of one text block.
func userText(text string) anthropic.MessageParam {
	return anthropic.NewUserMessage(anthropic.NewTextBlock(text))
}

// claudeAccumulate reads a whole stream with the library's accumulator,
// checking that it accepts every event.
func claudeAccumulate(t *testing.T, stream interface {
	Next() bool
	Current() anthropic.MessageStreamEventUnion
	Err() error
}) (anthropic.Message, error) {
	t.Helper()
	var msg anthropic.Message
	for stream.Next() {
		ev := stream.Current()
		require.NoError(t, msg.Accumulate(ev), "the accumulator accepts %s", ev.RawJSON())
	}
	return msg, stream.Err()
}

// claudeAsk sends params streamed or not and returns the message.
func claudeAsk(t *testing.T, c *anthropic.Client, streaming bool, params anthropic.MessageNewParams) anthropic.Message {
	t.Helper()
	if streaming {
		msg, err := claudeAccumulate(t, c.Messages.NewStreaming(context.Background(), params))
		require.NoError(t, err)
		return msg
	}
	msg, err := c.Messages.New(context.Background(), params)
	require.NoError(t, err)
	return *msg
}

var modes = []struct {
	name      string
	streaming bool
}{{"non-streaming", false}, {"streaming", true}}

func TestClaudeE2EText(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, []string{"Hello", ", <b>world</b>", " & ünïcode ✓"}))
			msg := claudeAsk(t, s.claude("sk-any"), m.streaming, anthropic.MessageNewParams{
				Model:     "claude-sonnet-4.6",
				MaxTokens: 1024,
				System: []anthropic.TextBlockParam{
					{Text: "You greet people.", CacheControl: anthropic.NewCacheControlEphemeralParam()},
					{Text: "Be brief."},
				},
				Messages: []anthropic.MessageParam{userText("Say hello")},
				Metadata: anthropic.MetadataParam{UserID: anthropic.String("user-1")},
			})
			assert.True(t, strings.HasPrefix(msg.ID, "msg_"), msg.ID)
			assert.Equal(t, "message", string(msg.Type))
			assert.Equal(t, "assistant", string(msg.Role))
			assert.Equal(t, "claude-sonnet-4.6", string(msg.Model))
			require.Len(t, msg.Content, 1)
			assert.Equal(t, "text", msg.Content[0].Type)
			assert.Equal(t, "Hello, <b>world</b> & ünïcode ✓", msg.Content[0].Text)
			assert.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
			assert.Empty(t, msg.StopSequence)
			assert.EqualValues(t, 321, msg.Usage.InputTokens)
			assert.EqualValues(t, 45, msg.Usage.OutputTokens)
			assert.Zero(t, msg.Usage.CacheReadInputTokens)
			assert.Zero(t, msg.Usage.CacheCreationInputTokens)

			reqs := s.up.Requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, "anthropic/claude-sonnet-4.6", reqs[0].Model)
			require.Len(t, reqs[0].Messages, 2)
			assert.Equal(t, cursortest.Message{Role: "system", Text: "You greet people.\nBe brief."}, reqs[0].Messages[0])
			assert.Equal(t, cursortest.Message{Role: "user", Text: "Say hello"}, reqs[0].Messages[1])
			s.Close() // the access log line is written once the handler returns
			assert.Regexp(t, `msg=request .*door=anthropic .*path=/v1/messages .*model=claude-sonnet-4.6 status=200`, s.logs.String())
		})
	}
}

func TestClaudeE2EToolCall(t *testing.T) {
	turn := []string{"Let me check.\n", "TRIGGER\n", `<invoke name="get_weather">{"city": "Pa`, `ris", "unit"`, `: "c"}`, `</invoke>`}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, turn))
			msg := claudeAsk(t, s.claude("sk-any"), m.streaming, anthropic.MessageNewParams{
				Model: "claude-sonnet-4.6", MaxTokens: 1024, Tools: claudeTools,
				Messages: []anthropic.MessageParam{userText("Weather in Paris?")},
			})
			assert.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
			require.Len(t, msg.Content, 2, "%s", msg.RawJSON())
			assert.Equal(t, "text", msg.Content[0].Type)
			assert.Equal(t, "Let me check.", strings.TrimSpace(msg.Content[0].Text))
			call := msg.Content[1]
			assert.Equal(t, "tool_use", call.Type)
			assert.Regexp(t, `^toolu_[A-Za-z0-9]+$`, call.ID)
			assert.Equal(t, "get_weather", call.Name)
			assert.JSONEq(t, `{"city":"Paris","unit":"c"}`, string(call.Input), "the accumulator assembled the input")
		})
	}
}

// TestClaudeE2EStreamedBadCallNeverRuns: a streamed call that turns out
// against its schema only at its end is not sent at all, since Anthropic's
// clients would run its partial input; the note says why.
func TestClaudeE2EStreamedBadCallNeverRuns(t *testing.T) {
	for _, tc := range []struct {
		after, note string
	}{
		{"0", "must not be run"}, // streamed at once: left incomplete, so dropped
		{"2048", "was not sent"}, // held whole (the default): checked before any of it is sent
	} {
		t.Run("STREAM_ARGS_AFTER="+tc.after, func(t *testing.T) {
			s := newStack(t, map[string]string{"STREAM_ARGS_AFTER": tc.after},
				script(t, []string{"Checking.\n", "TRIGGER\n<invoke name=\"get_weather\">{\"unit\": ", "\"c\"}</invoke>"}))
			msg := claudeAsk(t, s.claude("sk-any"), true, anthropic.MessageNewParams{
				Model: "claude-sonnet-4.6", MaxTokens: 1024, Tools: claudeTools,
				Messages: []anthropic.MessageParam{userText("Weather?")},
			})
			require.Len(t, msg.Content, 1, "%s", msg.RawJSON())
			assert.Equal(t, "text", msg.Content[0].Type)
			assert.Contains(t, msg.Content[0].Text, "Checking.")
			assert.Contains(t, msg.Content[0].Text, "get_weather")
			assert.Contains(t, msg.Content[0].Text, tc.note)
			assert.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
		})
	}
}

func TestClaudeE2EParallelToolCalls(t *testing.T) {
	turn := []string{"TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>\n", `<invoke name="read_file">{"path":"notes.md"}</invoke>`}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, turn))
			msg := claudeAsk(t, s.claude("sk-any"), m.streaming, anthropic.MessageNewParams{
				Model: "claude-sonnet-4.6", MaxTokens: 1024, Tools: claudeTools,
				Messages: []anthropic.MessageParam{userText("Weather in Paris, and read my notes")},
			})
			assert.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
			require.Len(t, msg.Content, 2, "%s", msg.RawJSON())
			assert.Equal(t, "get_weather", msg.Content[0].Name)
			assert.JSONEq(t, `{"city":"Paris"}`, string(msg.Content[0].Input))
			assert.Equal(t, "read_file", msg.Content[1].Name)
			assert.JSONEq(t, `{"path":"notes.md"}`, string(msg.Content[1].Input))
			assert.NotEqual(t, msg.Content[0].ID, msg.Content[1].ID)
		})
	}
	t.Run("disable_parallel_tool_use", func(t *testing.T) {
		s := newStack(t, nil, script(t, turn))
		msg := claudeAsk(t, s.claude("sk-any"), true, anthropic.MessageNewParams{
			Model: "claude-sonnet-4.6", MaxTokens: 1024, Tools: claudeTools,
			ToolChoice: anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{DisableParallelToolUse: anthropic.Bool(true)}},
			Messages:   []anthropic.MessageParam{userText("Weather in Paris, and read my notes")},
		})
		require.Len(t, msg.Content, 1, "one call only: %s", msg.RawJSON())
		assert.Equal(t, "get_weather", msg.Content[0].Name)
	})
}

func TestClaudeE2EMultiTurnTools(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t,
				[]string{"I'll look.\n", "TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>\n<invoke name=\"read_file\">{\"path\":\"notes.md\"}</invoke>"},
				[]string{"It is 21°C and clear in Paris; your notes say: buy bread."},
			))
			c := s.claude("sk-any")
			params := anthropic.MessageNewParams{
				Model: "claude-sonnet-4.6", MaxTokens: 1024, Tools: claudeTools,
				System:   []anthropic.TextBlockParam{{Text: "You are a helpful agent."}},
				Messages: []anthropic.MessageParam{userText("Weather in Paris, and my notes?")},
			}
			first := claudeAsk(t, c, m.streaming, params)
			require.Len(t, first.Content, 3, "%s", first.RawJSON())
			weather, notes := first.Content[1], first.Content[2]

			params.Messages = append(params.Messages, first.ToParam(), anthropic.NewUserMessage(
				anthropic.NewToolResultBlock(weather.ID, `{"temp_c":21,"sky":"clear"}`, false),
				anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{ToolUseID: notes.ID, Content: []anthropic.ToolResultBlockParamContentUnion{
					{OfText: &anthropic.TextBlockParam{Text: "buy bread"}},
				}}},
				anthropic.NewTextBlock("<system-reminder>Be concise.</system-reminder>"),
			))
			second := claudeAsk(t, c, m.streaming, params)
			require.Len(t, second.Content, 1)
			assert.Equal(t, "It is 21°C and clear in Paris; your notes say: buy bread.", second.Content[0].Text)
			assert.Equal(t, anthropic.StopReasonEndTurn, second.StopReason)

			reqs := s.up.Requests()
			require.Len(t, reqs, 2)
			replay := reqs[1].Messages
			trigger := sentTrigger(reqs[1])
			require.NotEmpty(t, trigger)
			var assistant, user []string
			for _, msg := range replay[1:] {
				switch msg.Role {
				case "assistant":
					assistant = append(assistant, msg.Text)
				case "user":
					user = append(user, msg.Text)
				default:
					t.Errorf("role %q upstream", msg.Role)
				}
			}
			require.Len(t, assistant, 1, "%+v", replay)
			assert.Contains(t, assistant[0], "I'll look.")
			assert.Contains(t, assistant[0], trigger+"\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>")
			assert.Contains(t, assistant[0], `<invoke name="read_file">{"path":"notes.md"}</invoke>`)
			last := user[len(user)-1]
			assert.Contains(t, last, `<tool_result id="`+weather.ID+`" name="get_weather">`)
			assert.Contains(t, last, `{"temp_c":21,"sky":"clear"}`)
			assert.Contains(t, last, `<tool_result id="`+notes.ID+`" name="read_file">`)
			assert.Contains(t, last, "buy bread")
			assert.True(t, strings.HasSuffix(strings.TrimSpace(last), "<system-reminder>Be concise.</system-reminder>"), "the reminder follows the results: %q", last)
		})
	}
}

func TestClaudeE2EThinking(t *testing.T) {
	turn := []string{"<think", "ing>The user wants 2+2.\nThat is 4.</thi", "nking>\n\nThe answer is 4."}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, turn))
			c := s.claude("sk-any")
			ask := func(thinking anthropic.ThinkingConfigParamUnion) anthropic.Message {
				return claudeAsk(t, c, m.streaming, anthropic.MessageNewParams{
					Model: "claude-sonnet-4.6", MaxTokens: 4096, Thinking: thinking,
					Messages: []anthropic.MessageParam{userText("What is 2+2?")},
				})
			}
			for _, thinking := range []anthropic.ThinkingConfigParamUnion{
				anthropic.ThinkingConfigParamOfEnabled(2048),
				{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}},
			} {
				msg := ask(thinking)
				require.Len(t, msg.Content, 2, "%s", msg.RawJSON())
				assert.Equal(t, "thinking", msg.Content[0].Type)
				assert.Equal(t, "The user wants 2+2.\nThat is 4.", strings.TrimSpace(msg.Content[0].Thinking))
				assert.NotEmpty(t, msg.Content[0].Signature, "a thinking block is signed")
				assert.Equal(t, "text", msg.Content[1].Type)
				assert.Equal(t, "The answer is 4.", strings.TrimSpace(msg.Content[1].Text))
			}
			// The thinking prompt went upstream for those requests.
			for _, req := range s.up.Requests() {
				assert.Contains(t, req.Messages[0].Text, "<thinking>")
			}

			// Without thinking asked, the model does not reason, and the
			// client never sees reasoning tags even if it does.
			msg := ask(anthropic.ThinkingConfigParamUnion{})
			require.Len(t, msg.Content, 1, "%s", msg.RawJSON())
			assert.Equal(t, "text", msg.Content[0].Type)
			assert.NotContains(t, msg.Content[0].Text, "<thinking>")
		})
	}
	t.Run("earlier thinking is not replayed as text", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"Sure."}))
		claudeAsk(t, s.claude("sk-any"), false, anthropic.MessageNewParams{
			Model: "claude-sonnet-4.6", MaxTokens: 1024,
			Messages: []anthropic.MessageParam{
				userText("What is 2+2?"),
				anthropic.NewAssistantMessage(anthropic.NewThinkingBlock("sig", "SECRET REASONING"), anthropic.ContentBlockParamUnion{OfRedactedThinking: &anthropic.RedactedThinkingBlockParam{Data: "opaque"}}, anthropic.NewTextBlock("4.")),
				userText("Thanks"),
			},
		})
		for _, msg := range s.up.Requests()[0].Messages {
			assert.NotContains(t, msg.Text, "SECRET REASONING")
			assert.NotContains(t, msg.Text, "opaque")
		}
	})
}

func TestClaudeE2EToolChoiceAnyRetries(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t,
				[]string{"I think it is sunny in Paris."},
				[]string{"TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>"},
			))
			msg := claudeAsk(t, s.claude("sk-any"), m.streaming, anthropic.MessageNewParams{
				Model: "claude-sonnet-4.6", MaxTokens: 1024, Tools: claudeTools,
				ToolChoice: anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}},
				Messages:   []anthropic.MessageParam{userText("Weather in Paris?")},
			})
			require.Len(t, msg.Content, 1, "the first, call-less turn never reaches the client: %s", msg.RawJSON())
			assert.Equal(t, "tool_use", msg.Content[0].Type)
			assert.Equal(t, "get_weather", msg.Content[0].Name)
			assert.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
			require.Len(t, s.up.Requests(), 2, "asked once more")
		})
	}
	t.Run("tool names one tool", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"TRIGGER\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>"}))
		msg := claudeAsk(t, s.claude("sk-any"), false, anthropic.MessageNewParams{
			Model: "claude-sonnet-4.6", MaxTokens: 1024, Tools: claudeTools,
			ToolChoice: anthropic.ToolChoiceParamOfTool("read_file"),
			Messages:   []anthropic.MessageParam{userText("Read a")},
		})
		require.Len(t, msg.Content, 1)
		assert.Equal(t, "read_file", msg.Content[0].Name)
	})
}

func TestClaudeE2EStopSequences(t *testing.T) {
	// The stop sequence arrives split across deltas, after a false start.
	turn := []string{"one, two, thr", "ee, fo", "ur, END", "-OF-LIST five, six"}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, turn))
			msg := claudeAsk(t, s.claude("sk-any"), m.streaming, anthropic.MessageNewParams{
				Model: "claude-sonnet-4.6", MaxTokens: 1024, StopSequences: []string{"END-OF-LIST", "never"},
				Messages: []anthropic.MessageParam{userText("Count")},
			})
			require.Len(t, msg.Content, 1)
			assert.Equal(t, "one, two, three, four, ", msg.Content[0].Text)
			assert.Equal(t, anthropic.StopReasonStopSequence, msg.StopReason)
			assert.Equal(t, "END-OF-LIST", msg.StopSequence)
		})
	}
}

func TestClaudeE2ECountTokens(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"unused"}))
	c := s.claude("sk-any")
	count := func(params anthropic.MessageCountTokensParams) int64 {
		t.Helper()
		res, err := c.Messages.CountTokens(context.Background(), params)
		require.NoError(t, err)
		return res.InputTokens
	}
	short := count(anthropic.MessageCountTokensParams{Model: "claude-sonnet-4-5-20250929", Messages: []anthropic.MessageParam{userText("Hello, Claude")}})
	assert.Greater(t, short, int64(3))
	long := count(anthropic.MessageCountTokensParams{
		Model:    "claude-sonnet-4.6",
		System:   anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: []anthropic.TextBlockParam{{Text: strings.Repeat("You are a careful coding agent. ", 100)}}},
		Tools:    []anthropic.MessageCountTokensToolUnionParam{{OfTool: claudeWeather.OfTool}},
		Messages: []anthropic.MessageParam{userText("Hello, Claude")},
	})
	assert.Greater(t, long, short+600, "the system prompt and the tools count")
	assert.Empty(t, s.up.Requests(), "counting asks nothing upstream")

	_, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "llama-4o", Messages: []anthropic.MessageParam{userText("hi")}})
	assertClaudeError(t, err, http.StatusNotFound, "not_found_error", "llama-4o")
}

// assertClaudeError checks an error the library returned: the status,
// the Anthropic error type and the hints in the message.
func assertClaudeError(t *testing.T, err error, status int, typ string, hints ...string) {
	t.Helper()
	var apiErr *anthropic.Error
	require.True(t, errors.As(err, &apiErr), "an *anthropic.Error: %v", err)
	assert.Equal(t, status, apiErr.StatusCode)
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(apiErr.RawJSON()), &body), apiErr.RawJSON())
	assert.Equal(t, "error", body.Type)
	assert.Equal(t, typ, body.Error.Type)
	assert.Equal(t, typ, string(apiErr.Type()))
	for _, h := range hints {
		assert.Contains(t, body.Error.Message, h)
	}
}

func TestClaudeE2EModels(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "right"}, script(t, []string{"unused"}))
	page, err := s.claude("right").Models.List(context.Background(), anthropic.ModelListParams{})
	require.NoError(t, err)
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		assert.Equal(t, "model", string(m.Type))
		assert.Equal(t, m.ID, m.DisplayName)
		assert.False(t, m.CreatedAt.IsZero())
	}
	assert.Equal(t, []string{"claude-sonnet-4.6", "claude-sonnet-4.6-thinking", "gemini-3-flash", "gemini-3-flash-thinking"}, ids)
	assert.False(t, page.HasMore)
	assert.Equal(t, "claude-sonnet-4.6", page.FirstID)
	assert.Equal(t, "gemini-3-flash-thinking", page.LastID)

	_, err = s.claude("wrong").Models.List(context.Background(), anthropic.ModelListParams{})
	assertClaudeError(t, err, http.StatusUnauthorized, "authentication_error")

	r := s.do(t, http.MethodGet, "/v1/models", "", "Authorization", "Bearer right")
	assert.Contains(t, r.body, `"object":"list"`, "OpenAI's format without anthropic-version")
}

func TestClaudeE2EAliases(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"Hi."}))
	for _, name := range []string{"claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-3-5-haiku-20241022", "claude-haiku-4-5"} {
		msg := claudeAsk(t, s.claude("sk-any"), false, anthropic.MessageNewParams{
			Model: anthropic.Model(name), MaxTokens: 100, Messages: []anthropic.MessageParam{userText("hi")},
		})
		assert.Equal(t, name, string(msg.Model), "the name asked for is echoed")
	}
	for _, req := range s.up.Requests() {
		assert.Equal(t, "anthropic/claude-sonnet-4.6", req.Model, "every Claude name maps to the published model by default")
	}

	s = newStack(t, map[string]string{"MODEL_ALIASES": "claude-haiku-*=gemini-3-flash"}, script(t, []string{"Hi."}))
	claudeAsk(t, s.claude("sk-any"), false, anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 100, Messages: []anthropic.MessageParam{userText("hi")}})
	assert.Equal(t, "google/gemini-3-flash", s.up.Requests()[0].Model)
	_, err := s.claude("sk-any").Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-opus-4", MaxTokens: 100, Messages: []anthropic.MessageParam{userText("hi")}})
	assertClaudeError(t, err, http.StatusNotFound, "not_found_error", `"claude-opus-4"`, "claude-sonnet-4.6, claude-sonnet-4.6-thinking, gemini-3-flash")
}

func TestClaudeE2EErrors(t *testing.T) {
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4.6", MaxTokens: 100, Messages: []anthropic.MessageParam{userText("hi")}}
	t.Run("auth", func(t *testing.T) {
		s := newStack(t, map[string]string{"API_KEY": "right"}, script(t, []string{"Hi."}))
		_, err := s.claude("wrong").Messages.New(context.Background(), params)
		assertClaudeError(t, err, http.StatusUnauthorized, "authentication_error", "API key")
		r := s.do(t, http.MethodPost, "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", "2023-06-01")
		assertClaudeBody(t, r, http.StatusUnauthorized, "authentication_error", "missing API key")
		_, err = s.claude("right").Messages.New(context.Background(), params)
		require.NoError(t, err, "x-api-key")
		_, err = s.claude("", option.WithAuthToken("right")).Messages.New(context.Background(), params)
		require.NoError(t, err, "Authorization: Bearer, as ANTHROPIC_AUTH_TOKEN sends it")
	})
	t.Run("invalid requests", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"Hi."}))
		c := s.claude("sk-any")
		bad := params
		bad.Tools = []anthropic.ToolUnionParam{{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{}}}
		_, err := c.Messages.New(context.Background(), bad)
		assertClaudeError(t, err, http.StatusBadRequest, "invalid_request_error", "tools.0", "web_search_20250305", "custom tools")

		bad = params
		bad.ToolChoice = anthropic.ToolChoiceParamOfTool("nope")
		bad.Tools = claudeTools
		_, err = c.Messages.New(context.Background(), bad)
		assertClaudeError(t, err, http.StatusBadRequest, "invalid_request_error", "tool_choice.name", `"nope"`)

		bad = params
		bad.Messages = nil
		_, err = c.Messages.New(context.Background(), bad)
		assertClaudeError(t, err, http.StatusBadRequest, "invalid_request_error", "messages")
		assert.Empty(t, s.up.Requests(), "no invalid request reaches the upstream")
	})
	t.Run("unknown model", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"Hi."}))
		bad := params
		bad.Model = "llama-4o"
		_, err := s.claude("sk-any").Messages.New(context.Background(), bad)
		assertClaudeError(t, err, http.StatusNotFound, "not_found_error", `"llama-4o"`, "claude-sonnet-4.6")
	})
	t.Run("too large", func(t *testing.T) {
		s := newStack(t, map[string]string{"MAX_BODY_BYTES": "2048"}, script(t, []string{"Hi."}))
		big := params
		big.Messages = []anthropic.MessageParam{userText(strings.Repeat("x", 4096))}
		_, err := s.claude("sk-any").Messages.New(context.Background(), big)
		assertClaudeError(t, err, http.StatusRequestEntityTooLarge, "request_too_large", "MAX_BODY_BYTES")
	})
	t.Run("rate limited", func(t *testing.T) {
		s := newStack(t, nil, cursortest.Always(cursortest.Response{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: "<html><title>Vercel Security Checkpoint</title></html>"}))
		_, err := s.claude("sk-any").Messages.New(context.Background(), params)
		assertClaudeError(t, err, http.StatusTooManyRequests, "rate_limit_error")
		var apiErr *anthropic.Error
		require.True(t, errors.As(err, &apiErr))
		assert.Equal(t, "7", apiErr.Response.Header.Get("Retry-After"))
	})
	t.Run("upstream failure", func(t *testing.T) {
		s := newStack(t, nil, cursortest.Always(cursortest.Response{Status: 500, Body: "boom"}))
		_, err := s.claude("sk-any").Messages.New(context.Background(), params)
		var apiErr *anthropic.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		assert.GreaterOrEqual(t, apiErr.StatusCode, 500)
		assert.Equal(t, "api_error", string(apiErr.Type()))
	})
	t.Run("error after streamed text", func(t *testing.T) {
		s := newStack(t, nil, cursortest.Always(cursortest.Response{Events: []string{
			`{"type":"start"}`, `{"type":"text-start","id":"t0"}`, `{"type":"text-delta","id":"t0","delta":"Partial answer"}`,
			`{"type":"error","errorText":"model overloaded"}`,
		}}))
		msg, err := claudeAccumulate(t, s.claude("sk-any").Messages.NewStreaming(context.Background(), params))
		var apiErr *anthropic.Error
		require.True(t, errors.As(err, &apiErr), "the library reports the error event: %v", err)
		assert.Contains(t, apiErr.RawJSON(), "model overloaded")
		require.Len(t, msg.Content, 1)
		assert.Equal(t, "Partial answer", msg.Content[0].Text)
	})
	t.Run("routes", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"Hi."}))
		r := s.do(t, http.MethodGet, "/v1/messages", "")
		assertClaudeBody(t, r, http.StatusMethodNotAllowed, "invalid_request_error", "GET")
		r = s.do(t, http.MethodPost, "/v1/messages/batches", "{}")
		assertClaudeBody(t, r, http.StatusNotFound, "not_found_error", "/v1/messages/batches", "POST /v1/messages")
		r = s.do(t, http.MethodPost, "/v1/messages?beta=true", "not json")
		assertClaudeBody(t, r, http.StatusBadRequest, "invalid_request_error", "not valid JSON")
	})
}

// assertClaudeBody checks an Anthropic error response read without the
// library: status, JSON, exactly the fields Anthropic sends, type and
// hints.
func assertClaudeBody(t *testing.T, r reply, status int, typ string, hints ...string) {
	t.Helper()
	require.Equal(t, status, r.status, r.body)
	assert.True(t, strings.HasPrefix(r.header.Get("Content-Type"), "application/json"))
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.body), &body), r.body)
	assert.Len(t, body, 2, r.body)
	assert.Equal(t, "error", body["type"])
	e, ok := body["error"].(map[string]any)
	require.True(t, ok, r.body)
	assert.Len(t, e, 2, r.body)
	assert.Equal(t, typ, e["type"])
	for _, h := range hints {
		assert.Contains(t, e["message"], h)
	}
}
