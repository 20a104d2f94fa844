//go:build unix

package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/config"
	"cursor2api/services"
	"cursor2api/services/agentcli/agentclitest"
	"cursor2api/services/cursortest"
)

// The agent backend, driven through the real HTTP handlers: the gateway is
// wired by services.FromConfig with BACKEND=agent and AGENT_BIN pointing
// at the fake agent (services/agentcli/testdata/fakeagent), which replays
// the script named by "SCENARIO:<name>" in the prompt.

// agentStack is a gateway on the fake agent, with the fake's home (its
// controls and records) and the directory of the request workspaces.
type agentStack struct {
	*stack
	home agentclitest.Home
	work string
}

// newAgentStack starts the gateway on the agent backend. prepare may set
// up the fake's home before the gateway starts (it learns its models at
// start).
func newAgentStack(t *testing.T, bin string, env map[string]string, prepare func(agentclitest.Home)) *agentStack {
	t.Helper()
	gin.SetMode(gin.TestMode)
	home, work := agentclitest.NewHome(t), t.TempDir()
	if prepare != nil {
		prepare(home)
	}
	vars := map[string]string{
		"BACKEND": "agent", "AGENT_BIN": bin, "AGENT_WORKDIR": work, "HOME": string(home), "PATH": "/usr/bin:/bin",
		"CURSOR_API_KEY": "key-agent-test", "CURSOR_COOKIE": "secret-cookie", "LOG_LEVEL": "debug",
		// The web backend's upstream: never called on this backend.
		"CURSOR_API_URL": "http://127.0.0.1:9/never",
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.FromMap(vars)
	require.NoError(t, err)
	logs := &cursortest.LogBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	gw, err := services.FromConfig(cfg, logger)
	require.NoError(t, err)
	require.Nil(t, gw.Human, "no web back door (nor its x-is-human) on the agent backend")
	handler := New(Options{
		Chat: gw.Chat, Catalog: gw.Catalog, APIKeys: cfg.APIKeys, MaxBodyBytes: cfg.MaxBodyBytes,
		PingInterval: cfg.PingInterval.Duration(), Version: "test-version", Logger: logger,
		Aliases: gw.Aliases, Metrics: gw.Metrics, Readiness: gw.Readiness,
	})
	srv := httptest.NewServer(handler)
	s := &agentStack{stack: &stack{Server: srv, cfg: cfg, logs: logs}, home: home, work: work}
	t.Cleanup(func() {
		srv.Close()
		// Every process the fake started is gone (killed and reaped), and
		// so is every workspace.
		home.WaitGone(t, 30*time.Second)
		assert.Zero(t, gw.Running())
		entries, err := os.ReadDir(work)
		require.NoError(t, err)
		assert.Empty(t, entries, "every workspace removed")
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	return s
}

// doorAnswer is a front door's answer, reduced to what every door has.
type doorAnswer struct {
	status    int
	header    http.Header
	text      string
	reasoning string
	calls     []doorCall
	finish    string // the door's own stop reason
	errType   string // the door's error type, for a failure
	errMsg    string
	streamErr bool // the failure came as an event after a 200
	usageIn   int64
	usageOut  int64
}

type doorCall struct{ name, args string }

// agentDoor is a front door the agent backend is driven through. Each
// door of the gateway adds an entry; the tests run every case on each.
type agentDoor struct {
	name string
	// request is the door's request with prompt as the one user message,
	// after the system prompt "Be brief.", for model, with the get_weather
	// tool when tools is set.
	request func(model, prompt string, stream, tools bool) doorRequest
	// ask sends that request through the gateway and reads the answer,
	// checking the framing of a stream.
	ask func(t *testing.T, s *stack, model, prompt string, stream, tools bool) doorAnswer
	// toolStop and stop are the door's finish reasons.
	stop, toolStop string
	// asksReasoning says that request asks to see the reasoning; the
	// other doors show it only with EXPOSE_THINKING.
	asksReasoning bool
}

// doorRequest is a door's request: where it goes, its body and its
// headers as name, value pairs.
type doorRequest struct {
	path, body string
	header     []string
}

// send posts the request with ctx, for a test that reads the answer as it
// comes (the caller closes the body).
func (r doorRequest) send(t *testing.T, ctx context.Context, s *stack) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+r.path, strings.NewReader(r.body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i < len(r.header); i += 2 {
		req.Header.Set(r.header[i], r.header[i+1])
	}
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	return resp
}

// agentDoors are the gateway's front doors. Each says "stopped" and
// "stopped to call tools" in its own terms: the Responses API has no stop
// reason, so its finish is the response's status and the type of its last
// output item.
var agentDoors = []agentDoor{
	{name: "openai", request: openAIRequest, ask: askOpenAI, stop: "stop", toolStop: "tool_calls"},
	{name: "anthropic", request: anthropicRequest, ask: askAnthropic, stop: "end_turn", toolStop: "tool_use"},
	{name: "responses", request: responsesRequest, ask: askResponses, stop: "completed:message", toolStop: "completed:function_call", asksReasoning: true},
	{name: "gemini", request: geminiRequest, ask: askGemini, stop: "STOP", toolStop: "STOP", asksReasoning: true},
}

const weatherTool = `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`

// weatherParams is the schema of the weather tool's parameters, which
// every door's tool carries.
var weatherParams = json.RawMessage(gjson.Get(weatherTool, "function.parameters").Raw)

// mustJSON encodes a request body built by the test itself.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func openAIRequest(model, prompt string, stream, tools bool) doorRequest {
	body := map[string]any{"model": model, "stream": stream,
		"messages": []map[string]any{{"role": "system", "content": "Be brief."}, {"role": "user", "content": prompt}}}
	if stream {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	if tools {
		body["tools"] = []json.RawMessage{json.RawMessage(weatherTool)}
	}
	return doorRequest{path: "/v1/chat/completions", body: mustJSON(body)}
}

func askOpenAI(t *testing.T, s *stack, model, prompt string, stream, tools bool) doorAnswer {
	t.Helper()
	r := s.chat(t, openAIRequest(model, prompt, stream, tools).body)
	out := doorAnswer{status: r.status, header: r.header}
	if r.status != http.StatusOK {
		out.errType, out.errMsg = gjson.Get(r.body, "error.type").String(), gjson.Get(r.body, "error.message").String()
		return out
	}
	if stream {
		st := checkStream(t, r, model)
		out.text, out.reasoning, out.finish = st.Text, st.Reasoning, st.Finish
		for _, c := range st.Calls {
			out.calls = append(out.calls, doorCall{c.Name, c.Arguments})
		}
		if st.Error != nil {
			out.streamErr = true
			out.errType, out.errMsg = st.Error.Get("error.type").String(), st.Error.Get("error.message").String()
		}
		if st.Usage != nil {
			out.usageIn, out.usageOut = st.Usage.Get("prompt_tokens").Int(), st.Usage.Get("completion_tokens").Int()
		}
		return out
	}
	res := gjson.Parse(r.body)
	msg := res.Get("choices.0.message")
	out.text, out.reasoning = msg.Get("content").String(), msg.Get("reasoning_content").String()
	out.finish = res.Get("choices.0.finish_reason").String()
	for _, c := range msg.Get("tool_calls").Array() {
		out.calls = append(out.calls, doorCall{c.Get("function.name").String(), c.Get("function.arguments").String()})
	}
	out.usageIn, out.usageOut = res.Get("usage.prompt_tokens").Int(), res.Get("usage.completion_tokens").Int()
	return out
}

// anthropicRequest sends no thinking config, which would turn thinking on
// whatever the model: the model alone decides, and EXPOSE_THINKING alone
// shows the thinking.
func anthropicRequest(model, prompt string, stream, tools bool) doorRequest {
	body := map[string]any{"model": model, "max_tokens": 1024, "stream": stream, "system": "Be brief.",
		"messages": []map[string]any{{"role": "user", "content": prompt}}}
	if tools {
		body["tools"] = []map[string]any{{"name": "get_weather", "input_schema": weatherParams}}
	}
	return doorRequest{path: "/v1/messages", body: mustJSON(body), header: []string{"anthropic-version", "2023-06-01"}}
}

func askAnthropic(t *testing.T, s *stack, model, prompt string, stream, tools bool) doorAnswer {
	t.Helper()
	req := anthropicRequest(model, prompt, stream, tools)
	r := s.do(t, http.MethodPost, req.path, req.body, req.header...)
	out := doorAnswer{status: r.status, header: r.header}
	if r.status != http.StatusOK {
		require.Equal(t, "error", gjson.Get(r.body, "type").String(), "an Anthropic error body: %s", r.body)
		out.errType, out.errMsg = gjson.Get(r.body, "error.type").String(), gjson.Get(r.body, "error.message").String()
		return out
	}
	if stream {
		readClaudeStream(t, claudeEvents(t, r), model, &out)
	} else {
		res := gjson.Parse(r.body)
		assert.Equal(t, "message", res.Get("type").String(), r.body)
		assert.Equal(t, model, res.Get("model").String(), "the model echoed")
		for _, b := range res.Get("content").Array() {
			switch b.Get("type").String() {
			case "text":
				out.text += b.Get("text").String()
			case "thinking":
				out.reasoning += b.Get("thinking").String()
				assert.NotEmpty(t, b.Get("signature").String(), "a thinking block is signed")
			case "tool_use":
				assert.Regexp(t, `^toolu_[A-Za-z0-9]+$`, b.Get("id").String())
				out.calls = append(out.calls, doorCall{b.Get("name").String(), b.Get("input").Raw})
			default:
				t.Errorf("unexpected content block %s", b.Raw)
			}
		}
		out.finish = res.Get("stop_reason").String()
		out.usageIn, out.usageOut = res.Get("usage.input_tokens").Int(), res.Get("usage.output_tokens").Int()
	}
	for _, mark := range protocolMarkup {
		assert.NotContains(t, out.text, mark, "protocol markup in the content")
	}
	return out
}

// readClaudeStream reassembles a Messages stream into out, checking every
// event's exact fields and order: message_start, blocks one at a time in
// index order, message_delta and message_stop, or a final error event.
func readClaudeStream(t *testing.T, events []claudeEvent, model string, out *doorAnswer) {
	t.Helper()
	require.NotEmpty(t, events)
	trace(t, events, model)
	started, stopped := false, false
	open, next, kind := -1, 0, ""
	for i, ev := range events {
		d := ev.Data
		if ev.Name == "error" {
			require.Equal(t, len(events)-1, i, "an error event ends the stream")
			out.streamErr = true
			out.errType, out.errMsg = d.Get("error.type").String(), d.Get("error.message").String()
			continue
		}
		require.False(t, stopped && ev.Name != "message_stop", "nothing after message_delta but message_stop: %s", d.Raw)
		if ev.Name == "message_start" {
			require.Zero(t, i, "message_start opens the stream")
			started = true
			continue
		}
		require.True(t, started, "%s before message_start", ev.Name)
		switch ev.Name {
		case "content_block_start":
			require.Equal(t, -1, open, "one block at a time: %s", d.Raw)
			require.EqualValues(t, next, d.Get("index").Int(), "blocks go 0, 1, 2…")
			open, kind = next, d.Get("content_block.type").String()
			if kind == "tool_use" {
				out.calls = append(out.calls, doorCall{name: d.Get("content_block.name").String()})
			}
		case "content_block_delta":
			require.EqualValues(t, open, d.Get("index").Int(), "a delta of the open block: %s", d.Raw)
			want := map[string]string{"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "thinking", "input_json_delta": "tool_use"}
			typ := d.Get("delta.type").String()
			require.Equal(t, want[typ], kind, "a %s in a %s block", typ, kind)
			switch typ {
			case "text_delta":
				out.text += d.Get("delta.text").String()
			case "thinking_delta":
				out.reasoning += d.Get("delta.thinking").String()
			case "input_json_delta":
				out.calls[len(out.calls)-1].args += d.Get("delta.partial_json").String()
			}
		case "content_block_stop":
			require.EqualValues(t, open, d.Get("index").Int(), "the open block stops: %s", d.Raw)
			open = -1
			next++
		case "message_delta":
			require.Equal(t, -1, open, "every block stopped before message_delta")
			stopped = true
			out.finish = d.Get("delta.stop_reason").String()
			out.usageIn, out.usageOut = d.Get("usage.input_tokens").Int(), d.Get("usage.output_tokens").Int()
		}
	}
	if !out.streamErr {
		require.GreaterOrEqual(t, len(events), 3)
		assert.Equal(t, []string{"message_delta", "message_stop"}, []string{events[len(events)-2].Name, events[len(events)-1].Name}, "the stream ends with message_delta and message_stop")
	}
}

// responsesRequest asks for the reasoning summary, as Codex CLI does:
// that alone shows the thinking of a thinking model on this door.
func responsesRequest(model, prompt string, stream, tools bool) doorRequest {
	body := map[string]any{"model": model, "stream": stream, "instructions": "Be brief.", "input": prompt,
		"reasoning": map[string]any{"summary": "auto"}}
	if tools {
		body["tools"] = []map[string]any{{"type": "function", "name": "get_weather", "parameters": weatherParams}}
	}
	return doorRequest{path: "/v1/responses", body: mustJSON(body)}
}

func askResponses(t *testing.T, s *stack, model, prompt string, stream, tools bool) doorAnswer {
	t.Helper()
	req := responsesRequest(model, prompt, stream, tools)
	r := s.do(t, http.MethodPost, req.path, req.body, req.header...)
	out := doorAnswer{status: r.status, header: r.header}
	if r.status != http.StatusOK {
		out.errType, out.errMsg = gjson.Get(r.body, "error.type").String(), gjson.Get(r.body, "error.message").String()
		return out
	}
	resp := gjson.Parse(r.body)
	if stream {
		resp = readResponsesStream(t, respEvents(t, r), &out)
	}
	assert.True(t, strings.HasPrefix(resp.Get("id").String(), "resp_"), resp.Get("id").String())
	assert.Equal(t, model, resp.Get("model").String(), "the model echoed")
	var text, reasoning string
	var calls []doorCall
	output := resp.Get("output").Array()
	for _, it := range output {
		switch it.Get("type").String() {
		case "message":
			for _, p := range it.Get("content").Array() {
				text += p.Get("text").String()
			}
		case "reasoning":
			for _, p := range it.Get("summary").Array() {
				reasoning += p.Get("text").String()
			}
		case "function_call":
			assert.Regexp(t, `^call_[A-Za-z0-9]+$`, it.Get("call_id").String())
			calls = append(calls, doorCall{it.Get("name").String(), it.Get("arguments").String()})
		default:
			t.Errorf("unexpected output item %s", it.Raw)
		}
	}
	if stream {
		// The output is what the deltas said.
		assert.Equal(t, out.text, text, "the streamed text is the output's")
		assert.Equal(t, out.reasoning, reasoning, "the streamed summary is the output's")
		assert.Equal(t, out.calls, calls, "the streamed calls are the output's")
	}
	out.text, out.reasoning, out.calls = text, reasoning, calls
	out.finish = resp.Get("status").String()
	if len(output) > 0 {
		out.finish += ":" + output[len(output)-1].Get("type").String()
	}
	if u := resp.Get("usage"); u.IsObject() {
		out.usageIn, out.usageOut = u.Get("input_tokens").Int(), u.Get("output_tokens").Int()
	}
	for _, mark := range protocolMarkup {
		assert.NotContains(t, out.text, mark, "protocol markup in the content")
	}
	return out
}

// readResponsesStream reassembles a Responses stream into out, checking
// that it opens with created and in_progress and ends with completed (or
// incomplete), or error then failed. It returns the last event's response.
func readResponsesStream(t *testing.T, evs []respEvent, out *doorAnswer) gjson.Result {
	t.Helper()
	require.GreaterOrEqual(t, len(evs), 3, "%s", eventNames(evs))
	assert.Equal(t, []string{"response.created", "response.in_progress"}, eventNames(evs[:2]))
	checkItems(t, evs)
	last := evs[len(evs)-1]
	resp := last.Data.Get("response")
	switch last.Name {
	case "response.completed":
		assert.Equal(t, "completed", resp.Get("status").String())
	case "response.incomplete":
		assert.Equal(t, "incomplete", resp.Get("status").String())
	case "response.failed":
		require.Equal(t, "error", evs[len(evs)-2].Name, "an error event, then response.failed: %s", eventNames(evs))
		assert.Equal(t, "failed", resp.Get("status").String())
		out.streamErr = true
		// The error event has no type: the failed response's code names
		// the failure.
		out.errType, out.errMsg = resp.Get("error.code").String(), evs[len(evs)-2].Data.Get("message").String()
		assert.NotEmpty(t, out.errType, "a failed response has an error code")
	default:
		t.Fatalf("the stream ends with %q", last.Name)
	}
	middle := evs[2 : len(evs)-1]
	if out.streamErr {
		middle = evs[2 : len(evs)-2]
	}
	for _, e := range middle {
		switch e.Name {
		case "response.created", "response.in_progress", "response.completed", "response.incomplete", "response.failed", "error":
			t.Errorf("%s amid the output: %s", e.Name, eventNames(evs))
		}
	}
	// checkItems checked that every delta names the open item; its type is
	// checked here.
	open := ""
	inItem := func(typ string, d gjson.Result) {
		t.Helper()
		require.Equal(t, typ, open, "a delta of a %s item: %s", typ, d.Raw)
	}
	for _, e := range evs {
		d := e.Data
		switch e.Name {
		case "response.output_item.added":
			open = d.Get("item.type").String()
			if open == "function_call" {
				out.calls = append(out.calls, doorCall{name: d.Get("item.name").String()})
			}
		case "response.output_text.delta":
			inItem("message", d)
			out.text += d.Get("delta").String()
		case "response.reasoning_summary_text.delta":
			inItem("reasoning", d)
			out.reasoning += d.Get("delta").String()
		case "response.function_call_arguments.delta":
			inItem("function_call", d)
			out.calls[len(out.calls)-1].args += d.Get("delta").String()
		}
	}
	return resp
}

// forEachDoor runs fn on every door, streamed and not.
func forEachDoor(t *testing.T, fn func(t *testing.T, door agentDoor, stream bool)) {
	for _, door := range agentDoors {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", door.name, stream), func(t *testing.T) { fn(t, door, stream) })
		}
	}
}

func TestAgentBackend(t *testing.T) {
	bin := agentclitest.Build(t) // once for every subtest

	t.Run("text", func(t *testing.T) {
		// EXPOSE_THINKING shows the reasoning on every door.
		s := newAgentStack(t, bin, map[string]string{"EXPOSE_THINKING": "true"}, nil)
		forEachDoor(t, func(t *testing.T, door agentDoor, stream bool) {
			for _, tc := range []struct{ model, scenario, text, reasoning string }{
				{"sonnet-4.5", "hello", "Hello, world!", ""},
				{"auto", "repeat", "haha!", ""},
				{"gpt-5", "segments", "One. Two. Three.", ""},
				{"sonnet-4.5-thinking", "thinking", "Forty-two.", "Let me think."},
			} {
				a := door.ask(t, s.stack, tc.model, "Answer SCENARIO:"+tc.scenario, stream, false)
				require.Equal(t, http.StatusOK, a.status, a.errMsg)
				assert.Equal(t, tc.text, a.text, tc.scenario)
				assert.Equal(t, tc.reasoning, a.reasoning, tc.scenario)
				assert.Equal(t, door.stop, a.finish, tc.scenario)
				assert.Empty(t, a.calls, "the CLI's own tool call never reaches the client")
			}
			a := door.ask(t, s.stack, "sonnet-4.5", "SCENARIO:hello", stream, false)
			assert.EqualValues(t, 120, a.usageIn, "the usage the CLI reported")
			assert.EqualValues(t, 7, a.usageOut)
		})
		assert.Contains(t, s.logs.String(), "called one of its own tools", "the CLI's tool call is logged")

		// What the CLI got: the model id, the prompt on stdin, its key and
		// the basics of the environment, and nothing else of the gateway's.
		calls := s.home.Calls(t)
		require.NotEmpty(t, calls)
		var sawThinkingModel bool
		for _, c := range calls {
			assert.ElementsMatch(t, []string{"HOME=" + string(s.home), "PATH=/usr/bin:/bin", "CURSOR_API_KEY=key-agent-test"}, withoutPWD(c.Env))
			assert.True(t, strings.HasPrefix(c.Prompt, "<system>\n"), "the turns rendered as one prompt: %q", c.Prompt)
			assert.Contains(t, c.Prompt, "Be brief.\n</system>\n\n<user>\n")
			assert.Contains(t, c.Args, "--model")
			sawThinkingModel = sawThinkingModel || argAfter(c.Args, "--model") == "sonnet-4.5-thinking"
		}
		assert.True(t, sawThinkingModel, "a -thinking model the CLI offers runs as itself")
	})

	t.Run("reasoning only when shown", func(t *testing.T) {
		s := newAgentStack(t, bin, nil, nil)
		forEachDoor(t, func(t *testing.T, door agentDoor, stream bool) {
			a := door.ask(t, s.stack, "sonnet-4.5-thinking", "SCENARIO:thinking", stream, false)
			require.Equal(t, http.StatusOK, a.status, a.errMsg)
			assert.Equal(t, "Forty-two.", a.text)
			if door.asksReasoning {
				assert.Equal(t, "Let me think.", a.reasoning, "the request asked for it")
			} else {
				assert.Empty(t, a.reasoning, "neither the request nor EXPOSE_THINKING asked for it")
			}
		})
	})

	t.Run("tool calls", func(t *testing.T) {
		s := newAgentStack(t, bin, nil, nil)
		forEachDoor(t, func(t *testing.T, door agentDoor, stream bool) {
			// The fake writes the call, then more, then hangs: the answer
			// ends at the completed call and the process is killed (the
			// stack's cleanup checks it is gone).
			a := door.ask(t, s.stack, "auto", "Weather in Paris? SCENARIO:tool", stream, true)
			require.Equal(t, http.StatusOK, a.status, a.errMsg)
			require.Len(t, a.calls, 1)
			assert.Equal(t, "get_weather", a.calls[0].name)
			assert.JSONEq(t, `{"city":"Paris"}`, a.calls[0].args)
			assert.Equal(t, door.toolStop, a.finish)
			assert.Equal(t, "Checking.", strings.TrimSpace(a.text))
			assert.NotContains(t, a.text, "nobody reads")
		})
		for _, c := range s.home.Calls(t) {
			assert.Regexp(t, `<<CALL_[A-Za-z0-9]{8}>>`, c.Prompt, "the tool protocol is in the prompt")
			assert.Contains(t, c.Prompt, "get_weather")
		}
	})

	t.Run("errors", func(t *testing.T) {
		s := newAgentStack(t, bin, nil, func(h agentclitest.Home) {
			h.SetModels(t, "auto - Auto\nmissing-model - Withdrawn\n")
		})
		forEachDoor(t, func(t *testing.T, door agentDoor, stream bool) {
			for _, tc := range []struct {
				model, scenario string
				status          int
				errType, hint   string
			}{
				{"auto", "auth", http.StatusUnauthorized, "authentication_error", "CURSOR_API_KEY"},
				{"auto", "ratelimit", http.StatusTooManyRequests, "rate_limit_error", "usage limit"},
				{"missing-model", "hello", http.StatusBadRequest, "invalid_request_error", "`agent models` lists: auto, missing-model"},
				{"auto", "crash", http.StatusBadGateway, "api_error", "something broke"},
				{"auto", "leaky", http.StatusBadGateway, "api_error", "request failed for key [CURSOR_API_KEY]"},
			} {
				a := door.ask(t, s.stack, tc.model, "SCENARIO:"+tc.scenario, stream, false)
				require.Equal(t, tc.status, a.status, "%s: %s", tc.scenario, a.errMsg)
				assert.Equal(t, tc.errType, a.errType, tc.scenario)
				assert.Contains(t, a.errMsg, tc.hint, tc.scenario)
				if tc.status == http.StatusTooManyRequests {
					assert.Equal(t, "60", a.header.Get("Retry-After"))
				}
			}
			a := door.ask(t, s.stack, "auto", "SCENARIO:crash-midway", stream, false)
			if stream {
				require.Equal(t, http.StatusOK, a.status, "the stream had started")
				assert.Equal(t, "partial answer", a.text)
				assert.True(t, a.streamErr, "the failure ends the stream as an error event")
				assert.Contains(t, a.errMsg, "connection reset")
			} else {
				assert.Equal(t, http.StatusBadGateway, a.status)
				assert.Contains(t, a.errMsg, "connection reset")
			}
		})
		s.logs.Await(t, "connection reset") // stderr is in the log line
		assert.NotContains(t, s.logs.String(), "key-agent-test", "the API key is never logged")
	})

	t.Run("no output within TIMEOUT", func(t *testing.T) {
		s := newAgentStack(t, bin, map[string]string{"TIMEOUT": "1"}, nil)
		forEachDoor(t, func(t *testing.T, door agentDoor, stream bool) {
			a := door.ask(t, s.stack, "auto", "SCENARIO:silent", stream, false)
			assert.Equal(t, http.StatusGatewayTimeout, a.status, "nothing was written, so the status says it")
			assert.Contains(t, a.errMsg, "TIMEOUT")
		})
	})

	t.Run("models", func(t *testing.T) {
		s := newAgentStack(t, bin, nil, nil)
		r := s.do(t, http.MethodGet, "/v1/models", "")
		require.Equal(t, http.StatusOK, r.status)
		var ids []string
		for _, m := range gjson.Get(r.body, "data").Array() {
			ids = append(ids, m.Get("id").String())
		}
		assert.Equal(t, []string{"auto", "auto-thinking", "sonnet-4.5", "sonnet-4.5-thinking", "gpt-5", "gpt-5-thinking"}, ids, "what `agent models` lists")

		for _, door := range agentDoors {
			// (claude-* and gpt-* names reach the CLI's first model
			// through the default MODEL_ALIASES.)
			a := door.ask(t, s.stack, "llama-4", "hi", false, false)
			assert.Equal(t, http.StatusNotFound, a.status, "%s: a model the CLI does not list", door.name)
			assert.Contains(t, a.errMsg, "auto, auto-thinking, sonnet-4.5", door.name)
		}

		restricted := newAgentStack(t, bin, map[string]string{"MODELS": "gpt-5"}, nil)
		r = restricted.do(t, http.MethodGet, "/v1/models", "")
		assert.Equal(t, []any{"gpt-5", "gpt-5-thinking"}, gjson.Get(r.body, "data.#.id").Value(), "MODELS restricts the list")
	})

	t.Run("ready", func(t *testing.T) {
		s := newAgentStack(t, bin, nil, nil)
		r := s.do(t, http.MethodGet, "/ready", "")
		assert.Equal(t, http.StatusOK, r.status, r.body)
		assert.True(t, gjson.Get(r.body, "ready").Bool(), r.body)
		assert.True(t, gjson.Get(r.body, "backend.ready").Bool(), "the CLI's own check ran: %s", r.body)

		out := newAgentStack(t, bin, nil, func(h agentclitest.Home) { h.SetLoggedOut(t) })
		r = out.do(t, http.MethodGet, "/ready", "")
		assert.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
		assert.Contains(t, gjson.Get(r.body, "backend.error").String(), "CURSOR_API_KEY")
		assert.Contains(t, gjson.Get(r.body, "reasons.0").String(), "CURSOR_API_KEY", "the reason says what to fix")
		r = out.do(t, http.MethodGet, "/v1/models", "")
		assert.Equal(t, []any{"auto", "auto-thinking"}, gjson.Get(r.body, "data.#.id").Value(), "the fallback list when the CLI cannot list models")
		for _, door := range agentDoors {
			a := door.ask(t, out.stack, "auto", "SCENARIO:hello", false, false)
			assert.Equal(t, http.StatusUnauthorized, a.status, door.name)
			assert.Contains(t, a.errMsg, "CURSOR_API_KEY", door.name)
		}

		missing := newAgentStack(t, "/nonexistent/agent", nil, nil)
		r = missing.do(t, http.MethodGet, "/ready", "")
		assert.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
		assert.Contains(t, gjson.Get(r.body, "backend.error").String(), "AGENT_BIN")
		for _, door := range agentDoors {
			a := door.ask(t, missing.stack, "auto", "hi", false, false)
			assert.Equal(t, http.StatusBadGateway, a.status, door.name)
			assert.Contains(t, a.errMsg, "install it", door.name)
		}
	})

	t.Run("client disconnect kills the CLI", func(t *testing.T) {
		for _, door := range agentDoors {
			t.Run(door.name, func(t *testing.T) {
				s := newAgentStack(t, bin, nil, nil)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				resp := door.request("auto", "SCENARIO:hang", true, false).send(t, ctx, s.stack)
				defer resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode)
				rd := bufio.NewReader(resp.Body)
				for {
					line, err := rd.ReadString('\n')
					require.NoError(t, err, "the stream ended before the first content")
					if strings.Contains(line, "Thinking about it") {
						break
					}
				}
				pids, children := s.home.PIDs()
				require.Len(t, pids, 1)
				require.Len(t, children, 1, "the CLI's own child, in its process group")
				cancel() // the client leaves
				s.home.WaitGone(t, 30*time.Second)
			})
		}
	})

	t.Run("queue is bounded", func(t *testing.T) {
		s := newAgentStack(t, bin, map[string]string{"AGENT_MAX_PROCS": "1", "AGENT_QUEUE_TIMEOUT": "1"}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp := openAIRequest("auto", "SCENARIO:hang", true, false).send(t, ctx, s.stack)
		defer resp.Body.Close()
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadString('\n')
			require.NoError(t, err)
			if strings.Contains(line, "Thinking about it") {
				break
			}
		}
		r := s.chat(t, `{"model":"auto","messages":[{"role":"user","content":"SCENARIO:hello"}]}`)
		assertAPIError(t, r, http.StatusTooManyRequests, "rate_limit_error", "", "agent_busy", "AGENT_MAX_PROCS")
		assert.Equal(t, "1", r.header.Get("Retry-After"))
		forEachDoor(t, func(t *testing.T, door agentDoor, stream bool) {
			a := door.ask(t, s.stack, "auto", "SCENARIO:hello", stream, false)
			require.Equal(t, http.StatusTooManyRequests, a.status, a.errMsg)
			assert.Equal(t, "rate_limit_error", a.errType)
			assert.Contains(t, a.errMsg, "AGENT_MAX_PROCS")
			assert.Equal(t, "1", a.header.Get("Retry-After"))
		})
		cancel()
	})

	t.Run("50 concurrent requests, 4 processes", func(t *testing.T) {
		s := newAgentStack(t, bin, map[string]string{"AGENT_MAX_PROCS": "4", "AGENT_QUEUE_TIMEOUT": "300"}, nil)
		const n = 50
		var wg sync.WaitGroup
		answers := make([]doorAnswer, n)
		for i := range n {
			wg.Go(func() {
				// Every door, streamed and not (50 covers each pair 8 times).
				answers[i] = agentDoors[i%len(agentDoors)].ask(t, s.stack, "auto", "SCENARIO:slow", i%2 == 0, false)
			})
		}
		wg.Wait()
		for i, a := range answers {
			require.Equal(t, http.StatusOK, a.status, "request %d: %s", i, a.errMsg)
			assert.Equal(t, "slow", a.text, "request %d", i)
		}
		assert.Len(t, s.home.Calls(t), n, "one process per request")
		peak := s.home.Peak()
		assert.LessOrEqual(t, peak, 4, "never more than AGENT_MAX_PROCS processes at once")
		assert.Positive(t, peak)
		t.Logf("peak concurrency seen by the fake: %d", peak)
	})
}

// withoutPWD drops PWD, which os/exec adds for the working directory.
func withoutPWD(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "PWD=") {
			out = append(out, e)
		}
	}
	return out
}

// argAfter returns the argument that follows flag, or "".
func argAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
