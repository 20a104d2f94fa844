package chat

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/utils/toolproto"
)

// TestStreamedArguments follows a call's arguments from the upstream's
// deltas to the client's sink: streamed while the turn is out, whole while
// it is held, and never completed when they turn out invalid.
func TestStreamedArguments(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"dir":{"type":"string"}},"required":["dir"]}`)
	cases := []struct {
		name     string
		choice   string
		single   bool
		maxBytes int
		reply    []string
		want     []string
	}{
		{"pieces as they arrive", `"auto"`, false, 0,
			[]string{"Listing.", "TRIGGER\n<invoke name=\"ls\">{\"dir\": \"", "src/", "pkg\"", "}</invoke>"},
			[]string{"text:Listing.", "start:ls", `args:{"dir":"`, "args:src/", `args:pkg"`, "args:}", "end"}},
		{"against the schema: left incomplete, with a note", `"auto"`, false, 0,
			[]string{"TRIGGER<invoke name=\"ls\">{\"dir\": 5", "}</invoke>"},
			[]string{"start:ls", `args:{"dir":5`, "end:incomplete", "note:ls:do not match the parameters schema"}},
		{"cut off by the end of the stream", `"auto"`, false, 0,
			[]string{"TRIGGER<invoke name=\"ls\">{\"dir\":\"sr"},
			[]string{"start:ls", `args:{"dir":"sr`, "end:incomplete", "note:ls:" + toolproto.ReasonCutOff}},
		{"longer than MAX_TOOL_CALL_BYTES", `"auto"`, false, 40,
			[]string{"TRIGGER<invoke name=\"ls\">{\"dir\":\"", strings.Repeat("a", 30), strings.Repeat("b", 30), "\"}</invoke> after"},
			// The body's first 40 bytes stream, then the call is refused.
			[]string{"start:ls", `args:{"dir":"`, "args:" + strings.Repeat("a", 30), "args:bb", "end:incomplete", "note:ls:" + toolproto.ReasonTooLong, "text: after"}},
		{"a fenced body streams too", `"auto"`, false, 0,
			[]string{"TRIGGER<invoke name=\"ls\">```json\n{\"dir\":", "\"a\"}\n```</invoke>"},
			[]string{"start:ls", `args:{"dir":`, `args:"a"`, "args:}", "end"}},
		{"a <parameter> body is sent whole", `"auto"`, false, 0,
			[]string{"TRIGGER<invoke name=\"ls\"><parameter name=\"dir\">", "a</parameter></invoke>"},
			[]string{`call:ls:{"dir":"a"}`}},
		{"strict: the held call whole, the next streamed", `"required"`, false, 0,
			[]string{"TRIGGER<invoke name=\"ls\">{\"dir\":\"a\"}</invoke>\n<invoke name=\"ls\">{\"dir\":", "\"b\"}</invoke>"},
			[]string{`call:ls:{"dir":"a"}`, "start:ls", `args:{"dir":`, `args:"b"`, "args:}", "end"}},
		{"parallel_tool_calls false: only the first streams", `"auto"`, true, 0,
			[]string{"TRIGGER<invoke name=\"ls\">{\"dir\":\"a\"}</invoke>", "<invoke name=\"ls\">{\"dir\":", "\"b\"}</invoke>"},
			[]string{"start:ls", `args:{"dir":"a"`, "args:}", "end"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			catalog, err := models.NewCatalog([]string{"claude-sonnet-4.6"}, nil)
			require.NoError(t, err)
			up := &strictScript{replies: [][]string{tc.reply}}
			maxBytes := tc.maxBytes
			if maxBytes == 0 {
				maxBytes = 1 << 20
			}
			svc := New(Settings{Catalog: catalog, MaxInputLength: 100000, MaxToolCallBytes: maxBytes}, up, slog.New(slog.DiscardHandler))
			req := strictRequest(tc.choice)
			req.Tools[0].Parameters = schema
			if tc.single {
				req.SingleCall = true
			}
			p, err := svc.Prepare(req, "req_test")
			require.NoError(t, err)
			rec := &strictRecorder{}
			require.NoError(t, svc.Stream(context.Background(), p, rec))
			require.Len(t, up.requests, 1, "a streamed call is never asked again")

			// A note names the call and says why; the rest must match exactly.
			got := make([]string, len(rec.events))
			for i, e := range rec.events {
				got[i] = e
				if text, ok := strings.CutPrefix(e, "text:"); ok && strings.Contains(text, "must not be run") {
					got[i] = "note:?"
					for _, w := range tc.want {
						if rest, ok := strings.CutPrefix(w, "note:ls:"); ok && strings.Contains(text, "call of ls above is incomplete") && strings.Contains(text, rest) {
							got[i] = w
						}
					}
				}
			}
			assert.Equal(t, tc.want, got, "raw events: %q", rec.events)
		})
	}
}

func TestCompleteNeverStreamsArguments(t *testing.T) {
	catalog, err := models.NewCatalog([]string{"claude-sonnet-4.6"}, nil)
	require.NoError(t, err)
	up := &strictScript{replies: [][]string{{"TRIGGER<invoke name=\"ls\">{\"dir\":", "\"b\"}</invoke>"}}}
	svc := New(Settings{Catalog: catalog, MaxInputLength: 100000, MaxToolCallBytes: 1 << 20}, up, slog.New(slog.DiscardHandler))
	p, err := svc.Prepare(strictRequest(`"auto"`), "req_test")
	require.NoError(t, err)
	ans, err := svc.Complete(context.Background(), p)
	require.NoError(t, err)
	require.Len(t, ans.ToolCalls, 1)
	assert.Equal(t, `{"dir":"b"}`, ans.ToolCalls[0].Arguments)
	assert.Equal(t, 15, ans.Usage.TotalTokens)
}
