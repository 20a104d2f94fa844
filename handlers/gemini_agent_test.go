package handlers

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// The Gemini door in the table of doors (agentDoors) that the agent
// backend's tests, and any others driving every door, run each case on.

// geminiRequest asks to see the thoughts, as Gemini CLI does.
func geminiRequest(model, prompt string, stream, tools bool) doorRequest {
	body := map[string]any{
		"systemInstruction": map[string]any{"parts": []map[string]any{{"text": "Be brief."}}},
		"contents":          []map[string]any{{"role": "user", "parts": []map[string]any{{"text": prompt}}}},
		"generationConfig":  map[string]any{"thinkingConfig": map[string]any{"includeThoughts": true}},
	}
	if tools {
		body["tools"] = []map[string]any{{"functionDeclarations": []map[string]any{{"name": "get_weather", "parametersJsonSchema": weatherParams}}}}
	}
	path := "/v1beta/models/" + model + ":generateContent"
	if stream {
		path = "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
	}
	return doorRequest{path: path, body: mustJSON(body)}
}

// googleErrorTypes name Google's error statuses in the table's terms
// (OpenAI's error types), so that one table of cases serves every door.
var googleErrorTypes = map[string]string{
	"INVALID_ARGUMENT": "invalid_request_error", "UNAUTHENTICATED": "authentication_error", "PERMISSION_DENIED": "permission_error",
	"NOT_FOUND": "not_found_error", "RESOURCE_EXHAUSTED": "rate_limit_error",
	"INTERNAL": "api_error", "UNAVAILABLE": "api_error", "DEADLINE_EXCEEDED": "api_error",
}

func askGemini(t *testing.T, s *stack, model, prompt string, stream, tools bool) doorAnswer {
	t.Helper()
	req := geminiRequest(model, prompt, stream, tools)
	r := s.do(t, http.MethodPost, req.path, req.body)
	out := doorAnswer{status: r.status, header: r.header}
	readError := func(body gjson.Result) {
		status := body.Get("error.status").String()
		require.Contains(t, googleErrorTypes, status, "a Google error body: %s", body.Raw)
		out.errType, out.errMsg = googleErrorTypes[status], body.Get("error.message").String()
	}
	if r.status != http.StatusOK {
		assert.EqualValues(t, r.status, gjson.Get(r.body, "error.code").Int(), r.body)
		readError(gjson.Parse(r.body))
		return out
	}
	read := func(res gjson.Result) {
		assert.Equal(t, model, res.Get("modelVersion").String(), "the model echoed")
		cand := res.Get("candidates.0")
		assert.Equal(t, "model", cand.Get("content.role").String(), res.Raw)
		for _, p := range cand.Get("content.parts").Array() {
			switch {
			case p.Get("functionCall").Exists():
				assert.NotEmpty(t, p.Get("functionCall.id").String(), "every call has an id")
				out.calls = append(out.calls, doorCall{p.Get("functionCall.name").String(), p.Get("functionCall.args").Raw})
			case p.Get("thought").Bool():
				out.reasoning += p.Get("text").String()
			default:
				out.text += p.Get("text").String()
			}
		}
		if f := cand.Get("finishReason"); f.Exists() {
			require.Empty(t, out.finish, "one finish")
			out.finish = f.String()
			out.usageIn = res.Get("usageMetadata.promptTokenCount").Int()
			out.usageOut = res.Get("usageMetadata.candidatesTokenCount").Int() + res.Get("usageMetadata.thoughtsTokenCount").Int()
		}
	}
	if !stream {
		read(gjson.Parse(r.body))
	} else {
		require.True(t, strings.HasSuffix(r.body, "\n\n"), "%q", r.body)
		events := strings.Split(strings.TrimSuffix(r.body, "\n\n"), "\n\n")
		for i, ev := range events {
			data, ok := strings.CutPrefix(ev, "data: ")
			require.True(t, ok, "only data events, no comment: %q", ev)
			require.True(t, gjson.Valid(data), data)
			d := gjson.Parse(data)
			if d.Get("error").Exists() {
				require.Equal(t, len(events)-1, i, "an error event ends the stream")
				out.streamErr = true
				readError(d)
				continue
			}
			require.Empty(t, out.finish, "nothing after the finish: %s", data)
			read(d)
		}
		if !out.streamErr {
			require.NotEmpty(t, out.finish, "every stream ends with a finishReason")
		}
	}
	for _, mark := range protocolMarkup {
		assert.NotContains(t, out.text, mark, "protocol markup in the content")
	}
	return out
}
