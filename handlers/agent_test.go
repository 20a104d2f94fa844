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
	require.Nil(t, gw.Web, "no web back door on the agent backend")
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
		assert.Zero(t, gw.Agent.Running())
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
	// ask sends prompt as the one user message of a request for model,
	// with the get_weather tool when tools is set.
	ask func(t *testing.T, s *stack, model, prompt string, stream, tools bool) doorAnswer
	// toolStop and stop are the door's finish reasons.
	stop, toolStop string
}

var agentDoors = []agentDoor{
	{name: "openai", ask: askOpenAI, stop: "stop", toolStop: "tool_calls"},
}

const weatherTool = `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`

func askOpenAI(t *testing.T, s *stack, model, prompt string, stream, tools bool) doorAnswer {
	t.Helper()
	body := map[string]any{"model": model, "stream": stream,
		"messages": []map[string]any{{"role": "system", "content": "Be brief."}, {"role": "user", "content": prompt}}}
	if stream {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	if tools {
		body["tools"] = []json.RawMessage{json.RawMessage(weatherTool)}
	}
	b, err := json.Marshal(body)
	require.NoError(t, err)
	r := s.chat(t, string(b))
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
		assert.Contains(t, s.logs.String(), "connection reset", "stderr is in the log line")
		assert.NotContains(t, s.logs.String(), "key-agent-test", "the API key is never logged")
	})

	t.Run("no output within TIMEOUT", func(t *testing.T) {
		s := newAgentStack(t, bin, map[string]string{"TIMEOUT": "1"}, nil)
		a := agentDoors[0].ask(t, s.stack, "auto", "SCENARIO:silent", false, false)
		assert.Equal(t, http.StatusGatewayTimeout, a.status)
		assert.Contains(t, a.errMsg, "TIMEOUT")
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

		a := agentDoors[0].ask(t, s.stack, "claude-sonnet-4.6", "hi", false, false)
		assert.Equal(t, http.StatusNotFound, a.status, "a model the CLI does not list")
		assert.Contains(t, a.errMsg, "auto, auto-thinking, sonnet-4.5")

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
		a := agentDoors[0].ask(t, out.stack, "auto", "SCENARIO:hello", false, false)
		assert.Equal(t, http.StatusUnauthorized, a.status)
		assert.Contains(t, a.errMsg, "CURSOR_API_KEY")

		missing := newAgentStack(t, "/nonexistent/agent", nil, nil)
		r = missing.do(t, http.MethodGet, "/ready", "")
		assert.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
		assert.Contains(t, gjson.Get(r.body, "backend.error").String(), "AGENT_BIN")
		a = agentDoors[0].ask(t, missing.stack, "auto", "hi", false, false)
		assert.Equal(t, http.StatusBadGateway, a.status)
		assert.Contains(t, a.errMsg, "install it")
	})

	t.Run("client disconnect kills the CLI", func(t *testing.T) {
		s := newAgentStack(t, bin, nil, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"auto","stream":true,"messages":[{"role":"user","content":"SCENARIO:hang"}]}`))
		require.NoError(t, err)
		resp, err := s.Client().Do(req)
		require.NoError(t, err)
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

	t.Run("queue is bounded", func(t *testing.T) {
		s := newAgentStack(t, bin, map[string]string{"AGENT_MAX_PROCS": "1", "AGENT_QUEUE_TIMEOUT": "1"}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"auto","stream":true,"messages":[{"role":"user","content":"SCENARIO:hang"}]}`))
		require.NoError(t, err)
		resp, err := s.Client().Do(req)
		require.NoError(t, err)
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
		cancel()
	})

	t.Run("50 concurrent requests, 4 processes", func(t *testing.T) {
		s := newAgentStack(t, bin, map[string]string{"AGENT_MAX_PROCS": "4", "AGENT_QUEUE_TIMEOUT": "300"}, nil)
		const n = 50
		var wg sync.WaitGroup
		answers := make([]doorAnswer, n)
		for i := range n {
			wg.Go(func() {
				answers[i] = agentDoors[0].ask(t, s.stack, "auto", "SCENARIO:slow", i%2 == 0, false)
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
