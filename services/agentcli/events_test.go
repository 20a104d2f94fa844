package agentcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/upstream"
	"cursor2api/utils"
)

func delta(text string) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":%s}]},"session_id":"s","timestamp_ms":1}`, b)
}

func summary(text string) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":%s}]},"session_id":"s"}`, b)
}

const (
	toolCall     = `{"type":"tool_call","subtype":"started","call_id":"t1","tool_call":{"ShellToolCall":{"args":{"command":"ls"}}}}`
	toolDone     = `{"type":"tool_call","subtype":"completed","call_id":"t1","tool_call":{"ShellToolCall":{"args":{"command":"ls"},"result":{}}}}`
	resultOK     = `{"type":"result","subtype":"success","is_error":false,"result":"ignored when streamed","usage":{"inputTokens":11,"outputTokens":4}}`
	resultNoText = `{"type":"result","subtype":"success","is_error":false,"result":""}`
)

// replay feeds lines to a reader and returns the text and reasoning it
// sent, as "T:" and "R:" entries.
func replay(t *testing.T, lines ...string) ([]string, *reader) {
	t.Helper()
	var got []string
	fn := func(d upstream.Delta) error {
		switch d.Kind {
		case upstream.DeltaText:
			got = append(got, "T:"+d.Text)
		case upstream.DeltaReasoning:
			got = append(got, "R:"+d.Text)
		}
		return nil
	}
	r := newReader(slog.New(slog.DiscardHandler), nil, nil)
	for _, l := range lines {
		require.NoError(t, r.line([]byte(l), fn))
	}
	require.NoError(t, r.flush(fn))
	return got, r
}

func TestReader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string
	}{
		{"summary after the deltas is dropped", []string{delta("Hel"), delta("lo"), summary("Hello"), resultOK}, []string{"T:Hel", "T:lo"}},
		{"summary at the end of output is dropped", []string{delta("a"), delta("b"), summary("ab")}, []string{"T:a", "T:b"}},
		{"a delta repeating its segment is text, not a summary", []string{delta("ha"), delta("ha"), delta("!"), summary("haha!"), resultOK},
			[]string{"T:ha", "T:ha", "T:!"}},
		{"each segment's summary is dropped", []string{delta("One."), summary("One."), toolCall, toolDone, delta(" Two"), delta("."), summary(" Two."), resultOK},
			[]string{"T:One.", "T: Two", "T:."}},
		{"a summary followed at once by the next segment", []string{delta("A"), delta("B"), summary("AB"), delta("C"), delta("D"), summary("CD"), resultOK},
			[]string{"T:A", "T:B", "T:C", "T:D"}},
		{"a one-delta segment's summary before the result", []string{delta("Yes."), summary("Yes."), resultOK}, []string{"T:Yes."}},
		{"a summary of the whole answer is dropped", []string{delta("A"), toolCall, delta("B"), summary("AB"), resultOK}, []string{"T:A", "T:B"}},
		{"thinking becomes reasoning", []string{`{"type":"thinking","subtype":"delta","text":"hm"}`, `{"type":"thinking","subtype":"completed"}`, delta("x")},
			[]string{"R:hm", "T:x"}},
		{"a CLI tool call is not forwarded", []string{toolCall, toolDone, delta("done")}, []string{"T:done"}},
		{"the result is the answer when nothing streamed", []string{`{"type":"result","subtype":"success","result":"whole"}`}, []string{"T:whole"}},
		{"no text at all", []string{resultNoText}, nil},
		{"lines that are not events are skipped", []string{"\x1b[32mwarming up\x1b[0m", "", "   ", `{"type":"system","subtype":"init"}`, "\x1b[0m" + delta("ok")},
			[]string{"T:ok"}},
		{"assistant text field of older CLIs", []string{`{"type":"assistant","text":"old"}`}, []string{"T:old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := replay(t, tc.lines...)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReaderUsage(t *testing.T) {
	_, r := replay(t, delta("x"), resultOK)
	assert.Equal(t, &models.Usage{InputTokens: 11, OutputTokens: 4, TotalTokens: 15}, r.usage())
	_, r = replay(t, delta("x"), `{"type":"result","usage":{"input_tokens":3,"output_tokens":2}}`)
	assert.Equal(t, &models.Usage{InputTokens: 3, OutputTokens: 2, TotalTokens: 5}, r.usage())
	_, r = replay(t, delta("x"), resultNoText)
	assert.Nil(t, r.usage(), "no usage reported")
}

func TestReaderResult(t *testing.T) {
	_, r := replay(t, delta("x"), resultOK)
	assert.False(t, r.failed())
	_, r = replay(t, `{"type":"result","is_error":true,"result":"boom"}`)
	assert.True(t, r.failed())
	got, r := replay(t, `{"type":"result","subtype":"error","result":"boom"}`)
	assert.True(t, r.failed(), "an error subtype is a failure even without is_error")
	assert.Empty(t, got, "an error result is never sent as the answer")
}

func TestReaderStopsWhenFnFails(t *testing.T) {
	stop := errors.New("stop")
	r := newReader(slog.New(slog.DiscardHandler), nil, nil)
	assert.ErrorIs(t, r.line([]byte(delta("a")), func(upstream.Delta) error { return stop }), stop)
}

// chunked writes s in pieces of n bytes.
type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := min(c.n, len(c.s), len(p))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}

func TestReadLinesAnyBoundary(t *testing.T) {
	text := delta("héllo ✓") + "\n\n" + summary("x") + "\r\n" + resultOK // the last line has no newline
	want := []string{delta("héllo ✓"), "", summary("x"), resultOK}
	for n := 1; n <= 17; n++ {
		var got []string
		err := readLines(&chunked{text, n}, func(b []byte) error {
			got = append(got, strings.TrimSuffix(string(b), "\r"))
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, want, got, "chunks of %d bytes", n)
	}
}

func TestClassify(t *testing.T) {
	c := New(Options{Bin: "/nonexistent/agent", ModelsTTL: 1})
	for _, tc := range []struct {
		said   string
		status int
		code   string
		hint   string
	}{
		{"Error: Not logged in", http.StatusUnauthorized, "agent_not_logged_in", "CURSOR_API_KEY"},
		{"Authentication required. Please run 'agent login' first", http.StatusUnauthorized, "agent_not_logged_in", "agent login"},
		{"Invalid API key provided", http.StatusUnauthorized, "agent_not_logged_in", "CURSOR_API_KEY"},
		{"You've hit your usage limit", http.StatusTooManyRequests, "quota_exceeded", "usage limit"},
		{"Rate limit exceeded, slow down", http.StatusTooManyRequests, "quota_exceeded", "Rate limit"},
		{"Cannot use this model: foo", http.StatusBadRequest, "model_not_found", "agent models"},
		{"Error: model gpt-9 is not available", http.StatusBadRequest, "model_not_found", "gpt-9"},
		{"\x1b[31mpanic: boom\x1b[0m", http.StatusBadGateway, "agent_failed", "panic: boom"},
		{"", http.StatusBadGateway, "agent_failed", "(no message)"},
	} {
		e := c.classify(context.Background(), "gpt-9", tc.said)
		assert.Equal(t, tc.status, e.Status, tc.said)
		assert.Equal(t, tc.code, e.Code, tc.said)
		assert.Contains(t, e.Message, tc.hint, tc.said)
		assert.NotContains(t, e.Message, "\x1b", "no terminal escapes in messages")
		if tc.status == http.StatusTooManyRequests {
			assert.Positive(t, e.RetryAfter)
		}
	}
	assert.Equal(t, "author", stripANSI("author"))
	assert.Equal(t, http.StatusBadGateway, c.classify(context.Background(), "m", "the author of this file").Status, "\"auth\" inside a word is no login error")
}

func TestRenderPrompt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		turns []models.Turn
		want  string
	}{
		{"a lone user message as it is", []models.Turn{{Role: models.RoleUser, Text: "Hi <there>"}}, "Hi <there>"},
		{"roles tagged, in order", []models.Turn{
			{Role: models.RoleSystem, Text: "Be brief."},
			{Role: models.RoleUser, Text: "Q1"},
			{Role: models.RoleAssistant, Text: "A1"},
			{Role: models.RoleUser, Text: "Q2"},
		}, "<system>\nBe brief.\n</system>\n\n<user>\nQ1\n</user>\n\n<assistant>\nA1\n</assistant>\n\n<user>\nQ2\n</user>"},
		{"nothing", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, RenderPrompt(tc.turns))
		})
	}
}

func TestParseModels(t *testing.T) {
	out := "\x1b[1mAvailable models\x1b[0m\n\nauto - Auto\n  sonnet-4.5 - Claude 4.5 Sonnet (current)\nsonnet-4.5-thinking - Claude 4.5 Sonnet Thinking\n" +
		"> gpt-5 - GPT-5 (default)\nauto - Auto again\nLoading - \nTip: use --model <id>\n"
	assert.Equal(t, []string{"auto", "sonnet-4.5", "sonnet-4.5-thinking", "gpt-5"}, ParseModels(out))
	assert.Empty(t, ParseModels("No models available for this account.\n"))
}

func TestRestrict(t *testing.T) {
	ids := []string{"auto", "sonnet-4.5", "sonnet-4.5-thinking", "gpt-5"}
	assert.Equal(t, ids, Restrict(ids, nil))
	assert.Equal(t, []string{"sonnet-4.5", "sonnet-4.5-thinking"}, Restrict(ids, []string{"sonnet-4.5"}))
	assert.Equal(t, []string{"sonnet-4.5", "sonnet-4.5-thinking", "gpt-5"}, Restrict(ids, []string{"sonnet-4.5-thinking", " gpt-5"}))
	assert.Empty(t, Restrict(ids, []string{"claude-sonnet-4.6"}))
}

// Events with fields the reader does not read, and events of types and
// subtypes it does not know, are passed over; each unknown kind is noted
// once, never the event's content.
func TestReaderToleratesUnknownEvents(t *testing.T) {
	var logs bytes.Buffer
	drift := utils.NewDrift(slog.New(slog.NewTextHandler(&logs, nil)))
	r := newReader(slog.New(slog.DiscardHandler), nil, drift)
	var got []string
	fn := func(d upstream.Delta) error { got = append(got, d.Text); return nil }
	for _, l := range []string{
		`{"type":"system","subtype":"init","model":"x","new_field":{"a":1}}`,
		`{"type":"plan_update","plan":"secret plan"}`,
		`{"type":"plan_update","plan":"again"}`,
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hello"},{"type":"image","data":"…"}]},"session_id":"s","model_call_id":"m"}`,
		`{"type":"thinking","subtype":"redacted","text":"hidden"}`,
		`{"type":"result","subtype":"success","result":"hello","is_error":false,"duration_api_ms":5,"extra":[1,2]}`,
	} {
		require.NoError(t, r.line([]byte(l), fn))
	}
	require.NoError(t, r.flush(fn))
	assert.Equal(t, []string{"hello"}, got)
	assert.False(t, r.failed())
	assert.Equal(t, []utils.DriftNotice{
		{Component: "agent cli", Kind: `event type "plan_update"`, Count: 2},
		{Component: "agent cli", Kind: `thinking event subtype "redacted"`, Count: 1},
	}, drift.Notices())
	assert.Equal(t, 2, strings.Count(logs.String(), "upstream format drift"), logs.String())
	assert.NotContains(t, logs.String(), "secret plan")
}
