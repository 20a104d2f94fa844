package nativetest_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/aiserverv1"
	"cursor2api/services/native/nativetest"
)

// driverLine is one JSON line the driver printed.
type driverLine struct {
	Type    string          `json:"type"`
	Message json.RawMessage `json:"message"`
	Status  string          `json:"status"`
	Result  *string         `json:"result"`
	Error   json.RawMessage `json:"error"`
	Usage   json.RawMessage `json:"usage"`
	Args    json.RawMessage `json:"args"`
	Name    string          `json:"name"`
	// ErrorMessage is a driver_error's message.
	ErrorMessage string `json:"error_message"`
}

// runDriver runs testdata/sdkdriver.mjs against the fake. A prompt is a
// string or an SDKUserMessage ({text, images}).
func runDriver(t *testing.T, srv *nativetest.Server, model string, tool bool, prompts ...any) ([]driverLine, string) {
	t.Helper()
	ps, err := json.Marshal(prompts)
	require.NoError(t, err)
	env := []string{"DRIVER_MODEL=" + model, "DRIVER_PROMPTS=" + string(ps), "DRIVER_CWD=" + t.TempDir()}
	if tool {
		env = append(env, "DRIVER_TOOL=1")
	}
	return nativetest.RunSDKDriver[driverLine](t, "testdata/sdkdriver.mjs", srv.URL, nativetest.DefaultAPIKey, env...)
}

// sdkScript answers by the prompt: "think" gets thinking then text,
// "weather" calls the custom tool and answers with its result, anything
// else gets text; "quota" fails with a usage-limit error.
func sdkScript(req *agentv1.AgentRunRequest) nativetest.Script {
	text := req.GetAction().GetUserMessageAction().GetUserMessage().GetText()
	switch {
	case strings.Contains(text, "quota"):
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Fail(nativetest.ErrQuota())}}
	case strings.Contains(text, "think"):
		return nativetest.Script{
			Steps: []nativetest.Step{nativetest.Thinking("Let me", " think."), nativetest.Text("Thought", " it through.")},
			Usage: nativetest.Usage{Input: 20, Output: 7, CacheRead: 3, CacheWrite: 4, Reasoning: 5},
		}
	case strings.Contains(text, "weather"):
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.ToolCalls(nativetest.Call{Tool: "lookup", Args: map[string]any{"city": "Paris"}}),
			nativetest.TextFunc(func(rs []nativetest.ExecResult) string { return "The tool said: " + rs[len(rs)-1].Text }),
		}, Usage: nativetest.Usage{Input: 30, Output: 9}}
	}
	return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("Hello", " world")}, Usage: nativetest.Usage{Input: 10, Output: 2}}
}

// TestSDKConversation drives the official @cursor/sdk through a
// conversation of three turns (text, thinking, a custom tool round trip)
// over each transport, and checks what it printed against what the fake
// recorded.
func TestSDKConversation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		http2     aiserverv1.Http2Config
		transport nativetest.Transport
	}{
		{"sse", aiserverv1.Http2Config_HTTP2_CONFIG_UNSPECIFIED, nativetest.SSE},
		{"http2", aiserverv1.Http2Config_HTTP2_CONFIG_FORCE_ALL_ENABLED, nativetest.Bidi},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := nativetest.NewServer(t, nativetest.Options{HTTP2: tc.http2, Script: sdkScript})
			lines, _ := runDriver(t, srv, "composer-2", true, "say hello", "think about it", "what is the weather?")

			results := linesOf(lines, "driver_result")
			require.Len(t, results, 3, "one result per turn")
			for _, r := range results {
				require.Equal(t, "finished", r.Status, "turn error: %s", r.Error)
			}
			assert.Equal(t, "Hello world", *results[0].Result)
			assert.JSONEq(t, `{"inputTokens":10,"outputTokens":2,"cacheReadTokens":0,"cacheWriteTokens":0,"totalTokens":12}`, string(results[0].Usage))
			assert.Equal(t, "Thought it through.", *results[1].Result)
			assert.JSONEq(t, `{"inputTokens":20,"outputTokens":7,"cacheReadTokens":3,"cacheWriteTokens":4,"totalTokens":34,"reasoningTokens":5}`, string(results[1].Usage))
			assert.Equal(t, "The tool said: sunny in Paris", *results[2].Result)

			var thinking []string
			for _, m := range sdkMessages(t, lines, "thinking") {
				thinking = append(thinking, m["text"].(string))
			}
			assert.Equal(t, []string{"Let me", " think.", ""}, thinking, "thinking deltas, then thinking_completed")
			tools := linesOf(lines, "driver_tool")
			require.Len(t, tools, 1, "the SDK ran the custom tool once")
			assert.JSONEq(t, `{"city":"Paris"}`, string(tools[0].Args))
			var statuses []string
			for _, m := range sdkMessages(t, lines, "tool_call") {
				statuses = append(statuses, m["status"].(string))
			}
			assert.Equal(t, []string{"running", "completed"}, statuses)

			runs := srv.Runs()
			require.Len(t, runs, 3)
			for i, r := range runs {
				assert.Equal(t, tc.transport, r.Transport)
				assert.NoError(t, r.Err)
				assert.Equal(t, "composer-2", r.Model())
				assert.Equal(t, "sdk", r.Header.Get("x-cursor-client-type"))
				assert.True(t, strings.HasPrefix(r.Header.Get("x-cursor-client-version"), "sdk-"), r.Header.Get("x-cursor-client-version"))
				assert.True(t, strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ey"), "runs carry the exchanged JWT, not the API key")
				require.NotEmpty(t, r.Execs)
				assert.Equal(t, "request_context_args", r.Execs[0].Kind, "the request_context exec comes first")
				assert.Equal(t, "request_context_result.success", r.Execs[0].Outcome)
				assert.True(t, r.Execs[0].Closed)
				// The conversation state is the previous turn's checkpoint, and
				// the SDK gave back every blob the fake asked for.
				if i > 0 {
					assert.Equal(t, runs[i-1].Checkpoint.GetTurns(), r.Request.GetConversationState().GetTurns(), "run %d", i)
				}
				gets := 0
				for _, kv := range r.KV {
					require.NotNil(t, kv.Answer, "KV %s answered", kv.Kind)
					if kv.Kind == "get_blob_args" {
						gets++
						assert.NotNil(t, kv.Answer.GetGetBlobResult().BlobData)
					}
				}
				assert.Equal(t, i, gets, "run %d fetched every earlier turn's blob", i)
			}
			assert.Equal(t, []string{"say hello", "think about it", "what is the weather?"}, []string{runs[0].UserText(), runs[1].UserText(), runs[2].UserText()})

			// The custom tool as the SDK declares it, and its round trip.
			tools2 := runs[2].Request.GetMcpTools().GetMcpTools()
			require.Len(t, tools2, 1)
			assert.Equal(t, "custom-user-tools-lookup", tools2[0].GetName())
			assert.Equal(t, "custom-user-tools", tools2[0].GetProviderIdentifier())
			assert.Equal(t, "lookup", tools2[0].GetToolName())
			assert.Equal(t, "object", tools2[0].GetInputSchema().GetStructValue().GetFields()["type"].GetStringValue())
			mcp := runs[2].Execs[len(runs[2].Execs)-1]
			assert.Equal(t, "mcp_args", mcp.Kind)
			assert.Equal(t, "mcp_result.success", mcp.Outcome)
			assert.Equal(t, "sunny in Paris", mcp.Text)
			assert.True(t, mcp.Closed, "the SDK closes the exec stream after the result")

			// The calls before the runs.
			assert.NotEmpty(t, srv.CallsTo("/auth/exchange_user_api_key"))
			models := srv.CallsTo("/v1/models")
			require.NotEmpty(t, models)
			assert.Equal(t, "Bearer "+nativetest.DefaultAPIKey, models[0].Header.Get("Authorization"), "REST calls carry the raw API key")
			assert.NotEmpty(t, srv.CallsTo("/aiserver.v1.ServerConfigService/GetServerConfig"))
			assert.Zero(t, srv.InFlight())
		})
	}
}

// TestSDKErrors checks how the SDK reports the fake's errors: a
// usage-limit error of a run, and an unknown model (caught from /v1/models
// before any run).
func TestSDKErrors(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Script: sdkScript})
	lines, _ := runDriver(t, srv, "composer-2", false, "quota please")
	results := linesOf(lines, "driver_result")
	if len(results) == 1 {
		assert.Equal(t, "error", results[0].Status)
		assert.Contains(t, string(results[0].Error), "Usage limit reached")
	} else {
		errs := linesOf(lines, "driver_error")
		require.Len(t, errs, 1, "the SDK reports the quota error")
		assert.Contains(t, errs[0].ErrorMessage, "Usage limit reached")
	}
	runs := srv.Runs()
	require.NotEmpty(t, runs)
	ed, ok := nativetest.ErrorDetailsOf(runs[0].Err)
	require.True(t, ok)
	assert.Equal(t, aiserverv1.ErrorDetails_ERROR_PRO_USER_USAGE_LIMIT, ed.GetError())

	srv2 := nativetest.NewServer(t, nativetest.Options{Script: sdkScript})
	lines, _ = runDriver(t, srv2, "no-such-model", false, "hello")
	assert.Empty(t, linesOf(lines, "driver_result"))
	errs := linesOf(lines, "driver_error")
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].ErrorMessage, "no-such-model")
	assert.Empty(t, srv2.Runs(), "an unknown model fails before any run")
}

// TestSDKImages: the images of an SDK message (SDKUserMessage.images)
// reach the run as the user message's selected images, each with its
// bytes, media type and an id: the shape the gateway sends.
func TestSDKImages(t *testing.T) {
	png := nativetest.PNG(3, 2)
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("A red square.")}}
	}})
	lines, _ := runDriver(t, srv, "composer-2", false, map[string]any{
		"text":   "what is in this picture?",
		"images": []map[string]any{{"data": base64.StdEncoding.EncodeToString(png), "mimeType": "image/png"}},
	})
	results := linesOf(lines, "driver_result")
	require.Len(t, results, 1, "%v", lines)
	require.Equal(t, "finished", results[0].Status, "turn error: %s", results[0].Error)
	assert.Equal(t, "A red square.", *results[0].Result)

	runs := srv.Runs()
	require.Len(t, runs, 1)
	assert.Equal(t, "what is in this picture?", runs[0].UserText())
	seen := runs[0].Images()
	require.Len(t, seen, 1)
	assert.Equal(t, png, seen[0].GetData(), "the image's bytes, not its base64")
	assert.Equal(t, "image/png", seen[0].GetMimeType())
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, seen[0].GetUuid(), "a random UUID each")
	assert.Empty(t, seen[0].GetBlobId())
	assert.Empty(t, seen[0].GetPath())
}

func linesOf(lines []driverLine, typ string) []driverLine {
	var out []driverLine
	for _, l := range lines {
		if l.Type == typ {
			out = append(out, l)
		}
	}
	return out
}

// sdkMessages returns the SDK messages of one type, decoded.
func sdkMessages(t *testing.T, lines []driverLine, typ string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range linesOf(lines, "sdk_message") {
		var m map[string]any
		require.NoError(t, json.Unmarshal(l.Message, &m))
		if m["type"] == typ {
			out = append(out, m)
		}
	}
	return out
}
