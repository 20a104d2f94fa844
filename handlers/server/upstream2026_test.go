package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/gin-gonic/gin"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/config"
	"cursor2api/services/cursortest"
)

// upstream2026 is the fake web chat as it is in 2026: one allowed model,
// behind Vercel's checkpoint, a docs persona that calls tools in AI SDK
// tool frames and cuts long answers at its cap.
func upstream2026(t *testing.T) (*cursortest.Server, *cursortest.Checkpoint) {
	t.Helper()
	gate := cursortest.NewModelGate("google/gemini-3-flash")
	usage := &cursortest.Usage{Input: 12, Output: 4}
	long := longAnswer()
	up := cursortest.NewServer(t, gate.Reply(func(n int, req cursortest.Request) cursortest.Response {
		asked := func(s string) bool {
			for _, m := range req.Messages {
				if m.Role == "user" && strings.Contains(m.Text, s) {
					return true
				}
			}
			return false
		}
		switch {
		case asked("Weather in Paris?"):
			// The persona calls the client's tool natively.
			return cursortest.ToolCalls(usage, cursortest.NativeCall{ID: "toolu_1", Name: "get_weather", Input: `{"city":"Paris"}`, How: cursortest.InputDeltas})
		case asked("Tell me everything"):
			return cursortest.LengthCapped(long, 500, cursortest.RestartWord, usage)(n, req)
		}
		return cursortest.Text(usage, "Hello ", "from the docs.")
	}))
	return up, up.EnableCheckpoint(cursortest.CheckpointOptions{})
}

// longAnswer is an answer of several of the upstream's output caps.
func longAnswer() string {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "Step %d of the docs explains one more setting. ", i+1)
	}
	return b.String()
}

// A newcomer's `go run .`, given only the upstream's URL, against the 2026
// upstream: the OpenAI and Anthropic libraries get answers. The model is
// learned and aliased, the checkpoint passed, a failing challenge script
// does not block, the persona's call is the client's, a cut answer is whole.
func TestNoConfigurationAgainstThe2026Upstream(t *testing.T) {
	up, checkpoint := upstream2026(t)
	gin.SetMode(gin.TestMode)
	cfg, err := config.FromMap(map[string]string{
		"CURSOR_API_URL": up.URL + "/api/chat",
		// The challenge script is not a script: x-is-human goes empty.
		"SCRIPT_URL":      up.URL + "/c.js",
		"SCRIPT_PAGE_URL": up.URL + "/",
		// The state's default directory is the user's: a test keeps its own.
		"STATE_DIR": t.TempDir(),
	})
	require.NoError(t, err)
	srv, err := New(cfg, slog.New(slog.DiscardHandler), Options{Version: "test"})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		_ = serveResult(t, done, 10*time.Second, "the gateway did not stop")
	})
	gw := "http://" + ln.Addr().String()

	require.Eventually(t, func() bool {
		return gjson.Get(get(t, gw+"/ready"), "models.source").String() == "upstream"
	}, 10*time.Second, 20*time.Millisecond, "the model list is learned from the upstream")
	assert.Equal(t, []any{"gemini-3-flash", "gemini-3-flash-thinking"}, gjson.Get(get(t, gw+"/v1/models"), "data.#.id").Value())

	oa := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey("sk-any"), option.WithMaxRetries(0))
	stream := oa.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-5",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	require.NoError(t, stream.Err())
	require.Len(t, acc.Choices, 1)
	assert.Equal(t, "Hello from the docs.", acc.Choices[0].Message.Content)
	assert.Equal(t, "gpt-5", acc.Model, "the answer names the model asked for")

	long, err := oa.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "claude-sonnet-4.6",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me everything.")},
	})
	require.NoError(t, err)
	assert.Equal(t, longAnswer(), long.Choices[0].Message.Content, "cut at the cap, continued, stitched")
	assert.Equal(t, "stop", long.Choices[0].FinishReason)

	claude := anthropic.NewClient(anthropicoption.WithBaseURL(gw), anthropicoption.WithAPIKey("sk-any"), anthropicoption.WithMaxRetries(0))
	msg, err := claude.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5-20250929",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        "get_weather",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}},
		}}},
	})
	require.NoError(t, err)
	assert.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	require.Len(t, msg.Content, 1)
	use := msg.Content[0].AsToolUse()
	assert.Equal(t, "get_weather", use.Name)
	assert.JSONEq(t, `{"city":"Paris"}`, string(use.Input))

	st := checkpoint.Stats()
	assert.Equal(t, 1, st.Solved, "the checkpoint was passed once, in-process, and its cookie kept")
	assert.GreaterOrEqual(t, st.Passed, 5, "every later request went through with the cookie")
	for _, req := range up.Requests() {
		if req.Model == "cursor2api/model-probe" {
			continue // the probe asks for a model that cannot exist, to learn the list
		}
		assert.Equal(t, "google/gemini-3-flash", req.Model, "only the allowed model is asked for")
		assert.Empty(t, req.Header.Get("x-is-human"), "the failing script sends an empty value and does not block")
	}
	ready := get(t, gw+"/ready")
	assert.True(t, gjson.Get(ready, "checkpoint.egress.#(has_cookie==true)").Exists(), "/ready shows the kept cookie: %s", ready)
	assert.NotContains(t, ready, "_vcrcs=", "never the cookie itself")
}
