package handlers

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/gin-gonic/gin"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/services/upstream"
)

// reportingUpstream is a back door that answers every conversation with
// one text delta and reports usage, as the native back door reports its
// turn_ended counts, recording what the core sent it.
type reportingUpstream struct {
	usage models.Usage
	mu    sync.Mutex
	reqs  []upstream.Request
}

func (u *reportingUpstream) Stream(_ context.Context, req upstream.Request, fn func(upstream.Delta) error) (*models.Usage, error) {
	u.mu.Lock()
	u.reqs = append(u.reqs, req)
	u.mu.Unlock()
	if err := fn(upstream.Delta{Kind: upstream.DeltaText, Text: "ok"}); err != nil {
		return nil, err
	}
	usage := u.usage
	return &usage, nil
}

// requests returns what the back door was sent.
func (u *reportingUpstream) requests() []upstream.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstream.Request(nil), u.reqs...)
}

// newCoreStack serves the gateway's doors in front of the core over up,
// with the model claude-sonnet-4.6, to which every other claude-* name
// (Claude Code's ids) is an alias.
func newCoreStack(t *testing.T, up upstream.Upstream) *stack {
	t.Helper()
	gin.SetMode(gin.TestMode)
	catalog, err := models.NewCatalog([]string{"claude-sonnet-4.6"}, nil)
	require.NoError(t, err)
	aliases, err := models.ParseAliases([]string{"claude-*=claude-sonnet-4.6"})
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	core := chat.New(chat.Settings{Catalog: catalog, MaxInputLength: 200000, MaxToolCallBytes: 1 << 20}, up, logger)
	srv := httptest.NewServer(New(Options{Chat: core, Catalog: catalog, Aliases: aliases, MaxBodyBytes: 1 << 20, Logger: logger}))
	t.Cleanup(srv.Close)
	return &stack{Server: srv}
}

// TestUsageOnEveryDoor proves, through the official SDKs on every door,
// streamed and whole, that cached and reasoning tokens land in each API's
// own fields, and that chat completions omit details a back door lacks.
func TestUsageOnEveryDoor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage models.Usage
		// anthropicInput is Anthropic's input_tokens: the prompt neither
		// read from nor written to the cache.
		anthropicInput int64
	}{
		{"text back door", models.Usage{InputTokens: 321, OutputTokens: 45, TotalTokens: 366}, 321},
		{"native back door", models.Usage{InputTokens: 1000, OutputTokens: 200, TotalTokens: 1200, CacheReadTokens: 600, CacheWriteTokens: 150, ReasoningTokens: 80}, 250},
	} {
		u := tc.usage
		for _, streaming := range []bool{false, true} {
			name := tc.name + map[bool]string{false: " whole", true: " streamed"}[streaming]
			s := newCoreStack(t, &reportingUpstream{usage: u})
			ctx := context.Background()

			t.Run(name+" chat completions", func(t *testing.T) {
				params := openai.ChatCompletionNewParams{
					Model:    "claude-sonnet-4.6",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
				}
				var got openai.CompletionUsage
				if streaming {
					params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
					acc, _, _, err := accumulate(t, s.sdk("k").Chat.Completions.NewStreaming(ctx, params))
					require.NoError(t, err)
					got = acc.Usage
				} else {
					res, err := s.sdk("k").Chat.Completions.New(ctx, params)
					require.NoError(t, err)
					got = res.Usage
					assert.Equal(t, u.CacheReadTokens > 0, got.JSON.PromptTokensDetails.Valid(), "prompt_tokens_details only with a cache count: %s", got.RawJSON())
					assert.Equal(t, u.ReasoningTokens > 0, got.JSON.CompletionTokensDetails.Valid(), "completion_tokens_details only with a reasoning count: %s", got.RawJSON())
				}
				assert.EqualValues(t, u.InputTokens, got.PromptTokens)
				assert.EqualValues(t, u.OutputTokens, got.CompletionTokens)
				assert.EqualValues(t, u.TotalTokens, got.TotalTokens)
				assert.EqualValues(t, u.CacheReadTokens, got.PromptTokensDetails.CachedTokens)
				assert.EqualValues(t, u.ReasoningTokens, got.CompletionTokensDetails.ReasoningTokens)
			})

			t.Run(name+" messages", func(t *testing.T) {
				msg := claudeAsk(t, s.claude("k"), streaming, anthropic.MessageNewParams{
					Model: "claude-sonnet-4.6", MaxTokens: 100, Messages: []anthropic.MessageParam{userText("hi")},
				})
				assert.Equal(t, tc.anthropicInput, msg.Usage.InputTokens)
				assert.EqualValues(t, u.CacheReadTokens, msg.Usage.CacheReadInputTokens)
				assert.EqualValues(t, u.CacheWriteTokens, msg.Usage.CacheCreationInputTokens)
				assert.EqualValues(t, u.InputTokens, msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens+msg.Usage.CacheCreationInputTokens, "the three add up to the prompt")
				assert.EqualValues(t, u.OutputTokens, msg.Usage.OutputTokens)
				assert.EqualValues(t, u.ReasoningTokens, msg.Usage.OutputTokensDetails.ThinkingTokens)
			})

			t.Run(name+" responses", func(t *testing.T) {
				params := responses.ResponseNewParams{Model: "claude-sonnet-4.6", Input: userInput("hi")}
				var got responses.ResponseUsage
				if streaming {
					out, err := readStream(t, s.sdk("k").Responses.NewStreaming(ctx, params))
					require.NoError(t, err)
					require.NotEmpty(t, out.Events)
					last := out.Events[len(out.Events)-1]
					require.Equal(t, "response.completed", last.Type)
					got = last.Response.Usage
					require.NotNil(t, out.Final, "the accumulator rebuilt the response")
					assert.Equal(t, got, out.Final.Usage)
				} else {
					res, err := s.sdk("k").Responses.New(ctx, params)
					require.NoError(t, err)
					got = res.Usage
				}
				assert.EqualValues(t, u.InputTokens, got.InputTokens)
				assert.EqualValues(t, u.CacheReadTokens, got.InputTokensDetails.CachedTokens)
				assert.EqualValues(t, u.OutputTokens, got.OutputTokens)
				assert.EqualValues(t, u.ReasoningTokens, got.OutputTokensDetails.ReasoningTokens)
				assert.EqualValues(t, u.TotalTokens, got.TotalTokens)
			})
		}
	}
}

// TestSessionReachesTheBackDoor sends each door the session ids agents
// send, in headers and in the body, and checks what reaches the back door
// in upstream.Request.Session.
func TestSessionReachesTheBackDoor(t *testing.T) {
	const (
		chatBody      = `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]%s}`
		messagesBody  = `{"model":"claude-sonnet-4.6","max_tokens":100,"messages":[{"role":"user","content":"hi"}]%s}`
		responsesBody = `{"model":"claude-sonnet-4.6","input":"hi"%s}`
		legacyUserID  = `,"metadata":{"user_id":"user_0123abcd_account__session_6f1e2d3c-0000-4000-8000-00000000000a"}`
		jsonUserID    = `,"metadata":{"user_id":"{\"device_id\":\"dev\",\"account_uuid\":\"\",\"session_id\":\"54c1eb09-bc4c-4d2f-98eb-6d2ab2d5e2fe\"}"}`
		cacheKey      = `,"prompt_cache_key":"key-from-body"`
	)
	fixture, err := os.ReadFile("testdata/claude_code_first_turn.json")
	require.NoError(t, err)
	long := strings.Repeat("é", 150) // 300 bytes
	for _, tc := range []struct {
		name, path, body, extra string
		header                  []string
		want                    string
	}{
		{"Claude Code's header", "/v1/messages", messagesBody, "", []string{"X-Claude-Code-Session-Id", "cc-header-1"}, "cc-header-1"},
		{"Claude Code's header beats metadata", "/v1/messages", messagesBody, legacyUserID, []string{"X-Claude-Code-Session-Id", "cc-header-1"}, "cc-header-1"},
		{"metadata.user_id before Claude Code 2.1.78", "/v1/messages", messagesBody, legacyUserID, nil, "6f1e2d3c-0000-4000-8000-00000000000a"},
		{"metadata.user_id as a JSON string", "/v1/messages", messagesBody, jsonUserID, nil, "54c1eb09-bc4c-4d2f-98eb-6d2ab2d5e2fe"},
		{"Claude Code's recorded first turn", "/v1/messages?beta=true", string(fixture), "", nil, "00000000-0000-4000-8000-000000000000"},
		{"no session on messages", "/v1/messages", messagesBody, `,"metadata":{"user_id":"alice"}`, nil, ""},
		{"older Codex's session_id header", "/v1/responses", responsesBody, "", []string{"session_id", "0199a213-81c0-7800-8aa1-bbab2a035a53"}, "0199a213-81c0-7800-8aa1-bbab2a035a53"},
		{"Codex 0.169's session-id header", "/v1/responses", responsesBody, "", []string{"session-id", "01a217ae-2f7b-75d3-8fd9-e4c3e122f7bc"}, "01a217ae-2f7b-75d3-8fd9-e4c3e122f7bc"},
		{"the header beats prompt_cache_key", "/v1/responses", responsesBody, cacheKey, []string{"session_id", "conv-1"}, "conv-1"},
		{"prompt_cache_key on responses", "/v1/responses", responsesBody, cacheKey, nil, "key-from-body"},
		{"no session on responses", "/v1/responses", responsesBody, "", nil, ""},
		{"prompt_cache_key on chat completions", "/v1/chat/completions", chatBody, cacheKey, nil, "key-from-body"},
		{"the header beats the body on chat completions", "/v1/chat/completions", chatBody, cacheKey, []string{"X-Claude-Code-Session-Id", "cc-2"}, "cc-2"},
		{"a prompt_cache_key of another type is ignored", "/v1/chat/completions", chatBody, `,"prompt_cache_key":42`, nil, ""},
		{"no session on chat completions", "/v1/chat/completions", chatBody, "", nil, ""},
		{"a blank header leaves the body's", "/v1/chat/completions", chatBody, cacheKey, []string{"session_id", "  "}, "key-from-body"},
		{"clipped at 200 bytes on a rune boundary", "/v1/chat/completions", chatBody, "", []string{"session_id", "x" + long}, "x" + strings.Repeat("é", 99)},
		{"a long body key is clipped too", "/v1/responses", responsesBody, `,"prompt_cache_key":"` + strings.Repeat("k", 300) + `"`, nil, strings.Repeat("k", 200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := &reportingUpstream{usage: models.Usage{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}}
			s := newCoreStack(t, up)
			body := tc.body
			if strings.Contains(body, "%s") {
				body = strings.Replace(body, "%s", tc.extra, 1)
			}
			req, err := http.NewRequest(http.MethodPost, s.URL+tc.path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			for i := 0; i+1 < len(tc.header); i += 2 {
				req.Header[tc.header[i]] = []string{tc.header[i+1]} // as sent, not canonicalized
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			out, err := io.ReadAll(res.Body)
			res.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode, "%s", out)
			reqs := up.requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, tc.want, reqs[0].Session)
		})
	}
}

// uuidRE matches the session ids the agent CLIs make.
var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestAgentCLIsSendTheirSession proves that the real Codex and Claude Code
// session id, a UUID, reaches the back door the same on every request, and
// that their session header names the same session as their body.
func TestAgentCLIsSendTheirSession(t *testing.T) {
	for _, agent := range []struct {
		name, header string
		run          func(t *testing.T, url string)
	}{
		{"codex", "Session-Id", func(t *testing.T, url string) {
			runCodex(t, codexBinary(t), url, t.TempDir(), "", "Say ok.")
		}},
		{"claude", "X-Claude-Code-Session-Id", func(t *testing.T, url string) {
			runClaude(t, claudeBinary(t), url, t.TempDir(), "Say ok.", "Read")
		}},
	} {
		t.Run(agent.name, func(t *testing.T) {
			up := &reportingUpstream{usage: models.Usage{InputTokens: 10, OutputTokens: 1, TotalTokens: 11}}
			s := newCoreStack(t, up)
			var mu sync.Mutex
			var headers []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && (r.URL.Path == "/v1/messages" || r.URL.Path == "/v1/responses") {
					mu.Lock()
					headers = append(headers, r.Header.Get(agent.header))
					mu.Unlock()
				}
				s.Config.Handler.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			agent.run(t, srv.URL)
			reqs := up.requests()
			require.NotEmpty(t, reqs)
			for _, r := range reqs {
				assert.Regexp(t, uuidRE, r.Session)
				assert.Equal(t, reqs[0].Session, r.Session, "one session a run")
			}
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, headers, len(reqs), "every request the CLI made reached the back door")
			for _, h := range headers {
				assert.Equal(t, reqs[0].Session, h, "%s names the session", agent.header)
			}
		})
	}
}
