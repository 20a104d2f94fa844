package native

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"cursor2api/models"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/aiserverv1"
	"cursor2api/services/native/keys"
	"cursor2api/services/native/nativetest"
	"cursor2api/services/upstream"
	"cursor2api/utils"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient is a Client on the fake, with short bounds, whose HTTP
// clients are closed when the test ends.
func newClient(t *testing.T, srv *nativetest.Server, transport string, tweak ...func(*Options)) *Client {
	t.Helper()
	h1 := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	h2 := HTTP2Client(nil)
	o := Options{
		APIKeys: []string{nativetest.DefaultAPIKey}, ConnectURL: srv.URL, RESTURL: srv.URL,
		Transport: transport, HTTP: h1, HTTP2: h2,
		IdleTimeout: 5 * time.Second, StallTimeout: 5 * time.Second, HeartbeatEvery: 50 * time.Millisecond,
		CallSettle: 100 * time.Millisecond, ParkMax: 8, ParkTTL: time.Minute,
	}
	for _, f := range tweak {
		f(&o)
	}
	c := New(o)
	t.Cleanup(func() {
		c.Close()
		h1.CloseIdleConnections()
		h2.CloseIdleConnections()
	})
	return c
}

// collect streams one request and gathers its deltas.
type collected struct {
	text, reasoning string
	calls           []models.ToolCall
}

func stream(t *testing.T, ctx context.Context, c *Client, req upstream.Request) (collected, *models.Usage, error) {
	t.Helper()
	var got collected
	usage, err := c.Stream(ctx, req, func(d upstream.Delta) error {
		switch d.Kind {
		case upstream.DeltaText:
			got.text += d.Text
		case upstream.DeltaReasoning:
			got.reasoning += d.Text
		case upstream.DeltaToolCall:
			got.calls = append(got.calls, d.Call)
		}
		return nil
	})
	return got, usage, err
}

func user(text string) models.Message {
	return models.Message{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockText, Text: text}}}
}

var weather = models.Tool{Name: "get_weather", Description: "Weather of a city",
	Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
var clock = models.Tool{Name: "get_time", Description: "Time in a city", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)}

var transports = []string{TransportHTTP2, TransportSSE}

func TestTextThinkingUsage(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
				return nativetest.Script{
					Steps: []nativetest.Step{nativetest.Thinking("let me ", "think"), nativetest.Text("Hello", ", world")},
					Usage: nativetest.Usage{Input: 100, Output: 20, CacheRead: 60, CacheWrite: 5, Reasoning: 7},
				}
			}})
			c := newClient(t, srv, tr)
			got, usage, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{
				{Role: models.RoleSystem, Blocks: []models.Block{{Kind: models.BlockText, Text: "You are terse."}}},
				user("hi"),
			}})
			require.NoError(t, err)
			assert.Equal(t, "Hello, world", got.text)
			assert.Equal(t, "let me think", got.reasoning)
			require.NotNil(t, usage)
			assert.Equal(t, models.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120, CacheReadTokens: 60, CacheWriteTokens: 5, ReasoningTokens: 7}, *usage)

			runs := srv.Runs()
			require.Len(t, runs, 1)
			r := runs[0]
			assert.Equal(t, map[string]nativetest.Transport{TransportHTTP2: nativetest.Bidi, TransportSSE: nativetest.SSE}[tr], r.Transport)
			assert.Equal(t, "hi", r.UserText())
			assert.Equal(t, "composer-2", r.Model())
			assert.NotNil(t, r.Request.GetConversationState(), "conversation_state is always present")
			assert.Equal(t, "You are terse.", r.Request.GetCustomSystemPrompt())
			assert.Nil(t, r.Request.GetAction().GetUserMessageAction().GetConversationHistory(), "a first turn has no history")
			assert.Equal(t, "sdk-1.0.32", r.Header.Get("x-cursor-client-version"))
			assert.Equal(t, "mcp_tool_call", r.Header.Get(allowedToolsHeader), "built-in tools are taken away")
			rc := r.Request.GetAction().GetUserMessageAction().GetRequestContext()
			assert.False(t, rc.GetWebSearchEnabled() || rc.GetWebFetchEnabled(), "and the server's web tools")
			require.NotNil(t, rc.WebSearchEnabled, "said explicitly")
			require.NotEmpty(t, r.Execs)
			assert.Equal(t, "request_context_result.success", r.Execs[0].Outcome)
			assert.True(t, r.Execs[0].Closed, "every exec answer is followed by stream_close")
			assert.Zero(t, c.Parked())
		})
	}
}

func TestToolCallParkedThenResumed(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
				return nativetest.Script{Steps: []nativetest.Step{
					nativetest.Text("Checking. "),
					nativetest.ToolCalls(nativetest.Call{Tool: "get_weather", Args: map[string]any{"city": "Paris"}, ID: "toolu_upstream1"}),
					nativetest.TextFunc(func(rs []nativetest.ExecResult) string { return "It is " + rs[len(rs)-1].Text + "." }),
				}, Usage: nativetest.Usage{Input: 10, Output: 3}}
			}})
			c := newClient(t, srv, tr)
			conv := []models.Message{user("weather in Paris?")}
			got, usage, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv, Tools: []models.Tool{weather}})
			require.NoError(t, err)
			assert.Nil(t, usage, "a parked turn has not ended")
			assert.Equal(t, "Checking. ", got.text)
			require.Len(t, got.calls, 1)
			call := got.calls[0]
			assert.Equal(t, "get_weather", call.Name)
			assert.JSONEq(t, `{"city":"Paris"}`, call.Arguments)
			assert.Regexp(t, `^call_[A-Za-z0-9]{24}$`, call.ID)
			assert.Equal(t, 1, c.Parked())

			// The Anthropic door re-prefixes the id: call_X comes back as toolu_X.
			back := "toolu_" + strings.TrimPrefix(call.ID, "call_")
			conv = append(conv,
				models.Message{Role: models.RoleAssistant, Blocks: []models.Block{{Kind: models.BlockText, Text: "Checking. "},
					{Kind: models.BlockToolCall, ID: back, Name: "get_weather", Arguments: call.Arguments}}},
				models.Message{Role: models.RoleTool, ToolCallID: back, Blocks: []models.Block{{Kind: models.BlockText, Text: "sunny"}}})
			got, usage, err = stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv, Tools: []models.Tool{weather}})
			require.NoError(t, err)
			assert.Equal(t, "It is sunny.", got.text)
			require.NotNil(t, usage)
			assert.Equal(t, 10, usage.InputTokens)
			assert.Zero(t, c.Parked())

			runs := srv.Runs()
			require.Len(t, runs, 1, "the same run went on: no replay")
			var mcp *nativetest.ExecResult
			for i := range runs[0].Execs {
				if runs[0].Execs[i].Kind == "mcp_args" {
					mcp = &runs[0].Execs[i]
				}
			}
			require.NotNil(t, mcp)
			assert.Equal(t, "mcp_result.success", mcp.Outcome)
			assert.Equal(t, "sunny", mcp.Text)
			assert.True(t, mcp.Closed)
			defs := runs[0].Request.GetMcpTools().GetMcpTools()
			require.Len(t, defs, 1)
			assert.Equal(t, toolProvider, defs[0].GetProviderIdentifier())
			assert.Equal(t, "get_weather", defs[0].GetToolName())
			assert.Equal(t, "object", defs[0].GetInputSchema().GetStructValue().GetFields()["type"].GetStringValue())
		})
	}
}

func TestParallelCallsReachTheCallerTogether(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.ToolCalls(
				nativetest.Call{Tool: "get_weather", Args: map[string]any{"city": "Oslo"}},
				nativetest.Call{Tool: "get_time", Args: map[string]any{"city": "Oslo"}}),
			nativetest.TextFunc(func(rs []nativetest.ExecResult) string {
				var parts []string
				for _, r := range rs {
					if r.Kind == "mcp_args" {
						parts = append(parts, r.Text)
					}
				}
				return strings.Join(parts, " and ")
			}),
		}}
	}})
	c := newClient(t, srv, TransportHTTP2)
	tools := []models.Tool{weather, clock}
	conv := []models.Message{user("Oslo?")}
	got, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv, Tools: tools})
	require.NoError(t, err)
	require.Len(t, got.calls, 2, "both calls in one answer")
	assert.Equal(t, "get_weather", got.calls[0].Name)
	assert.Equal(t, "get_time", got.calls[1].Name)

	assistant := models.Message{Role: models.RoleAssistant}
	for _, call := range got.calls {
		assistant.Blocks = append(assistant.Blocks, models.Block{Kind: models.BlockToolCall, ID: call.ID, Name: call.Name, Arguments: call.Arguments})
	}
	conv = append(conv, assistant,
		models.Message{Role: models.RoleTool, ToolCallID: got.calls[0].ID, Blocks: []models.Block{{Kind: models.BlockText, Text: "cold"}}},
		models.Message{Role: models.RoleTool, ToolCallID: got.calls[1].ID, IsError: true, Blocks: []models.Block{{Kind: models.BlockText, Text: "no clock"}}})
	got, usage, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv, Tools: tools})
	require.NoError(t, err)
	require.NotNil(t, usage)
	assert.Equal(t, "cold and no clock", got.text)
	runs := srv.Runs()
	require.Len(t, runs, 1)
	var errs []bool
	for _, e := range runs[0].Execs {
		if e.Kind == "mcp_args" {
			errs = append(errs, e.IsError)
		}
	}
	assert.Equal(t, []bool{false, true}, errs, "is_error follows the client's result")
}

func TestBuiltInExecsRefused(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.Exec(nativetest.ShellExec("rm -rf /")),
			nativetest.Exec(nativetest.ReadExec("/etc/passwd")),
			nativetest.Exec(nativetest.WriteExec("/tmp/x", "y")),
			nativetest.Exec(nativetest.DeleteExec("/tmp/x")),
			nativetest.Exec(nativetest.LsExec("/")),
			nativetest.Exec(nativetest.GrepExec("secret")),
			nativetest.Text("done"),
		}}
	}})
	c := newClient(t, srv, TransportSSE)
	got, usage, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("go")}})
	require.NoError(t, err)
	require.NotNil(t, usage)
	assert.Equal(t, "done", got.text, "the turn goes on after the refusals")
	outcomes := map[string]string{}
	for _, e := range srv.Runs()[0].Execs[1:] {
		outcomes[e.Kind] = e.Outcome
		assert.True(t, e.Closed, "%s answered with stream_close", e.Kind)
	}
	assert.Equal(t, map[string]string{
		"shell_args": "shell_result.rejected", "read_args": "read_result.rejected", "write_args": "write_result.rejected",
		"delete_args": "delete_result.rejected", "ls_args": "ls_result.rejected", "grep_args": "grep_result.error",
	}, outcomes)
}

func TestKVBlobs(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.SetBlob([]byte("b1"), []byte("first blob")),
			nativetest.SetBlob([]byte("b2"), []byte("second")),
			nativetest.GetBlob([]byte("b1")),
			nativetest.GetBlob([]byte("b2")),
			nativetest.Text("ok"),
		}}
	}})
	c := newClient(t, srv, TransportHTTP2)
	got, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("go")}})
	require.NoError(t, err, "every blob read back as it was set")
	assert.Equal(t, "ok", got.text)
}

func TestReplayWhenNoRunIsParked(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{})
	c := newClient(t, srv, TransportSSE)
	conv := []models.Message{
		{Role: models.RoleSystem, Blocks: []models.Block{{Kind: models.BlockText, Text: "sys"}}},
		user("weather?"),
		{Role: models.RoleAssistant, Blocks: []models.Block{{Kind: models.BlockText, Text: "Let me look."},
			{Kind: models.BlockToolCall, ID: "toolu_abc", Name: "get_weather", Arguments: `{"city":"Rome"}`}}},
		{Role: models.RoleTool, ToolCallID: "toolu_abc", IsError: true, Blocks: []models.Block{{Kind: models.BlockText, Text: "timeout"}}},
	}
	got, usage, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv, Tools: []models.Tool{weather}})
	require.NoError(t, err)
	require.NotNil(t, usage)
	assert.Equal(t, "ok", got.text)
	runs := srv.Runs()
	require.Len(t, runs, 1)
	act := runs[0].Request.GetAction().GetUserMessageAction()
	assert.Equal(t, continueText, act.GetUserMessage().GetText())
	h := act.GetConversationHistory().GetMessages()
	require.Len(t, h, 3)
	assert.Equal(t, "weather?", h[0].GetUser().GetContent()[0].GetText().GetText())
	a := h[1].GetAssistant().GetContent()
	require.Len(t, a, 2)
	assert.Equal(t, "Let me look.", a[0].GetText().GetText())
	assert.Equal(t, "toolu_abc", a[1].GetToolCall().GetToolCallId())
	assert.Equal(t, mcpName("get_weather"), a[1].GetToolCall().GetToolName())
	assert.JSONEq(t, `{"city":"Rome"}`, a[1].GetToolCall().GetArgsJson())
	tm := h[2].GetTool()
	assert.Equal(t, "toolu_abc", tm.GetToolCallId())
	assert.Equal(t, "timeout", tm.GetContent()[0].GetText().GetText())
	assert.True(t, tm.GetIsError())
	assert.Equal(t, "sys", runs[0].Request.GetCustomSystemPrompt())
}

func TestParkingBounds(t *testing.T) {
	script := func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.ToolCalls(nativetest.Call{Tool: "get_weather", Args: map[string]any{"city": "X"}}),
			nativetest.Text("after"),
		}}
	}
	t.Run("count", func(t *testing.T) {
		srv := nativetest.NewServer(t, nativetest.Options{Script: script})
		c := newClient(t, srv, TransportHTTP2, func(o *Options) { o.ParkMax = 1 })
		req := upstream.Request{Model: "composer-2", Conversation: []models.Message{user("a")}, Tools: []models.Tool{weather}}
		first, _, err := stream(t, t.Context(), c, req)
		require.NoError(t, err)
		_, _, err = stream(t, t.Context(), c, req)
		require.NoError(t, err)
		assert.Equal(t, 1, c.Parked(), "the older run was evicted")
		assert.Eventually(t, func() bool { r := srv.Runs(); return len(r) == 2 && r[0].Ended && r[0].Err != nil },
			5*time.Second, 10*time.Millisecond, "the evicted run was cancelled upstream")

		// Its result finds no parked run: replayed in a fresh one.
		conv := append(req.Conversation,
			models.Message{Role: models.RoleAssistant, Blocks: []models.Block{{Kind: models.BlockToolCall, ID: first.calls[0].ID, Name: "get_weather", Arguments: "{}"}}},
			models.Message{Role: models.RoleTool, ToolCallID: first.calls[0].ID, Blocks: []models.Block{{Kind: models.BlockText, Text: "r"}}})
		got, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv, Tools: []models.Tool{weather}})
		require.NoError(t, err)
		require.Len(t, got.calls, 1, "the fresh run plays the script again")
		assert.Len(t, srv.Runs(), 3)
		assert.Len(t, srv.Runs()[2].Request.GetAction().GetUserMessageAction().GetConversationHistory().GetMessages(), 3)
	})
	t.Run("memory", func(t *testing.T) {
		blob := make([]byte, 600<<10)
		srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
			return nativetest.Script{Steps: []nativetest.Step{
				nativetest.SetBlob([]byte(utils.NewCallID()), blob),
				nativetest.ToolCalls(nativetest.Call{Tool: "get_weather", Args: map[string]any{"city": "X"}}),
			}}
		}})
		c := newClient(t, srv, TransportHTTP2, func(o *Options) { o.ParkBytes = 1 << 20 })
		req := upstream.Request{Model: "composer-2", Conversation: []models.Message{user("a")}, Tools: []models.Tool{weather}}
		for range 2 {
			_, _, err := stream(t, t.Context(), c, req)
			require.NoError(t, err)
		}
		assert.Equal(t, 1, c.Parked(), "two runs of 600 KiB of blobs do not fit in 1 MiB: the older went")
		assert.Eventually(t, func() bool { r := srv.Runs(); return len(r) == 2 && r[0].Ended }, 5*time.Second, 10*time.Millisecond)
	})
	t.Run("ttl", func(t *testing.T) {
		srv := nativetest.NewServer(t, nativetest.Options{Script: script})
		c := newClient(t, srv, TransportSSE, func(o *Options) { o.ParkTTL = 200 * time.Millisecond })
		_, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("a")}, Tools: []models.Tool{weather}})
		require.NoError(t, err)
		assert.Equal(t, 1, c.Parked())
		assert.Eventually(t, func() bool { return c.Parked() == 0 }, 5*time.Second, 10*time.Millisecond)
		assert.Eventually(t, func() bool { r := srv.Runs(); return len(r) == 1 && r[0].Ended && r[0].Err != nil },
			5*time.Second, 10*time.Millisecond, "the expired run was cancelled upstream")
	})
}

func TestDisconnectCancelsTheRun(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
				return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("partial"), nativetest.Hang(20 * time.Millisecond)}}
			}})
			c := newClient(t, srv, tr)
			ctx, cancel := context.WithCancel(t.Context())
			var once sync.Once
			_, err := c.Stream(ctx, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("go")}}, func(d upstream.Delta) error {
				once.Do(cancel)
				return nil
			})
			require.ErrorIs(t, err, context.Canceled)
			assert.Eventually(t, func() bool { r := srv.Runs(); return len(r) == 1 && r[0].Ended }, 5*time.Second, 10*time.Millisecond)
			assert.Eventually(t, func() bool { return srv.InFlight() == 0 }, 5*time.Second, 10*time.Millisecond)
		})
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name    string
		opts    nativetest.Options
		model   string
		status  int
		code    string
		says    string
		retried int    // runs the fake saw
		key     string // the key's state afterwards
	}{
		{name: "version gate", opts: nativetest.Options{MinClientVersion: "sdk-9.0.0"}, status: 502, code: "cursor_version_gate", says: "CURSOR_CLIENT_VERSION", key: "ok"},
		{name: "quota", opts: nativetest.Options{Script: fail(nativetest.ErrQuota())}, status: 429, code: "cursor_quota", says: "usage limit", retried: 1, key: "cooling"},
		{name: "unauthenticated", opts: nativetest.Options{Script: fail(nativetest.ErrUnauthenticated())}, status: 401, code: "cursor_unauthenticated", says: "CURSOR_API_KEY", retried: 2},
		{name: "bad model", model: "gpt-nonexistent", status: 400, code: "model_not_found", says: "gpt-nonexistent", retried: 1},
		{name: "permission denied", opts: nativetest.Options{Script: fail(connect.NewError(connect.CodePermissionDenied, errors.New("team admin blocks this client")))},
			status: 502, code: "cursor_permission_denied", says: "CURSOR_CLIENT_VERSION", retried: 1},
		{name: "cut twice", opts: nativetest.Options{Script: fail(nil)}, status: 502, code: "upstream_incomplete", says: "twice", retried: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := nativetest.NewServer(t, tc.opts)
			c := newClient(t, srv, TransportSSE)
			model := tc.model
			if model == "" {
				model = "composer-2"
			}
			_, _, err := stream(t, t.Context(), c, upstream.Request{Model: model, Conversation: []models.Message{user("hi")}})
			var me *models.Error
			require.True(t, errors.As(err, &me), "got %v", err)
			assert.Equal(t, tc.status, me.Status, me.Message)
			assert.Equal(t, tc.code, me.Code)
			assert.Contains(t, me.Message, tc.says)
			if tc.retried > 0 {
				assert.Len(t, srv.Runs(), tc.retried)
			}
			if tc.key != "" {
				assert.Equal(t, tc.key, string(c.keys.Snapshot()[0].State), "a version gate is not the key's fault; a quota rests it")
			}
			if tc.code == "cursor_unauthenticated" {
				assert.Len(t, srv.CallsTo("/auth/exchange_user_api_key"), 2, "the token was exchanged again before the retry")
			}
		})
	}
}

// fail is a script that fails the run at once (nil: cuts the stream).
func fail(err interface{ Error() string }) func(*agentv1.AgentRunRequest) nativetest.Script {
	return func(*agentv1.AgentRunRequest) nativetest.Script {
		if err == nil {
			return nativetest.Script{Steps: []nativetest.Step{nativetest.Cut()}}
		}
		return nativetest.Script{Steps: []nativetest.Step{func(context.Context, *nativetest.Turn) error { return err.(error) }}}
	}
}

func TestCatalogAndTransportAuto(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{HTTP2: aiserverv1.Http2Config_HTTP2_CONFIG_FORCE_ALL_ENABLED})
	c := newClient(t, srv, TransportAuto)
	cat, err := c.Catalog(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"composer-2", "claude-4.5-sonnet"}, cat.Names())
	assert.Equal(t, "Sonnet 4.5", cat.DisplayName("claude-4.5-sonnet"))
	require.NoError(t, c.Ready(t.Context()))
	_, _, err = stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("hi")}})
	require.NoError(t, err)
	assert.Equal(t, nativetest.Bidi, srv.Runs()[0].Transport, "http2_config FORCE_ALL_ENABLED: the bidi Run")

	_, err = c.Catalog(t.Context(), []string{"nope"})
	assert.ErrorContains(t, err, "composer-2")

	bad := newClient(t, srv, TransportSSE, func(o *Options) { o.APIKeys = []string{"wrong"} })
	_, err = bad.Catalog(t.Context(), nil)
	require.Error(t, err)
	assert.ErrorContains(t, bad.Ready(t.Context()), "CURSOR_API_KEY")
	none := newClient(t, srv, TransportSSE, func(o *Options) { o.APIKeys = nil })
	assert.ErrorContains(t, none.Ready(t.Context()), "CURSOR_API_KEY")
}

func TestCutStream(t *testing.T) {
	t.Run("before any output: tried once more", func(t *testing.T) {
		var mu sync.Mutex
		n := 0
		srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
			mu.Lock()
			defer mu.Unlock()
			n++
			if n == 1 {
				return nativetest.Script{Steps: []nativetest.Step{nativetest.Cut()}}
			}
			return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("second time")}}
		}})
		c := newClient(t, srv, TransportHTTP2)
		got, usage, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("hi")}})
		require.NoError(t, err)
		require.NotNil(t, usage)
		assert.Equal(t, "second time", got.text)
		assert.Len(t, srv.Runs(), 2)
	})
	t.Run("after output: an error, never the text twice", func(t *testing.T) {
		srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
			return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("half"), nativetest.Cut()}}
		}})
		c := newClient(t, srv, TransportSSE)
		got, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("hi")}})
		var me *models.Error
		require.True(t, errors.As(err, &me), "got %v", err)
		assert.Equal(t, "upstream_incomplete", me.Code)
		assert.Equal(t, "half", got.text)
		assert.Len(t, srv.Runs(), 1)
	})
}

func TestHeartbeatsAloneAreBounded(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Hang(20 * time.Millisecond)}}
	}})
	c := newClient(t, srv, TransportHTTP2, func(o *Options) { o.StallTimeout = 300 * time.Millisecond })
	start := time.Now()
	_, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("hi")}})
	var me *models.Error
	require.True(t, errors.As(err, &me), "got %v", err)
	assert.Equal(t, "upstream_stalled", me.Code)
	assert.Less(t, time.Since(start), 4*time.Second)
	assert.Eventually(t, func() bool { return srv.InFlight() == 0 }, 5*time.Second, 10*time.Millisecond)
}

func TestParkedRunSendsHeartbeats(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{nativetest.ToolCalls(nativetest.Call{Tool: "get_weather", Args: map[string]any{"city": "X"}})}}
	}})
	c := newClient(t, srv, TransportSSE)
	_, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("a")}, Tools: []models.Tool{weather}})
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return srv.Runs()[0].Heartbeats >= 3 }, 5*time.Second, 10*time.Millisecond,
		"client_heartbeat keeps a parked run alive")
}

func TestSystemPromptRefusedGoesIntoHistory(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(req *agentv1.AgentRunRequest) nativetest.Script {
		if req.CustomSystemPrompt != nil {
			return nativetest.Script{Steps: []nativetest.Step{func(context.Context, *nativetest.Turn) error {
				return connect.NewError(connect.CodeInvalidArgument, errors.New("--system-prompt is not enabled for this account"))
			}}}
		}
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("fine")}}
	}})
	c := newClient(t, srv, TransportHTTP2)
	conv := []models.Message{{Role: models.RoleSystem, Blocks: []models.Block{{Kind: models.BlockText, Text: "Be brief."}}}, user("hi")}
	got, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv})
	require.NoError(t, err)
	assert.Equal(t, "fine", got.text)
	runs := srv.Runs()
	require.Len(t, runs, 2)
	h := runs[1].Request.GetAction().GetUserMessageAction().GetConversationHistory().GetMessages()
	require.Len(t, h, 1)
	assert.Contains(t, h[0].GetUser().GetContent()[0].GetText().GetText(), "Be brief.")

	_, _, err = stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv})
	require.NoError(t, err)
	assert.Len(t, srv.Runs(), 3, "remembered: no second refusal")
}

func TestQuotaMovesToTheNextKey(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := nativetest.NewServer(t, nativetest.Options{APIKeys: []string{"key_one", "key_two"}, Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n == 1 {
			return nativetest.Script{Steps: []nativetest.Step{nativetest.Fail(nativetest.ErrQuota())}}
		}
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("from the other key")}}
	}})
	c := newClient(t, srv, TransportSSE, func(o *Options) { o.APIKeys = []string{"key_one", "key_two"} })
	got, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Session: "s1", Conversation: []models.Message{user("hi")}})
	require.NoError(t, err)
	assert.Equal(t, "from the other key", got.text)
	runs := srv.Runs()
	require.Len(t, runs, 2)
	assert.NotEqual(t, runs[0].Header.Get("Authorization"), runs[1].Header.Get("Authorization"), "the retry used the other key")
	cooling := 0
	for _, k := range c.keys.Snapshot() {
		if k.State == "cooling" {
			cooling++
		}
	}
	assert.Equal(t, 1, cooling, "the key that hit its quota rests")
}

func TestTextTurnsStandInForTheConversation(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{})
	c := newClient(t, srv, TransportHTTP2)
	_, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Messages: []models.Turn{
		{Role: models.RoleSystem, Text: "sys"}, {Role: models.RoleUser, Text: "one"}, {Role: models.RoleAssistant, Text: "two"}, {Role: models.RoleUser, Text: "three"},
	}})
	require.NoError(t, err)
	r := srv.Runs()[0]
	assert.Equal(t, "three", r.UserText())
	assert.Equal(t, "sys", r.Request.GetCustomSystemPrompt())
	assert.Len(t, r.Request.GetAction().GetUserMessageAction().GetConversationHistory().GetMessages(), 2)
}

func TestWatchModels(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{})
	c := newClient(t, srv, TransportSSE)
	catalog, err := models.NewNamedCatalog([]models.NamedModel{{ID: "auto"}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.WatchModels(ctx, catalog, nil, 50*time.Millisecond)
	}()
	assert.Eventually(t, func() bool { return len(catalog.Names()) == 2 }, 5*time.Second, 10*time.Millisecond,
		"the fallback list gives way to the account's")
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WatchModels did not end with its context")
	}
}

// /ready names a version gate before any request meets it: the key
// exchange and the model list pass the gate, so Ready asks one call it
// guards.
func TestReadyNamesTheVersionGate(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{MinClientVersion: "sdk-9.0.0"})
	c := newClient(t, srv, TransportSSE)
	_, err := c.Catalog(t.Context(), nil)
	require.NoError(t, err, "REST calls pass the gate")
	err = c.Ready(t.Context())
	require.Error(t, err)
	assert.ErrorContains(t, err, "CURSOR_CLIENT_VERSION")
	calls := len(srv.CallsTo("/aiserver.v1.ServerConfigService/GetServerConfig"))
	require.Error(t, c.Ready(t.Context()))
	assert.Len(t, srv.CallsTo("/aiserver.v1.ServerConfigService/GetServerConfig"), calls, "the look is kept a while, not repeated per /ready")
	for _, k := range c.Keys() {
		assert.Equal(t, keys.State("ok"), k.State, "a version gate never rests a key")
	}

	ok := newClient(t, nativetest.NewServer(t, nativetest.Options{}), TransportSSE)
	_, err = ok.Catalog(t.Context(), nil)
	require.NoError(t, err)
	assert.NoError(t, ok.Ready(t.Context()))
}
