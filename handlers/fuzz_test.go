package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/tidwall/gjson"

	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/services/upstream"
)

// echoUpstream answers every conversation at once with a short text.
type echoUpstream struct{}

func (echoUpstream) Stream(_ context.Context, _ upstream.Request, fn func(upstream.Delta) error) (*models.Usage, error) {
	return nil, fn(upstream.Delta{Kind: upstream.DeltaText, Text: "ok"})
}

// FuzzChatCompletionsRequest sends any body to the OpenAI door (decoding,
// conversion, validation, prompt building, over an upstream that answers
// at once): the answer is always a success or an OpenAI error with a
// client status, never a panic or a 5xx.
func FuzzChatCompletionsRequest(f *testing.F) {
	for _, seed := range []string{
		userHi,
		`{"model":"claude-sonnet-4.6","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"claude-sonnet-4.6","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer"}}}}}],"tool_choice":"required"}`,
		`{"model":"claude-sonnet-4.6-thinking","messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function","function":{"name":"g"}},"tools":[{"type":"function","function":{"name":"g"}}],"parallel_tool_calls":false}`,
		`{"model":5}`, `[]`, `{"messages":[{"role":7}]}`, `{"model":"claude-sonnet-4.6","messages":[]}`, `{`, ``, `null`,
	} {
		f.Add([]byte(seed))
	}
	gin.SetMode(gin.TestMode)
	catalog, err := models.NewCatalog([]string{"claude-sonnet-4.6"}, nil)
	if err != nil {
		f.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	core := chat.New(chat.Settings{Catalog: catalog, MaxInputLength: 200000, MaxToolCallBytes: 1 << 20, ToolLoopMaxRepeat: 2}, echoUpstream{}, logger)
	h := New(Options{Chat: core, Catalog: catalog, MaxBodyBytes: 1 << 20, Logger: logger})
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		out := rec.Body.String()
		switch {
		case rec.Code == http.StatusOK && strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream"):
			if !strings.HasSuffix(out, "data: [DONE]\n\n") {
				t.Fatalf("a stream that does not end with [DONE]: %q", out)
			}
		case rec.Code == http.StatusOK:
			if !gjson.Valid(out) || gjson.Get(out, "choices.0.message").Type == gjson.Null {
				t.Fatalf("a 200 that is not a completion: %s", out)
			}
		case rec.Code >= 400 && rec.Code < 500:
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
				} `json:"error"`
			}
			if json.Unmarshal([]byte(out), &e) != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("status %d without an OpenAI error: %s", rec.Code, out)
			}
		default:
			t.Fatalf("status %d for a client's body %q: %s", rec.Code, body, out)
		}
	})
}
