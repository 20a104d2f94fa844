package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
	"cursor2api/services/native/agentv1"
	nativekeys "cursor2api/services/native/keys"
	"cursor2api/services/native/nativetest"
)

// Every front door on BACKEND=cursor, driven by the official client
// libraries the web-chat suites use (openai-go for chat completions and
// Responses, anthropic-sdk-go for Messages), streamed and not, against
// the fake of Cursor's native backend.

// sdkAsk is one request, in neutral terms each door writes in its own.
type sdkAsk struct {
	model, prompt string
	stream        bool
	// tools offers get_weather and read_file.
	tools bool
	// thinking asks to see the thinking: Anthropic's thinking config, the
	// Responses reasoning summary (chat completions has no such field: it
	// shows reasoning under EXPOSE_THINKING only).
	thinking bool
}

// sdkCall is one tool call as the library parsed it.
type sdkCall struct{ id, name, args string }

// sdkAnswer is what a library made of a door's answer.
type sdkAnswer struct {
	text, reasoning string
	calls           []sdkCall
	// finish is "stop" or "tool_calls", whatever the door's own word.
	finish                   string
	input, output, cacheRead int64
	// err is the library's error; status, retryAfter, errMsg read from it.
	err        error
	status     int
	retryAfter string
	errMsg     string
	// reply sends the next request of the conversation: the answer's
	// calls answered by results (in the calls' order), streamed or not.
	reply func(t *testing.T, results []string, stream bool) sdkAnswer
}

// sdkDoor drives one front door through its client library.
type sdkDoor struct {
	name string
	ask  func(t *testing.T, s *stack, q sdkAsk) sdkAnswer
	// hidesThinking: the request cannot ask to see the thinking.
	hidesThinking bool
}

var sdkDoors = []sdkDoor{
	{name: "openai", ask: sdkOpenAI, hidesThinking: true},
	{name: "anthropic", ask: sdkAnthropic},
	{name: "responses", ask: sdkResponses},
}

// forEachSDKDoor runs fn on every door, streamed and not.
func forEachSDKDoor(t *testing.T, fn func(t *testing.T, door sdkDoor, stream bool)) {
	for _, door := range sdkDoors {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", door.name, stream), func(t *testing.T) { fn(t, door, stream) })
		}
	}
}

func sdkOpenAI(t *testing.T, s *stack, q sdkAsk) sdkAnswer {
	params := openai.ChatCompletionNewParams{
		Model:    q.model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage(q.prompt)},
	}
	if q.tools {
		params.Tools = e2eTools
	}
	return openAITurn(t, s, params, q.stream)
}

func openAITurn(t *testing.T, s *stack, params openai.ChatCompletionNewParams, stream bool) sdkAnswer {
	t.Helper()
	ctx := context.Background()
	var out sdkAnswer
	var msg openai.ChatCompletionMessage
	var usage openai.CompletionUsage
	if stream {
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		st := s.sdk("sk-any").Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			chunk := st.Current()
			require.True(t, acc.AddChunk(chunk), "the accumulator accepts chunk %s", chunk.RawJSON())
			if len(chunk.Choices) > 0 {
				// reasoning_content is not in the library's types.
				out.reasoning += gjson.Get(chunk.RawJSON(), "choices.0.delta.reasoning_content").String()
			}
		}
		if err := st.Err(); err != nil {
			return openAIError(t, err)
		}
		require.Len(t, acc.Choices, 1)
		msg, out.finish, usage = acc.Choices[0].Message, acc.Choices[0].FinishReason, acc.Usage
	} else {
		res, err := s.sdk("sk-any").Chat.Completions.New(ctx, params)
		if err != nil {
			return openAIError(t, err)
		}
		require.Len(t, res.Choices, 1)
		msg, out.finish, usage = res.Choices[0].Message, res.Choices[0].FinishReason, res.Usage
		out.reasoning = gjson.Get(res.RawJSON(), "choices.0.message.reasoning_content").String()
	}
	out.text = msg.Content
	for _, c := range msg.ToolCalls {
		assert.Regexp(t, `^call_[A-Za-z0-9]+$`, c.ID)
		out.calls = append(out.calls, sdkCall{c.ID, c.Function.Name, c.Function.Arguments})
	}
	out.input, out.output, out.cacheRead = usage.PromptTokens, usage.CompletionTokens, usage.PromptTokensDetails.CachedTokens
	out.reply = func(t *testing.T, results []string, stream bool) sdkAnswer {
		next := params
		next.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
		next.Messages = append(append([]openai.ChatCompletionMessageParamUnion(nil), params.Messages...), msg.ToParam())
		for i, c := range out.calls {
			next.Messages = append(next.Messages, openai.ToolMessage(results[i], c.id))
		}
		return openAITurn(t, s, next, stream)
	}
	return out
}

func openAIError(t *testing.T, err error) sdkAnswer {
	t.Helper()
	var e *openai.Error
	require.True(t, errors.As(err, &e), "an *openai.Error: %v", err)
	return sdkAnswer{err: err, status: e.StatusCode, retryAfter: e.Response.Header.Get("Retry-After"), errMsg: e.Message}
}

func sdkAnthropic(t *testing.T, s *stack, q sdkAsk) sdkAnswer {
	params := anthropic.MessageNewParams{
		Model: anthropic.Model(q.model), MaxTokens: 4096,
		System:   []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages: []anthropic.MessageParam{userText(q.prompt)},
	}
	if q.tools {
		params.Tools = claudeTools
	}
	if q.thinking {
		params.Thinking = anthropic.ThinkingConfigParamOfEnabled(2048)
	}
	return anthropicTurn(t, s, params, q.stream)
}

func anthropicTurn(t *testing.T, s *stack, params anthropic.MessageNewParams, stream bool) sdkAnswer {
	t.Helper()
	c := s.claude("sk-any")
	var msg anthropic.Message
	var err error
	if stream {
		msg, err = claudeAccumulate(t, c.Messages.NewStreaming(context.Background(), params))
	} else {
		var m *anthropic.Message
		if m, err = c.Messages.New(context.Background(), params); err == nil {
			msg = *m
		}
	}
	if err != nil {
		var e *anthropic.Error
		require.True(t, errors.As(err, &e), "an *anthropic.Error: %v", err)
		return sdkAnswer{err: err, status: e.StatusCode, retryAfter: e.Response.Header.Get("Retry-After"),
			errMsg: gjson.Get(e.RawJSON(), "error.message").String()}
	}
	out := sdkAnswer{finish: map[anthropic.StopReason]string{anthropic.StopReasonEndTurn: "stop", anthropic.StopReasonToolUse: "tool_calls"}[msg.StopReason]}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			out.text += b.Text
		case "thinking":
			out.reasoning += b.Thinking
			assert.NotEmpty(t, b.Signature, "a thinking block is signed")
		case "tool_use":
			assert.Regexp(t, `^toolu_[A-Za-z0-9]+$`, b.ID)
			out.calls = append(out.calls, sdkCall{b.ID, b.Name, string(b.Input)})
		default:
			t.Errorf("unexpected block %s", b.RawJSON())
		}
	}
	out.input, out.output, out.cacheRead = msg.Usage.InputTokens, msg.Usage.OutputTokens, msg.Usage.CacheReadInputTokens
	out.reply = func(t *testing.T, results []string, stream bool) sdkAnswer {
		next := params
		var blocks []anthropic.ContentBlockParamUnion
		for i, c := range out.calls {
			blocks = append(blocks, anthropic.NewToolResultBlock(c.id, results[i], false))
		}
		next.Messages = append(append([]anthropic.MessageParam(nil), params.Messages...), msg.ToParam(), anthropic.NewUserMessage(blocks...))
		return anthropicTurn(t, s, next, stream)
	}
	return out
}

func sdkResponses(t *testing.T, s *stack, q sdkAsk) sdkAnswer {
	params := responses.ResponseNewParams{
		Model: q.model, Instructions: openai.String("Be brief."), Store: openai.Bool(false),
		Input: itemsInput(responses.ResponseInputItemParamOfMessage(q.prompt, responses.EasyInputMessageRoleUser)),
	}
	if q.tools {
		params.Tools = respTools
	}
	if q.thinking {
		params.Reasoning = shared.ReasoningParam{Summary: shared.ReasoningSummaryAuto}
	}
	return responsesTurn(t, s, params, q.stream)
}

func responsesTurn(t *testing.T, s *stack, params responses.ResponseNewParams, stream bool) sdkAnswer {
	t.Helper()
	var res *responses.Response
	var err error
	if stream {
		var out streamedResponse
		out, err = readStream(t, s.sdk("sk-any").Responses.NewStreaming(context.Background(), params))
		if err == nil {
			require.NotNil(t, out.Final, "the accumulator rebuilt the response: %v", out.Types())
			res = out.Final
		}
	} else {
		res, err = s.sdk("sk-any").Responses.New(context.Background(), params)
	}
	if err != nil {
		return openAIError(t, err)
	}
	assert.Equal(t, responses.ResponseStatusCompleted, res.Status)
	out := sdkAnswer{finish: "stop"}
	for _, it := range res.Output {
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				out.text += p.Text
			}
		case "reasoning":
			for _, p := range it.Summary {
				out.reasoning += p.Text
			}
		case "function_call":
			out.finish = "tool_calls"
			assert.Regexp(t, `^call_[A-Za-z0-9]+$`, it.CallID)
			out.calls = append(out.calls, sdkCall{it.CallID, it.Name, it.Arguments.OfString})
		default:
			t.Errorf("unexpected output item %s", it.RawJSON())
		}
	}
	out.input, out.output, out.cacheRead = res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.InputTokensDetails.CachedTokens
	out.reply = func(t *testing.T, results []string, stream bool) sdkAnswer {
		next := params
		// The whole history goes back, as Codex sends it.
		input := append([]responses.ResponseInputItemUnionParam(nil), params.Input.OfInputItemList...)
		for _, it := range res.Output {
			switch it.Type {
			case "message":
				m := it.AsMessage().ToParam()
				input = append(input, responses.ResponseInputItemUnionParam{OfOutputMessage: &m})
			case "function_call":
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(it.Arguments.OfString, it.CallID, it.Name))
			}
		}
		for i, c := range out.calls {
			o := responses.ResponseInputItemParamOfFunctionCallOutput(results[i])
			o.OfFunctionCallOutput.CallID = param.NewOpt(c.id)
			input = append(input, o)
		}
		next.Input = itemsInput(input...)
		return responsesTurn(t, s, next, stream)
	}
	return out
}

// scenarioName is the word after "SCENARIO:" in prompt.
func scenarioName(prompt string) string {
	_, rest, _ := strings.Cut(prompt, "SCENARIO:")
	if f := strings.Fields(rest); len(f) > 0 {
		return f[0]
	}
	return ""
}

// nativeScenarios is the fake model of these tests: it plays the turn
// the prompt names with "SCENARIO:<name>".
func nativeScenarios(req *agentv1.AgentRunRequest) nativetest.Script {
	action := req.GetAction().GetUserMessageAction()
	prompt := action.GetUserMessage().GetText()
	for _, m := range action.GetConversationHistory().GetMessages() {
		if u := m.GetUser(); u != nil && len(u.GetContent()) > 0 {
			prompt = u.GetContent()[0].GetText().GetText() // the conversation's first user message names it
			break
		}
	}
	usage := nativetest.Usage{Input: 120, Output: 8, CacheRead: 100, CacheWrite: 10}
	name := scenarioName(prompt)
	switch name {
	case "text":
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("Hello", ", <b>world</b>", " & ünïcode ✓")}, Usage: usage}
	case "thinking":
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Thinking("The user wants 2+2. ", "That is 4."), nativetest.Text("The answer is 4.")},
			Usage: nativetest.Usage{Input: 20, Output: 30, Reasoning: 22}}
	case "tool":
		var replayed []string
		for _, m := range action.GetConversationHistory().GetMessages() {
			if tm := m.GetTool(); tm != nil {
				replayed = append(replayed, tm.GetContent()[0].GetText().GetText())
			}
		}
		if len(replayed) > 0 {
			// A replay: the result came in the history.
			return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("Paris: " + strings.Join(replayed, ", "))}, Usage: usage}
		}
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.Text("Let me check."),
			nativetest.ToolCalls(nativetest.Call{Tool: "get_weather", Args: map[string]any{"city": "Paris", "unit": "c"}}),
			nativetest.TextFunc(func(rs []nativetest.ExecResult) string { return "Paris: " + rs[len(rs)-1].Text }),
		}, Usage: usage}
	case "parallel":
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.ToolCalls(
				nativetest.Call{Tool: "get_weather", Args: map[string]any{"city": "Paris"}},
				nativetest.Call{Tool: "read_file", Args: map[string]any{"path": "notes.md"}}),
			nativetest.TextFunc(func(rs []nativetest.ExecResult) string {
				return fmt.Sprintf("weather %s; notes %s", rs[len(rs)-2].Text, rs[len(rs)-1].Text)
			}),
		}, Usage: usage}
	case "shell":
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.Text("Checking. "),
			nativetest.Exec(nativetest.ShellExec("rm -rf /")),
			nativetest.Text("Done without the shell."),
		}, Usage: usage}
	case "quota":
		err := nativetest.ErrQuota()
		err.Meta().Set("Retry-After", "30")
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Fail(err)}}
	case "badmodel":
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Fail(nativetest.ErrBadModel(req.GetRequestedModel().GetModelId()))}}
	}
	return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("unknown scenario " + name)}}
}

// sdkGateway is a gateway on one back door and what its fake recorded.
type sdkGateway struct {
	*stack
	native *nativetest.Server // BACKEND=cursor's fake, else nil
}

// turns counts the upstream turns so far: the native fake's runs, the web
// chat fake's requests.
func (g sdkGateway) turns() int {
	if g.native != nil {
		return len(g.native.Runs())
	}
	return len(g.up.Requests())
}

// sdkBackDoor is a back door the SDK doors run on. Its fake model plays
// the turn a prompt names with "SCENARIO:<name>", in its own wire format.
type sdkBackDoor struct {
	name string
	// start runs a gateway on the back door, env on top of its defaults.
	start func(t *testing.T, env map[string]string) sdkGateway
	// model answers; thinkingModel thinks (its deltas are reasoning).
	model, thinkingModel string
	// cacheRead is the cache-read tokens its fake reports.
	cacheRead int64
	// resumes: a tool result continues the turn's upstream run rather
	// than asking again.
	resumes bool
}

var sdkBackDoors = []sdkBackDoor{
	{name: "web", model: "claude-sonnet-4.6", thinkingModel: "claude-sonnet-4.6-thinking",
		start: func(t *testing.T, env map[string]string) sdkGateway {
			return sdkGateway{stack: newStack(t, env, webScenarios(t))}
		}},
	{name: "cursor", model: "composer-2", thinkingModel: "composer-2", cacheRead: 100, resumes: true,
		start: func(t *testing.T, env map[string]string) sdkGateway {
			s, up := newNativeStackWith(t, nativetest.Options{Script: nativeScenarios}, env)
			return sdkGateway{stack: s, native: up}
		}},
}

// toolResultRE finds a result the text protocol replays to the web chat.
var toolResultRE = regexp.MustCompile(`(?s)<tool_result id="[^"]*" name="([^"]*)">\n(.*?)\n</tool_result>`)

// webScenarios is nativeScenarios' model on the web chat: the same
// answers, its calls written in the text protocol.
func webScenarios(t *testing.T) func(int, cursortest.Request) cursortest.Response {
	usage := &cursortest.Usage{Input: 120, Output: 8}
	return func(_ int, req cursortest.Request) cursortest.Response {
		var prompt, results string
		for _, m := range req.Messages {
			if m.Role == "user" && prompt == "" && strings.Contains(m.Text, "SCENARIO:") {
				prompt = m.Text
			}
			if m.Role == "user" && strings.Contains(m.Text, "<tool_result") {
				results = m.Text
			}
		}
		name := scenarioName(prompt)
		trigger := sentTrigger(req)
		var found []string
		for _, m := range toolResultRE.FindAllStringSubmatch(results, -1) {
			found = append(found, m[2])
		}
		text := func(deltas ...string) cursortest.Response { return cursortest.Text(usage, deltas...) }
		switch name {
		case "text":
			return text("Hello", ", <b>world</b>", " & ünïcode ✓")
		case "thinking":
			return cursortest.Response{Events: cursortest.Frames(usage, []string{"The user wants 2+2. ", "That is 4."}, []string{"The answer is 4."})}
		case "tool":
			if len(found) > 0 {
				return text("Paris: " + strings.Join(found, ", "))
			}
			require.NotEmpty(t, trigger, "the tools were taught")
			return text("Let me check.\n", trigger+"\n", `<invoke name="get_weather">{"city":"Paris","unit":"c"}</invoke>`)
		case "parallel":
			if len(found) == 2 {
				return text(fmt.Sprintf("weather %s; notes %s", found[0], found[1]))
			}
			return text(trigger+"\n", `<invoke name="get_weather">{"city":"Paris"}</invoke>`+"\n", `<invoke name="read_file">{"path":"notes.md"}</invoke>`)
		case "quota":
			return cursortest.Response{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "30"}, Body: "slow down"}
		}
		return text("unknown scenario " + name)
	}
}

// TestSDKDoorsOnBothBackDoors runs the client libraries through every
// door on the web chat and on Cursor's native API alike: the same
// conversations, the same answers, whatever the back door.
func TestSDKDoorsOnBothBackDoors(t *testing.T) {
	for _, back := range sdkBackDoors {
		t.Run(back.name, func(t *testing.T) {
			t.Run("text and usage", func(t *testing.T) {
				g := back.start(t, nil)
				forEachSDKDoor(t, func(t *testing.T, door sdkDoor, stream bool) {
					a := door.ask(t, g.stack, sdkAsk{model: back.model, prompt: "SCENARIO:text", stream: stream})
					require.NoError(t, a.err)
					assert.Equal(t, "Hello, <b>world</b> & ünïcode ✓", a.text)
					assert.Equal(t, "stop", a.finish)
					assert.Empty(t, a.calls)
					assert.Empty(t, a.reasoning)
					assert.Equal(t, back.cacheRead, a.cacheRead, "the upstream's cache-read tokens")
					assert.EqualValues(t, 8, a.output)
					assert.Positive(t, a.input)
				})
				assert.Equal(t, 6, g.turns(), "one upstream turn per request")
			})

			t.Run("thinking", func(t *testing.T) {
				for _, expose := range []bool{false, true} {
					t.Run(fmt.Sprintf("EXPOSE_THINKING=%v", expose), func(t *testing.T) {
						g := back.start(t, map[string]string{"EXPOSE_THINKING": fmt.Sprint(expose)})
						forEachSDKDoor(t, func(t *testing.T, door sdkDoor, stream bool) {
							for _, asked := range []bool{false, true} {
								a := door.ask(t, g.stack, sdkAsk{model: back.thinkingModel, prompt: "SCENARIO:thinking", stream: stream, thinking: asked})
								require.NoError(t, a.err)
								assert.Equal(t, "The answer is 4.", a.text, "the thinking never leaks into the text")
								if expose || (asked && !door.hidesThinking) {
									assert.Equal(t, "The user wants 2+2. That is 4.", a.reasoning, "asked=%v", asked)
								} else {
									assert.Empty(t, a.reasoning, "asked=%v: nobody asked to see it", asked)
								}
							}
						})
					})
				}
			})

			t.Run("a tool call and its result", func(t *testing.T) {
				forEachSDKDoor(t, func(t *testing.T, door sdkDoor, stream bool) {
					g := back.start(t, nil)
					a := door.ask(t, g.stack, sdkAsk{model: back.model, prompt: "Weather in Paris? SCENARIO:tool", stream: stream, tools: true})
					require.NoError(t, a.err)
					assert.Equal(t, "tool_calls", a.finish)
					assert.Equal(t, "Let me check.", strings.TrimSpace(a.text))
					require.Len(t, a.calls, 1)
					assert.Equal(t, "get_weather", a.calls[0].name)
					assert.JSONEq(t, `{"city":"Paris","unit":"c"}`, a.calls[0].args)

					b := a.reply(t, []string{"sunny, 21°C"}, stream)
					require.NoError(t, b.err)
					assert.Equal(t, "Paris: sunny, 21°C", b.text)
					assert.Equal(t, "stop", b.finish)
					assert.Equal(t, back.cacheRead, b.cacheRead)
					if back.resumes {
						assert.Equal(t, 1, g.turns(), "the result resumed the parked run")
					} else {
						assert.Equal(t, 2, g.turns(), "the result went up in a second turn")
					}
					if g.native != nil {
						runs := g.native.Runs()
						var mcp []nativetest.ExecResult
						for _, e := range runs[0].Execs {
							if e.Kind == "mcp_args" {
								mcp = append(mcp, e)
							}
						}
						require.Len(t, mcp, 1)
						assert.Equal(t, "mcp_result.success", mcp[0].Outcome)
						assert.Equal(t, "sunny, 21°C", mcp[0].Text)
						assert.True(t, strings.HasSuffix(mcp[0].Name, "get_weather"), "the MCP tool of get_weather: %s", mcp[0].Name)
						assert.True(t, mcp[0].Closed, "stream_close followed the result")
						assert.False(t, mcp[0].IsError)
						require.Eventually(t, func() bool { return g.native.InFlight() == 0 }, 10*time.Second, 10*time.Millisecond, "the resumed run ended")
					}
				})
			})

			t.Run("two parallel calls in one answer", func(t *testing.T) {
				forEachSDKDoor(t, func(t *testing.T, door sdkDoor, stream bool) {
					g := back.start(t, nil)
					a := door.ask(t, g.stack, sdkAsk{model: back.model, prompt: "Weather and notes? SCENARIO:parallel", stream: stream, tools: true})
					require.NoError(t, a.err)
					assert.Equal(t, "tool_calls", a.finish)
					require.Len(t, a.calls, 2, "both calls reach the client in one answer")
					assert.Equal(t, "get_weather", a.calls[0].name)
					assert.JSONEq(t, `{"city":"Paris"}`, a.calls[0].args)
					assert.Equal(t, "read_file", a.calls[1].name)
					assert.JSONEq(t, `{"path":"notes.md"}`, a.calls[1].args)
					assert.NotEqual(t, a.calls[0].id, a.calls[1].id)

					b := a.reply(t, []string{"sunny", "buy bread"}, stream)
					require.NoError(t, b.err)
					assert.Equal(t, "weather sunny; notes buy bread", b.text)
					if back.resumes {
						assert.Equal(t, 1, g.turns(), "both results resumed the one run")
					}
				})
			})

			t.Run("errors before the first byte", func(t *testing.T) {
				forEachSDKDoor(t, func(t *testing.T, door sdkDoor, stream bool) {
					// A fresh gateway each: a quota rests the key.
					g := back.start(t, nil)
					a := door.ask(t, g.stack, sdkAsk{model: "llama-4", prompt: "SCENARIO:text", stream: stream})
					require.Error(t, a.err)
					assert.Equal(t, http.StatusNotFound, a.status, a.errMsg)
					assert.Contains(t, a.errMsg, back.model, "the message lists the models")
					a = door.ask(t, g.stack, sdkAsk{model: back.model, prompt: "SCENARIO:quota", stream: stream})
					require.Error(t, a.err)
					assert.Equal(t, http.StatusTooManyRequests, a.status, a.errMsg)
					assert.Equal(t, "30", a.retryAfter)
				})
			})
		})
	}
}

// TestNativeBackendDoors covers what only BACKEND=cursor does, through
// every door: the replay of a result no parked run waits for, a built-in
// exec refused, and Cursor's own errors.
func TestNativeBackendDoors(t *testing.T) {
	t.Run("every run on the account's model", func(t *testing.T) {
		s, up := newNativeStackWith(t, nativetest.Options{Script: nativeScenarios}, nil)
		forEachSDKDoor(t, func(t *testing.T, door sdkDoor, stream bool) {
			a := door.ask(t, s, sdkAsk{model: "composer-2", prompt: "SCENARIO:text", stream: stream})
			require.NoError(t, a.err)
		})
		runs := up.Runs()
		require.Len(t, runs, 6)
		for _, r := range runs {
			assert.Equal(t, "composer-2", r.Model())
			assert.Equal(t, "SCENARIO:text", r.UserText())
			assert.Equal(t, "Be brief.", r.Request.GetCustomSystemPrompt(), "the system text as Cursor's system prompt")
		}
	})

	t.Run("replay when no run is parked", func(t *testing.T) {
		forEachSDKDoor(t, func(t *testing.T, door sdkDoor, stream bool) {
			s, up := newNativeStackWith(t, nativetest.Options{Script: nativeScenarios}, map[string]string{"CURSOR_PARK_MAX": "0"})
			a := door.ask(t, s, sdkAsk{model: "composer-2", prompt: "Weather in Paris? SCENARIO:tool", stream: stream, tools: true})
			require.NoError(t, a.err)
			require.Len(t, a.calls, 1)
			b := a.reply(t, []string{"rainy"}, stream)
			require.NoError(t, b.err)
			assert.Equal(t, "Paris: rainy", b.text)
			assert.Equal(t, "stop", b.finish)

			runs := up.Runs()
			require.Len(t, runs, 2, "the result found no parked run: a fresh run")
			action := runs[1].Request.GetAction().GetUserMessageAction()
			history := action.GetConversationHistory().GetMessages()
			var user, call, result bool
			for _, m := range history {
				switch {
				case m.GetUser() != nil:
					user = user || strings.Contains(m.GetUser().GetContent()[0].GetText().GetText(), "SCENARIO:tool")
				case m.GetAssistant() != nil:
					for _, c := range m.GetAssistant().GetContent() {
						if tc := c.GetToolCall(); tc != nil {
							call = true
							assert.Equal(t, a.calls[0].id, tc.GetToolCallId(), "the call keeps the client's id")
							assert.Contains(t, tc.GetToolName(), "get_weather")
							assert.JSONEq(t, `{"city":"Paris","unit":"c"}`, tc.GetArgsJson())
						}
					}
				case m.GetTool() != nil:
					result = true
					assert.Equal(t, a.calls[0].id, m.GetTool().GetToolCallId())
					assert.Equal(t, "rainy", m.GetTool().GetContent()[0].GetText().GetText())
				}
			}
			assert.True(t, user && call && result, "the history holds the user message, the call and its result natively: %v", history)
			assert.NotContains(t, action.GetUserMessage().GetText(), "rainy", "the result is not flattened into the new user text")
		})
	})

	t.Run("a built-in exec is refused and the answer completes", func(t *testing.T) {
		s, up := newNativeStackWith(t, nativetest.Options{Script: nativeScenarios}, nil)
		forEachSDKDoor(t, func(t *testing.T, door sdkDoor, stream bool) {
			a := door.ask(t, s, sdkAsk{model: "composer-2", prompt: "SCENARIO:shell", stream: stream, tools: true})
			require.NoError(t, a.err)
			assert.Equal(t, "Checking. Done without the shell.", a.text)
			assert.Equal(t, "stop", a.finish)
			assert.Empty(t, a.calls, "the built-in tool never reaches the client")
		})
		runs := up.Runs()
		require.Len(t, runs, 6)
		for _, r := range runs {
			var shell []nativetest.ExecResult
			for _, e := range r.Execs {
				if e.Kind == "shell_args" {
					shell = append(shell, e)
				}
			}
			require.Len(t, shell, 1)
			assert.Equal(t, "shell_result.rejected", shell[0].Outcome)
			assert.NotEmpty(t, r.Header.Values("x-cursor-agent-allowed-tools"), "the run asked for no built-in tool")
		}
	})

	t.Run("errors before the first byte", func(t *testing.T) {
		type errCase struct {
			name    string
			opts    nativetest.Options
			env     map[string]string
			model   string
			prompt  string
			status  int
			hint    string
			retry   string
			perCase bool // a fresh gateway per door (a quota rests the key)
		}
		cases := []errCase{
			{name: "version gate", opts: nativetest.Options{MinClientVersion: "99.0"}, env: map[string]string{"MODELS": "composer-2"},
				model: "composer-2", prompt: "SCENARIO:text", status: http.StatusBadGateway, hint: "CURSOR_CLIENT_VERSION"},
			{name: "quota", model: "composer-2", prompt: "SCENARIO:quota", status: http.StatusTooManyRequests, hint: "usage limit", retry: "30", perCase: true},
			{name: "bad key", opts: nativetest.Options{APIKeys: []string{"key_other"}}, env: map[string]string{"MODELS": "composer-2"},
				model: "composer-2", prompt: "SCENARIO:text", status: http.StatusUnauthorized, hint: "CURSOR_API_KEY"},
			{name: "model the catalog lacks", model: "llama-4", prompt: "SCENARIO:text", status: http.StatusNotFound, hint: "composer-2"},
			{name: "model Cursor refuses", model: "composer-2", prompt: "SCENARIO:badmodel", status: http.StatusBadRequest, hint: "GET /v1/models"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tc.opts.Script = nativeScenarios
				var shared *stack
				if !tc.perCase {
					shared, _ = newNativeStackWith(t, tc.opts, tc.env)
				}
				forEachSDKDoor(t, func(t *testing.T, door sdkDoor, stream bool) {
					s := shared
					if s == nil {
						s, _ = newNativeStackWith(t, tc.opts, tc.env)
					}
					a := door.ask(t, s, sdkAsk{model: tc.model, prompt: tc.prompt, stream: stream})
					require.Error(t, a.err, "an error, not an answer")
					assert.Equal(t, tc.status, a.status, "a real status before the first byte: %s", a.errMsg)
					assert.Contains(t, a.errMsg, tc.hint)
					if tc.retry != "" {
						assert.Equal(t, tc.retry, a.retryAfter)
					}
				})
				if shared != nil {
					assert.NotContains(t, shared.logs.String(), nativetest.DefaultAPIKey, "the key is never logged")
				}
				if shared != nil && (tc.status >= 500 || tc.status == http.StatusUnauthorized) {
					// What the gateway could not do shows in /ready too.
					r := shared.do(t, http.MethodGet, "/ready", "")
					assert.Contains(t, r.body, tc.hint, "/ready says what to fix")
					assert.NotContains(t, r.body, nativetest.DefaultAPIKey)
				}
			})
		}
	})
}

// /ready and /metrics show each key of BACKEND=cursor by fingerprint: one
// that works, one Cursor refuses, and then the working one resting after
// a quota. No key appears in them or in the log.
func TestNativeBackendKeyStates(t *testing.T) {
	const good, refused = "key_good_TOPSECRET_1", "key_refused_TOPSECRET_2"
	s, _ := newNativeStackWith(t, nativetest.Options{Script: nativeScenarios, APIKeys: []string{good}},
		map[string]string{"CURSOR_API_KEY": good + "," + refused})
	goodFP, refusedFP := nativekeys.Fingerprint(good), nativekeys.Fingerprint(refused)

	// Conversations spread over both keys; those on the refused key move.
	for i := range 8 {
		r := s.chat(t, fmt.Sprintf(`{"model":"composer-2","messages":[{"role":"user","content":"conversation %d SCENARIO:text"}]}`, i))
		require.Equal(t, http.StatusOK, r.status, r.body)
	}
	r := s.do(t, http.MethodGet, "/ready", "")
	require.Equal(t, http.StatusOK, r.status, "one key serves: ready %s", r.body)
	assert.NotContains(t, r.body, "TOPSECRET")
	require.Len(t, gjson.Get(r.body, "keys").Array(), 2, r.body)
	k := gjson.Get(r.body, `keys.#(key=="`+goodFP+`")`)
	assert.Equal(t, "ok", k.Get("state").String(), r.body)
	assert.GreaterOrEqual(t, k.Get("requests").Int(), int64(8), "every turn ended on the working key")
	k = gjson.Get(r.body, `keys.#(key=="`+refusedFP+`")`)
	assert.Equal(t, "bad", k.Get("state").String(), r.body)
	assert.NotEmpty(t, k.Get("reason").String(), "it says why")

	m := s.do(t, http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusOK, m.status)
	assert.NotContains(t, m.body, "TOPSECRET")
	assert.Contains(t, m.body, `cursor2api_cursor_key_state{key="`+goodFP+`",state="ok"} 1`)
	assert.Contains(t, m.body, `cursor2api_cursor_key_state{key="`+goodFP+`",state="bad"} 0`)
	assert.Contains(t, m.body, `cursor2api_cursor_key_state{key="`+refusedFP+`",state="bad"} 1`)
	assert.Regexp(t, `cursor2api_cursor_key_requests_total\{key="`+goodFP+`"\} ([89]|[1-9][0-9])\n`, m.body)
	assert.Contains(t, m.body, `cursor2api_cursor_key_cooldowns_total{key="`+goodFP+`"} 0`)

	// A quota rests the working key: cooling, until when, and the error.
	r = s.chat(t, `{"model":"composer-2","messages":[{"role":"user","content":"SCENARIO:quota"}]}`)
	require.Equal(t, http.StatusTooManyRequests, r.status, r.body)
	r = s.do(t, http.MethodGet, "/ready", "")
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "no key can serve now: %s", r.body)
	assert.NotContains(t, r.body, "TOPSECRET")
	k = gjson.Get(r.body, `keys.#(key=="`+goodFP+`")`)
	assert.Equal(t, "cooling", k.Get("state").String(), r.body)
	until, err := time.Parse(time.RFC3339Nano, k.Get("cooling_until").String())
	require.NoError(t, err, r.body)
	assert.WithinDuration(t, time.Now().Add(30*time.Second), until, 5*time.Second, "the rest Retry-After asked for")
	assert.NotEmpty(t, k.Get("cooling_for").String())
	assert.EqualValues(t, 1, k.Get("cooldowns").Int())
	assert.Contains(t, k.Get("last_error").String(), "usage limit", r.body)
	m = s.do(t, http.MethodGet, "/metrics", "")
	assert.NotContains(t, m.body, "TOPSECRET")
	assert.Contains(t, m.body, `cursor2api_cursor_key_state{key="`+goodFP+`",state="cooling"} 1`)
	assert.Contains(t, m.body, `cursor2api_cursor_key_cooldowns_total{key="`+goodFP+`"} 1`)
	assert.Regexp(t, `cursor2api_cursor_key_cooling_seconds\{key="`+goodFP+`"\} (2[5-9]|30)(\.\d+)?`, m.body)

	s.Close()
	assert.NotContains(t, s.logs.String(), "TOPSECRET", "no key in the log")
	assert.Contains(t, s.logs.String(), goodFP, "keys are logged by fingerprint")
}
