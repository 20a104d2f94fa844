package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cursortest"
)

// jsFrameworks is the directory whose node_modules holds the Vercel AI SDK
// and LangChain.js (JS_FRAMEWORKS_DIR, installed by .ci/run, never
// committed) and a node to run them; the test skips without either.
func jsFrameworks(t *testing.T) (dir, node string) {
	t.Helper()
	dir = os.Getenv("JS_FRAMEWORKS_DIR")
	if dir == "" {
		t.Skip("SKIPPED: the AI SDK and LangChain tests need JS_FRAMEWORKS_DIR (npm install --prefix DIR ai @ai-sdk/openai @ai-sdk/anthropic @ai-sdk/openai-compatible @langchain/openai @langchain/anthropic @langchain/core zod); .ci/run sets it")
	}
	for _, pkg := range []string{"ai", "@ai-sdk/openai", "@ai-sdk/anthropic", "@ai-sdk/openai-compatible", "@langchain/openai", "@langchain/anthropic", "zod"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			t.Skipf("SKIPPED: JS_FRAMEWORKS_DIR=%s holds no %s: %v", dir, pkg, err)
		}
	}
	node = nodeBinary(t)
	return dir, node
}

// runJSCase runs one case of testdata/js_frameworks.mjs against s and
// returns its JSON lines by type.
func runJSCase(t *testing.T, dir, node string, s *stack, name string) map[string]map[string]any {
	t.Helper()
	driver, err := filepath.Abs("testdata/js_frameworks.mjs")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, driver)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "JS_FRAMEWORKS_DIR=" + dir,
		"GATEWAY_URL=" + s.URL, "GATEWAY_KEY=sk-js-test", "JS_CASE=" + name,
		// Anything not meant for the gateway goes to a closed loopback port.
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost",
		"LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("driver exit: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	lines := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			if typ, ok := l["type"].(string); ok {
				lines[typ] = l
			}
		}
	}
	require.NotContains(t, lines, "driver_error")
	return lines
}

// nthUpstream is everything the n-th upstream request said.
func nthUpstream(t *testing.T, s *stack, n int) string {
	t.Helper()
	reqs := s.up.Requests()
	require.Greater(t, len(reqs), n, "upstream requests")
	return upstreamText(reqs[n])
}

// assertWeatherRoundTrip checks what the model was sent for weatherCall's
// two turns through door: the tool offered, then the call and its result
// as history; and that both turns went through door.
func assertWeatherRoundTrip(t *testing.T, s *stack, door string) {
	t.Helper()
	assert.Contains(t, nthUpstream(t, s, 0), `<function name="weather">`, "the tool is offered")
	replay := nthUpstream(t, s, 1)
	assert.Contains(t, replay, `<invoke name="weather">`, "the call comes back as history")
	assert.Contains(t, replay, "Sunny, 21 C in Paris", "with the tool's result")
	s.Close()
	assert.Equal(t, 2, strings.Count(s.logs.String(), "door="+door), s.logs.String())
}

// weatherCall is the fake model's turns: a weather call for Paris, then
// an answer built on the tool's result.
func weatherCall(t *testing.T) func(int, cursortest.Request) cursortest.Response {
	return script(t,
		[]string{"Let me check.\nTRIGGER\n", `<invoke name="weather">{"city": "Paris"}</invoke>`},
		[]string{"It is sunny ", "and 21 C in Paris."},
	)
}

// TestJSAISDKTools runs the AI SDK's generateText with an executed zod
// tool over two steps through each of its providers a user would point at
// the gateway: @ai-sdk/openai's default (Responses) and .chat (chat
// completions) models, @ai-sdk/anthropic (Messages) and
// @ai-sdk/openai-compatible (chat completions).
func TestJSAISDKTools(t *testing.T) {
	dir, node := jsFrameworks(t)
	for _, tc := range []struct{ name, door string }{
		{"ai-openai-responses", "responses"},
		{"ai-openai-chat", "openai"},
		{"ai-anthropic", "anthropic"},
		{"ai-openai-compatible", "openai"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, map[string]string{"API_KEY": "sk-js-test"}, weatherCall(t))
			lines := runJSCase(t, dir, node, s, tc.name)

			assert.Equal(t, map[string]any{"city": "Paris"}, lines["executed"]["args"], "the tool ran with the model's arguments")
			res := lines["result"]
			require.NotNil(t, res)
			assert.Equal(t, "It is sunny and 21 C in Paris.", res["text"])
			assert.Equal(t, "stop", res["finish_reason"])
			steps, _ := res["steps"].([]any)
			require.Len(t, steps, 2)
			first := steps[0].(map[string]any)
			assert.Equal(t, "tool-calls", first["finish_reason"])
			assert.Equal(t, []any{map[string]any{"name": "weather", "input": map[string]any{"city": "Paris"}}}, first["tool_calls"])
			usage, _ := res["usage"].(map[string]any)
			assert.EqualValues(t, 2*defaultUsage.Input, usage["inputTokens"], "usage of both steps: %v", usage)
			assert.EqualValues(t, 2*defaultUsage.Output, usage["outputTokens"], "usage of both steps: %v", usage)

			assertWeatherRoundTrip(t, s, tc.door)
		})
	}
}

// TestJSAISDKStream streams text through the AI SDK's streamText on
// @ai-sdk/openai's chat model: the deltas arrive apart and join to the
// answer. The fake upstream paces its deltas: the gateway forwards what
// it has read, so deltas read together would arrive as one.
func TestJSAISDKStream(t *testing.T) {
	dir, node := jsFrameworks(t)
	paced := cursortest.Response{Events: cursortest.Frames(&defaultUsage, nil, []string{"Hello ", "from ", "the gateway."}), Delay: 300 * time.Millisecond}
	s := newStack(t, map[string]string{"API_KEY": "sk-js-test"}, cursortest.Always(paced))
	res := runJSCase(t, dir, node, s, "ai-stream")["result"]
	require.NotNil(t, res)
	deltas, _ := res["deltas"].([]any)
	assert.Greater(t, len(deltas), 1, "the text arrives in pieces: %v", deltas)
	var joined strings.Builder
	for _, d := range deltas {
		joined.WriteString(d.(string))
	}
	assert.Equal(t, "Hello from the gateway.", joined.String())
	assert.Equal(t, "Hello from the gateway.", res["text"])
	assert.Equal(t, "stop", res["finish_reason"])
	usage, _ := res["usage"].(map[string]any)
	assert.EqualValues(t, defaultUsage.Input, usage["inputTokens"], "usage: %v", usage)
	assert.EqualValues(t, defaultUsage.Output, usage["outputTokens"], "usage: %v", usage)
	assert.Contains(t, nthUpstream(t, s, 0), "Say hello.")
}

// TestJSAISDKStreamTools is TestJSAISDKTools streamed (streamText), as a
// chat UI runs it: through each door the call streams in, runs, and the
// second step streams the answer, with no error part.
func TestJSAISDKStreamTools(t *testing.T) {
	dir, node := jsFrameworks(t)
	for _, tc := range []struct{ name, door string }{
		{"ai-stream-tools-responses", "responses"},
		{"ai-stream-tools-chat", "openai"},
		{"ai-stream-tools-anthropic", "anthropic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, map[string]string{"API_KEY": "sk-js-test"}, weatherCall(t))
			lines := runJSCase(t, dir, node, s, tc.name)

			assert.Equal(t, map[string]any{"city": "Paris"}, lines["executed"]["args"], "the tool ran with the model's arguments")
			res := lines["result"]
			require.NotNil(t, res)
			assert.Empty(t, res["errors"])
			assert.Equal(t, "It is sunny and 21 C in Paris.", res["text"])
			assert.Equal(t, "stop", res["finish_reason"])
			var parts []string
			for _, p := range res["parts"].([]any) {
				parts = append(parts, p.(string))
			}
			order := []string{"start-step", "tool-input-delta", "tool-call", "tool-result", "finish-step", "start-step", "text-delta", "finish-step", "finish"}
			at := 0
			for _, p := range parts {
				if at < len(order) && p == order[at] {
					at++
				}
			}
			assert.Equal(t, len(order), at, "the stream's parts %v hold %v in order", parts, order)
			steps, _ := res["steps"].([]any)
			require.Len(t, steps, 2)
			assert.Equal(t, "tool-calls", steps[0].(map[string]any)["finish_reason"])
			usage, _ := res["usage"].(map[string]any)
			assert.EqualValues(t, 2*defaultUsage.Output, usage["outputTokens"], "usage of both steps: %v", usage)

			assert.Contains(t, nthUpstream(t, s, 1), "Sunny, 21 C in Paris", "the tool's result reached the model")
			s.Close()
			assert.Equal(t, 2, strings.Count(s.logs.String(), "door="+tc.door), s.logs.String())
		})
	}
}

// TestJSLangChainTools binds a tool to LangChain's ChatOpenAI (chat
// completions, and Responses with useResponsesApi) and ChatAnthropic,
// invokes (or streams), runs the tool call the AIMessage carries and
// invokes again with its ToolMessage for the final text.
func TestJSLangChainTools(t *testing.T) {
	dir, node := jsFrameworks(t)
	for _, tc := range []struct{ name, door string }{
		{"lc-openai", "openai"},
		{"lc-openai-stream", "openai"},
		{"lc-openai-responses", "responses"},
		{"lc-openai-responses-stream", "responses"},
		{"lc-anthropic", "anthropic"},
		{"lc-anthropic-stream", "anthropic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, map[string]string{"API_KEY": "sk-js-test"}, weatherCall(t))
			lines := runJSCase(t, dir, node, s, tc.name)

			first := lines["first"]
			require.NotNil(t, first)
			calls, _ := first["tool_calls"].([]any)
			require.Len(t, calls, 1, "the AIMessage carries the call")
			call := calls[0].(map[string]any)
			assert.Equal(t, "weather", call["name"])
			assert.Equal(t, map[string]any{"city": "Paris"}, call["args"], "with its arguments parsed")
			assert.NotEmpty(t, call["id"])
			usage, _ := first["usage"].(map[string]any)
			if tc.name == "lc-anthropic-stream" {
				// LangChain takes a stream's input tokens from message_start,
				// sent before the upstream has counted: the gateway's estimate.
				assert.Greater(t, usage["input_tokens"], 0.0, "usage: %v", usage)
				assert.GreaterOrEqual(t, usage["output_tokens"], float64(defaultUsage.Output), "usage: %v", usage)
			} else {
				assert.EqualValues(t, defaultUsage.Input, usage["input_tokens"], "usage: %v", usage)
				assert.EqualValues(t, defaultUsage.Output, usage["output_tokens"], "usage: %v", usage)
			}

			second := lines["second"]
			require.NotNil(t, second)
			assert.Equal(t, "It is sunny and 21 C in Paris.", second["text"])
			assert.Empty(t, second["tool_calls"])
			if strings.HasSuffix(tc.name, "-stream") {
				assert.Greater(t, lines["streamed"]["chunks"], 2.0, "the answer streamed in chunks")
			}

			assertWeatherRoundTrip(t, s, tc.door)
		})
	}
}

// TestJSLangChainStructured runs withStructuredOutput on a zod schema:
// ChatOpenAI's default sends a json_schema response_format (text.format
// with useResponsesApi), ChatAnthropic's jsonSchema method
// output_config.format, so the model must be told the schema; ChatOpenAI's
// functionCalling method and ChatAnthropic's default force a tool call.
// The parsed object comes back.
func TestJSLangChainStructured(t *testing.T) {
	dir, node := jsFrameworks(t)
	asJSON := []string{`{"city": "Paris", `, `"celsius": 21}`}
	asCall := []string{"TRIGGER\n", `<invoke name="temperature">{"city": "Paris", "celsius": 21}</invoke>`}
	for _, tc := range []struct {
		name  string
		reply []string
	}{
		{"lc-structured", asJSON},
		{"lc-structured-responses", asJSON},
		{"lc-structured-anthropic-json", asJSON},
		{"lc-structured-tool", asCall},
		{"lc-structured-anthropic", asCall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, map[string]string{"API_KEY": "sk-js-test"}, script(t, tc.reply))
			res := runJSCase(t, dir, node, s, tc.name)["result"]
			require.NotNil(t, res)
			assert.Equal(t, map[string]any{"city": "Paris", "celsius": 21.0}, res["parsed"])
			sent := nthUpstream(t, s, 0)
			assert.Contains(t, sent, "How warm is it in Paris?")
			if tc.reply[0] == asCall[0] {
				assert.Contains(t, sent, `<function name="temperature">`, "the schema is offered as a tool")
			} else {
				assert.Contains(t, sent, "one JSON value only", "the model is told to answer in JSON")
				if !strings.Contains(tc.name, "anthropic") { // Anthropic's format has no name
					assert.Contains(t, sent, "(temperature", "named as the client named it")
				}
			}
			assert.Contains(t, sent, `"celsius":{"type":"number"`, "in the schema it must match")
			assert.Len(t, s.up.Requests(), 1)
		})
	}
}

// TestJSAISDKObject asks for an object with generateText's Output.object
// through each door: the schema reaches the model (Responses' text.format,
// chat completions' response_format, Anthropic's output_config.format),
// and the parsed object comes back.
func TestJSAISDKObject(t *testing.T) {
	dir, node := jsFrameworks(t)
	for _, name := range []string{"ai-object-responses", "ai-object-chat", "ai-object-anthropic"} {
		t.Run(name, func(t *testing.T) {
			s := newStack(t, map[string]string{"API_KEY": "sk-js-test"}, script(t, []string{`{"city": "Paris", `, `"celsius": 21}`}))
			res := runJSCase(t, dir, node, s, name)["result"]
			require.NotNil(t, res)
			assert.Equal(t, map[string]any{"city": "Paris", "celsius": 21.0}, res["object"])
			assert.Equal(t, "stop", res["finish_reason"])
			sent := nthUpstream(t, s, 0)
			assert.Contains(t, sent, "How warm is it in Paris?")
			assert.Contains(t, sent, "one JSON value only", "the model is told to answer in JSON")
			assert.Contains(t, sent, `"celsius":{"type":"number"}`, "in the schema it must match")
		})
	}
}

// TestJSToolSchema offers a tool whose zod schema has what users write (a
// reused object, an enum, optional, nullable, arrays, a union, a record)
// through the AI SDK and LangChain: the schema reaches the model whole
// and the model's arguments reach the tool as it wrote them.
func TestJSToolSchema(t *testing.T) {
	dir, node := jsFrameworks(t)
	args := `{"from":{"city":"Paris","country":"FR"},"to":{"city":"Oslo","country":"NO"},"class":"business","seats":2,` +
		`"loyalty":null,"stops":[{"city":"Hamburg","country":"DE"}],"when":"asap","extras":{"wifi":true}}`
	var want map[string]any
	require.NoError(t, json.Unmarshal([]byte(args), &want))
	for _, name := range []string{"ai-schema", "lc-schema"} {
		t.Run(name, func(t *testing.T) {
			s := newStack(t, map[string]string{"API_KEY": "sk-js-test"}, script(t, []string{"TRIGGER\n", `<invoke name="book">` + args + `</invoke>`}))
			lines := runJSCase(t, dir, node, s, name)
			assert.Equal(t, want, lines["executed"]["args"])
			assert.EqualValues(t, 1, lines["result"]["calls"])
			sent := nthUpstream(t, s, 0)
			assert.Contains(t, sent, `<function name="book">`)
			assert.Contains(t, sent, `"enum":["economy","business"]`)
			assert.Contains(t, sent, `"loyalty":{"type":["string","null"]}`)
		})
	}
}

// TestJSAISDKErrors sends a key the gateway does not know through each of
// the AI SDK's providers: the user's error carries the gateway's status
// and its message saying what to fix, not a parse failure.
func TestJSAISDKErrors(t *testing.T) {
	dir, node := jsFrameworks(t)
	for _, name := range []string{"ai-error-chat", "ai-error-responses", "ai-error-anthropic"} {
		t.Run(name, func(t *testing.T) {
			s := newStack(t, map[string]string{"API_KEY": "sk-someone-else"}, script(t, []string{"unused"}))
			res := runJSCase(t, dir, node, s, name)["result"]
			require.NotNil(t, res)
			e, _ := res["error"].(map[string]any)
			require.NotNil(t, e, "the call fails")
			assert.Equal(t, "AI_APICallError", e["name"])
			assert.EqualValues(t, 401, e["status"])
			assert.Contains(t, e["message"], "invalid API key")
			assert.Empty(t, s.up.Requests())
		})
	}
}

// TestJSAISDKAbort aborts streamText (abortSignal) after its first delta
// while the upstream is still answering: the gateway cancels the upstream
// request and logs the client as gone, on every door.
func TestJSAISDKAbort(t *testing.T) {
	dir, node := jsFrameworks(t)
	hang := cursortest.Always(cursortest.Response{Events: []string{
		`{"type":"start"}`, `{"type":"text-start","id":"t0"}`, `{"type":"text-delta","id":"t0","delta":"first words"}`,
	}, Hang: true})
	for _, tc := range []struct{ name, door string }{
		{"ai-abort-chat", "openai"},
		{"ai-abort-responses", "responses"},
		{"ai-abort-anthropic", "anthropic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, map[string]string{"API_KEY": "sk-js-test"}, hang)
			res := runJSCase(t, dir, node, s, tc.name)["result"]
			require.NotNil(t, res)
			assert.Equal(t, []any{"first words"}, res["deltas"])
			waitClosed(t, s.up.Canceled(), 10*time.Second, "cancelling the upstream request after the client aborted")
			s.Close() // waits for the handler
			assert.Contains(t, s.logs.String(), "door="+tc.door)
			assert.Contains(t, s.logs.String(), "status=499")
		})
	}
}

// TestJSAISDKThinking turns Anthropic's extended thinking on through
// @ai-sdk/anthropic's providerOptions over two tool steps: each step's
// reasoning comes back, and the step with the thinking block and its
// placeholder signature goes back to the gateway without complaint.
func TestJSAISDKThinking(t *testing.T) {
	dir, node := jsFrameworks(t)
	s := newStack(t, map[string]string{"API_KEY": "sk-js-test"}, scriptWith(t, &defaultUsage, []string{"Weighing ", "the tool."},
		[]string{"Let me check.\nTRIGGER\n", `<invoke name="weather">{"city": "Paris"}</invoke>`},
		[]string{"It is sunny ", "and 21 C in Paris."}))
	lines := runJSCase(t, dir, node, s, "ai-thinking-anthropic")
	assert.Equal(t, map[string]any{"city": "Paris"}, lines["executed"]["args"])
	res := lines["result"]
	require.NotNil(t, res)
	assert.Equal(t, []any{"Weighing the tool.", "Weighing the tool."}, res["reasoning"])
	assert.Equal(t, "It is sunny and 21 C in Paris.", res["text"])
	assert.Contains(t, nthUpstream(t, s, 0), "<thinking>", "the model is asked to think")
	assert.Contains(t, nthUpstream(t, s, 1), "Sunny, 21 C in Paris")
}

// TestJSAISDKToolResults has the AI SDK's tool return an object, then
// fail, through each door: the object reaches the model as JSON, and the
// failure as its message, so the model can answer from either.
func TestJSAISDKToolResults(t *testing.T) {
	dir, node := jsFrameworks(t)
	for _, door := range []string{"ai-openai-responses", "ai-openai-chat", "ai-anthropic"} {
		for _, tc := range []struct{ mode, want string }{
			{"object", `{"city":"Paris","forecast":"Sunny, 21 C in Paris","celsius":21}`},
			{"throw", "weather service down for Paris"},
		} {
			t.Run(door+"+"+tc.mode, func(t *testing.T) {
				s := newStack(t, map[string]string{"API_KEY": "sk-js-test"}, weatherCall(t))
				lines := runJSCase(t, dir, node, s, door+"+"+tc.mode)
				assert.Equal(t, map[string]any{"city": "Paris"}, lines["executed"]["args"])
				require.NotNil(t, lines["result"])
				assert.Equal(t, "It is sunny and 21 C in Paris.", lines["result"]["text"])
				replay := nthUpstream(t, s, 1)
				at := strings.Index(replay, "<tool_result ")
				require.GreaterOrEqual(t, at, 0, "the result goes back:\n%s", replay)
				assert.Contains(t, replay[at:], tc.want)
				// Only the Messages API says a result is a failure
				// (is_error): the model reads that mark too.
				if door == "ai-anthropic" && tc.mode == "throw" {
					assert.Contains(t, replay[at:], `status="error"`)
				} else {
					assert.NotContains(t, replay[at:], `status="error"`)
				}
			})
		}
	}
}
