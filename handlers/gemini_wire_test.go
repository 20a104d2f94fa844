package handlers

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

// Wire tests of the Gemini door: the exact bytes of its streams, which
// Gemini CLI and the Go SDK read only in the form "data: <json>\n\n".

// responseIDRE matches the response id of a Gemini answer.
var responseIDRE = regexp.MustCompile(`"responseId":"[A-Za-z0-9]{22}"`)

// geminiStream posts a streamGenerateContent request and returns the body
// with its response id replaced by "ID", after checking the framing:
// nothing but "data: <one line of JSON>" events, one response id.
func geminiStream(t *testing.T, s *stack, model, body string) string {
	t.Helper()
	r := s.do(t, http.MethodPost, "/v1beta/models/"+model+":streamGenerateContent?alt=sse", body)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "text/event-stream; charset=utf-8", r.header.Get("Content-Type"))
	ids := map[string]bool{}
	for _, id := range responseIDRE.FindAllString(r.body, -1) {
		ids[id] = true
	}
	assert.Len(t, ids, 1, "one response id: %s", r.body)
	require.True(t, strings.HasSuffix(r.body, "\n\n"), "%q", r.body)
	for _, ev := range strings.Split(strings.TrimSuffix(r.body, "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		require.True(t, ok, "every event is a data line, no comment, no event name: %q", ev)
		require.NotContains(t, data, "\n", "one line")
		require.True(t, gjson.Valid(data), data)
	}
	return responseIDRE.ReplaceAllString(r.body, `"responseId":"ID"`)
}

func TestGeminiWireText(t *testing.T) {
	// The upstream's deltas come apart, so that each is an event.
	s := newStack(t, nil, cursortest.Always(cursortest.Response{Events: cursortest.Frames(&defaultUsage, nil, []string{"Hel", "lo", " <world>"}), Delay: 30 * time.Millisecond}))
	got := geminiStream(t, s, "gemini-3-flash", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	assert.Equal(t, ""+
		`data: {"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}],"modelVersion":"gemini-3-flash","responseId":"ID"}`+"\n\n"+
		`data: {"candidates":[{"content":{"parts":[{"text":"lo"}],"role":"model"},"index":0}],"modelVersion":"gemini-3-flash","responseId":"ID"}`+"\n\n"+
		`data: {"candidates":[{"content":{"parts":[{"text":" <world>"}],"role":"model"},"index":0}],"modelVersion":"gemini-3-flash","responseId":"ID"}`+"\n\n"+
		`data: {"candidates":[{"content":{"parts":[],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":321,"candidatesTokenCount":45,"totalTokenCount":366},"modelVersion":"gemini-3-flash","responseId":"ID"}`+"\n\n",
		got)
}

func TestGeminiWireToolCalls(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"TRIGGER\n<invoke name=\"read_file\">{\"path\":\"a.go\"}</invoke>\n<invoke name=\"run_shell_command\">{\"command\":\"ls\"}</invoke>"}))
	got := geminiStream(t, s, "gemini-3-flash", `{"contents":[{"role":"user","parts":[{"text":"go"}]}],"tools":[{"functionDeclarations":[
		{"name":"read_file","parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},
		{"name":"run_shell_command","parameters":{"type":"OBJECT","properties":{"command":{"type":"STRING"}},"required":["command"]}}]}]}`)
	got = regexp.MustCompile(`"id":"call_[A-Za-z0-9]{24}"`).ReplaceAllString(got, `"id":"CALL"`)
	assert.Equal(t, ""+
		`data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"CALL","name":"read_file","args":{"path":"a.go"}}}],"role":"model"},"index":0}],"modelVersion":"gemini-3-flash","responseId":"ID"}`+"\n\n"+
		`data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"CALL","name":"run_shell_command","args":{"command":"ls"}}}],"role":"model"},"index":0}],"modelVersion":"gemini-3-flash","responseId":"ID"}`+"\n\n"+
		`data: {"candidates":[{"content":{"parts":[],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":321,"candidatesTokenCount":45,"totalTokenCount":366},"modelVersion":"gemini-3-flash","responseId":"ID"}`+"\n\n",
		got)
}

func TestGeminiWireThoughts(t *testing.T) {
	s := newStack(t, map[string]string{"EXPOSE_THINKING": "true"}, scriptWith(t, nil, []string{"Hmm."}, []string{"4"}))
	body := `{"contents":[{"role":"user","parts":[{"text":"2+2"}]}],"generationConfig":{"thinkingConfig":{"includeThoughts":%s,"thinkingBudget":100}}}`
	got := geminiStream(t, s, "gemini-3-flash", strings.Replace(body, "%s", "true", 1))
	assert.Contains(t, got, `"parts":[{"text":"Hmm.","thought":true}]`)
	got = geminiStream(t, s, "gemini-3-flash", strings.Replace(body, "%s", "false", 1))
	assert.NotContains(t, got, `"thought"`, "not asked: not sent, whatever EXPOSE_THINKING says")
	assert.Contains(t, got, `"parts":[{"text":"4"}],"role":"model"},"index":0}`)
	assert.Contains(t, got, `"parts":[],"role":"model"},"finishReason":"STOP"`)
}

// TestGeminiWireSlowUpstreamNoComment: a slow upstream gets no keepalive
// at all on this door, since its readers break on a comment line.
func TestGeminiWireSlowUpstreamNoComment(t *testing.T) {
	slow := cursortest.Response{Events: cursortest.Frames(&defaultUsage, nil, []string{"late", " answer"}), Delay: 700 * time.Millisecond}
	s := newStack(t, map[string]string{"PING_INTERVAL": "1"}, cursortest.Always(slow))
	got := geminiStream(t, s, "gemini-3-flash", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	assert.NotContains(t, got, ":ping")
	assert.NotContains(t, got, ": ping")
	assert.Equal(t, 3, strings.Count(got, "data: "), "two parts and the finish: %s", got)
}

// TestGeminiWireStalledUpstream: a silent upstream writes nothing, so its
// timeout is a real HTTP error in Google's shape, not a comment and a
// broken stream.
func TestGeminiWireStalledUpstream(t *testing.T) {
	s := newStack(t, map[string]string{"PING_INTERVAL": "1", "TIMEOUT": "2.5"}, cursortest.Always(cursortest.Response{Hang: true}))
	r := s.do(t, http.MethodPost, "/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	assert.Equal(t, http.StatusGatewayTimeout, r.status, r.body)
	assert.Equal(t, "application/json; charset=utf-8", r.header.Get("Content-Type"))
	assert.NotContains(t, r.body, "ping")
	assert.Equal(t, []string{"code", "message", "status"}, keys(t, gjson.Get(r.body, "error")))
	assert.EqualValues(t, 504, gjson.Get(r.body, "error.code").Int())
	assert.Equal(t, "DEADLINE_EXCEEDED", gjson.Get(r.body, "error.status").String())
	assert.Contains(t, gjson.Get(r.body, "error.message").String(), "TIMEOUT")
}

// TestGeminiWireStreamWithoutSSE: streamGenerateContent without alt=sse
// answers a JSON array, as Google's API does.
func TestGeminiWireStreamWithoutSSE(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"ok"}))
	r := s.do(t, http.MethodPost, "/v1beta/models/gemini-3-flash:streamGenerateContent", `{"contents":[{"parts":[{"text":"hi"}]}]}`)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "ok", gjson.Get(r.body, "0.candidates.0.content.parts.0.text").String())
	assert.Equal(t, "STOP", gjson.Get(r.body, "0.candidates.0.finishReason").String())
}

// TestGeminiWireCLIHistory is Gemini CLI's second turn as it sends it: two
// user contents in a row, the call echoed with a thoughtSignature that is
// not base64, the result as {output}, thinkingLevel and sampling fields.
func TestGeminiWireCLIHistory(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"Done."}))
	r := s.do(t, http.MethodPost, "/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent?alt=sse", `{
		"contents":[
			{"role":"user","parts":[{"text":"<session_context>cwd: /tmp</session_context>"}]},
			{"role":"user","parts":[{"text":"read a.go"}]},
			{"role":"model","parts":[{"functionCall":{"id":"call_1","name":"read_file","args":{"path":"a.go"}},"thoughtSignature":"skip_thought_signature_validator"}]},
			{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"read_file","response":{"output":"package a"}}}]}],
		"systemInstruction":{"role":"user","parts":[{"text":"You are Gemini CLI."}]},
		"tools":[{"functionDeclarations":[{"name":"read_file","description":"Reads a file","parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]}],
		"generationConfig":{"temperature":1,"topP":0.95,"topK":64,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"HIGH"}}}`,
		"x-goog-api-client", "gl-node/22", "User-Agent", "GeminiCLI/0.61.0 (linux; x64)")
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Contains(t, r.body, `"finishReason":"STOP"`)
	msgs := s.up.Requests()[0].Messages
	assert.Contains(t, msgs[0].Text, "You are Gemini CLI.")
	last := msgs[len(msgs)-1].Text
	assert.Contains(t, last, `<tool_result id="call_1" name="read_file">`)
	assert.Contains(t, last, "package a")
	assert.NotContains(t, last, "skip_thought_signature_validator")
}

// TestGeminiWireRoutes: countTokens takes a whole generateContentRequest
// too; an unknown method or route under /v1beta answers in Google's shape.
func TestGeminiWireRoutes(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"unused"}))
	short := s.do(t, http.MethodPost, "/v1beta/models/gemini-3-flash:countTokens", `{"contents":[{"parts":[{"text":"hi"}]}]}`)
	require.Equal(t, http.StatusOK, short.status, short.body)
	whole := s.do(t, http.MethodPost, "/v1beta/models/gemini-3-flash:countTokens", `{"generateContentRequest":{"model":"models/gemini-3-flash",
		"contents":[{"parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"You are a very careful assistant who reads everything twice."}]}}}`)
	require.Equal(t, http.StatusOK, whole.status, whole.body)
	assert.Greater(t, gjson.Get(whole.body, "totalTokens").Int(), gjson.Get(short.body, "totalTokens").Int()+5, "the system instruction counts")

	for _, tc := range []struct{ method, path, want string }{
		{http.MethodPost, "/v1beta/models/gemini-3-flash:embedContent", "embedContent"},
		{http.MethodGet, "/v1beta/cachedContents", "/v1beta/cachedContents"},
	} {
		r := s.do(t, tc.method, tc.path, `{}`)
		assert.Equal(t, http.StatusNotFound, r.status, r.body)
		assert.Equal(t, "NOT_FOUND", gjson.Get(r.body, "error.status").String(), r.body)
		assert.Contains(t, gjson.Get(r.body, "error.message").String(), tc.want)
	}
	r := s.do(t, http.MethodDelete, "/v1beta/models/gemini-3-flash", "")
	assert.Equal(t, http.StatusMethodNotAllowed, r.status, r.body)
	assert.Equal(t, "UNIMPLEMENTED", gjson.Get(r.body, "error.status").String(), r.body)
}
