package handlers

import (
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
)

// FuzzGenerateContentRequest proves any body to the Gemini door, streamed
// or not, gets a success ending with a finishReason or Google's error with
// a client status, never a panic or a 5xx.
func FuzzGenerateContentRequest(f *testing.F) {
	for _, seed := range []string{
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
		`{"contents":[{"parts":[{"text":"a"},{"inlineData":{"mimeType":"image/png","data":"AA=="}}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"x"}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"r"}}}]}],
		  "tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{"a":{"type":"INTEGER","nullable":true}}}}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}}}`,
		`{"contents":[{"parts":[{"text":"x"}]}],"systemInstruction":"s","generationConfig":{"maxOutputTokens":5,"stopSequences":["o"],"responseMimeType":"application/json","responseJsonSchema":{"type":"ARRAY","items":{"anyOf":[{"type":"STRING"}]}},"thinkingConfig":{"includeThoughts":true,"thinkingBudget":-1,"thinkingLevel":"HIGH"}}}`,
		`{"contents":[]}`, `{"contents":[{"role":"tool"}]}`, `{"tools":[{"googleSearch":{}}]}`, `[]`, `{`, ``, `null`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	gin.SetMode(gin.TestMode)
	catalog, err := models.NewCatalog([]string{"gemini-3-flash"}, nil)
	if err != nil {
		f.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	core := chat.New(chat.Settings{Catalog: catalog, MaxInputLength: 200000, MaxToolCallBytes: 1 << 20, ToolLoopMaxRepeat: 2}, echoUpstream{}, logger)
	h := New(Options{Chat: core, Catalog: catalog, MaxBodyBytes: 1 << 20, Logger: logger})
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		path := "/v1beta/models/gemini-3-flash:generateContent"
		if stream {
			path = "/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse"
		}
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		out := rec.Body.String()
		switch {
		case rec.Code == http.StatusOK && stream:
			events := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n")
			last, ok := strings.CutPrefix(events[len(events)-1], "data: ")
			if !ok || gjson.Get(last, "candidates.0.finishReason").String() == "" {
				t.Fatalf("a stream that does not end with a finishReason: %q", out)
			}
		case rec.Code == http.StatusOK:
			if !gjson.Valid(out) || gjson.Get(out, "candidates.0.finishReason").String() == "" {
				t.Fatalf("a 200 that is not an answer: %s", out)
			}
		case rec.Code >= 400 && rec.Code < 500:
			var e struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Status  string `json:"status"`
				} `json:"error"`
			}
			if json.Unmarshal([]byte(out), &e) != nil || e.Error.Message == "" || e.Error.Status == "" || e.Error.Code != rec.Code {
				t.Fatalf("status %d without Google's error: %s", rec.Code, out)
			}
		default:
			t.Fatalf("status %d for a client's body %q: %s", rec.Code, body, out)
		}
	})
}
