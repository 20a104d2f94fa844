package webchat

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/cursortest"
	"cursor2api/services/upstream"
)

// streamDeltas runs one reply through the client and returns what it
// delivers, runs of text joined.
func streamDeltas(t *testing.T, reply cursortest.Response) ([]upstream.Delta, *models.Usage) {
	t.Helper()
	up := cursortest.NewServer(t, cursortest.Always(reply))
	c := testClient(up)
	var got []upstream.Delta
	usage, err := c.Stream(context.Background(), hiRequest, func(d upstream.Delta) error {
		// Deltas of a kind merge as they happen to arrive together: join
		// them, so that only the order of text and calls is compared.
		if n := len(got); n > 0 && d.Kind != upstream.DeltaToolCall && got[n-1].Kind == d.Kind {
			got[n-1].Text += d.Text
			return nil
		}
		got = append(got, d)
		return nil
	})
	require.NoError(t, err)
	return got, usage
}

func testClient(up *cursortest.Server) *Client {
	return &Client{HTTP: up.Client(), URL: up.URL, IdleTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)}
}

func call(id, name, args string) upstream.Delta {
	return upstream.Delta{Kind: upstream.DeltaToolCall, Call: models.ToolCall{ID: id, Name: name, Arguments: args}}
}

func text(s string) upstream.Delta { return upstream.Delta{Kind: upstream.DeltaText, Text: s} }

// framed wraps data payloads in a reply's start and finish.
func framed(reason string, data ...string) cursortest.Response {
	ev := append([]string{`{"type":"start"}`, `{"type":"start-step"}`}, data...)
	return cursortest.Response{Events: append(ev, `{"type":"finish-step"}`, cursortest.Finish(reason, nil), "[DONE]")}
}

func TestToolFrames(t *testing.T) {
	readFile := `{"path":"src/main.go"}`
	cases := []struct {
		name  string
		reply cursortest.Response
		want  []upstream.Delta
	}{
		{"input whole, the server's own tool",
			cursortest.ToolCalls(nil, cursortest.NativeCall{ID: "call_1", Name: "read_file", Input: readFile, How: cursortest.InputWhole}),
			[]upstream.Delta{call("call_1", "read_file", readFile)}},
		{"input as deltas",
			cursortest.ToolCalls(nil, cursortest.NativeCall{ID: "call_2", Name: "read_file", Input: readFile, How: cursortest.InputDeltas}),
			[]upstream.Delta{call("call_2", "read_file", readFile)}},
		{"a tool the server lacks: tool-input-error",
			cursortest.ToolCalls(nil, cursortest.NativeCall{ID: "call_3", Name: "write_to_file", Input: `{"path":"a.txt","content":"hi <b>&</b>"}`, How: cursortest.InputError}),
			[]upstream.Delta{call("call_3", "write_to_file", `{"path":"a.txt","content":"hi <b>&</b>"}`)}},
		{"input the server could not parse comes as the model wrote it",
			cursortest.ToolCalls(nil, cursortest.NativeCall{ID: "call_4", Name: "write_to_file", Input: `{"path": "a.txt", "content": "cut`, How: cursortest.InputError}),
			[]upstream.Delta{call("call_4", "write_to_file", `{"path": "a.txt", "content": "cut`)}},
		{"deltas never completed: the pieces at the finish",
			cursortest.ToolCalls(nil, cursortest.NativeCall{ID: "call_5", Name: "list_files", Input: `{"path": "."}`, How: cursortest.InputDeltasOnly}),
			[]upstream.Delta{call("call_5", "list_files", `{"path":"."}`)}},
		{"input with white space is compacted",
			cursortest.ToolCalls(nil, cursortest.NativeCall{ID: "call_6", Name: "read_dir", Input: "{\n  \"path\": \"docs\"\n}", How: cursortest.InputWhole}),
			[]upstream.Delta{call("call_6", "read_dir", `{"path":"docs"}`)}},
		{"no input at all is an empty object",
			framed("tool-calls", `{"type":"tool-input-start","toolCallId":"c7","toolName":"list_files"}`,
				`{"type":"tool-input-available","toolCallId":"c7","toolName":"list_files"}`),
			[]upstream.Delta{call("c7", "list_files", `{}`)}},
		{"two calls, in order",
			cursortest.ToolCalls(nil,
				cursortest.NativeCall{ID: "a", Name: "read_file", Input: `{"path":"a"}`, How: cursortest.InputDeltas},
				cursortest.NativeCall{ID: "b", Name: "read_file", Input: `{"path":"b"}`, How: cursortest.InputError}),
			[]upstream.Delta{call("a", "read_file", `{"path":"a"}`), call("b", "read_file", `{"path":"b"}`)}},
		{"interleaved with text",
			framed("tool-calls",
				`{"type":"text-start","id":"t0"}`, `{"type":"text-delta","id":"t0","delta":"Let me "}`, `{"type":"text-delta","id":"t0","delta":"look."}`,
				`{"type":"tool-input-start","toolCallId":"c1","toolName":"read_file"}`,
				`{"type":"text-delta","id":"t0","delta":" Still here."}`,
				`{"type":"tool-input-delta","toolCallId":"c1","inputTextDelta":"{\"path\":"}`,
				`{"type":"tool-input-delta","toolCallId":"c1","inputTextDelta":"\"x\"}"}`,
				`{"type":"tool-input-available","toolCallId":"c1","toolName":"read_file","input":{"path":"x"}}`,
				`{"type":"tool-output-available","toolCallId":"c1","output":"..."}`,
				`{"type":"text-delta","id":"t0","delta":"Done."}`),
			[]upstream.Delta{text("Let me look. Still here."), call("c1", "read_file", `{"path":"x"}`), text("Done.")}},
		{"a call closed twice is one call",
			framed("tool-calls",
				`{"type":"tool-input-start","toolCallId":"c1","toolName":"edit"}`,
				`{"type":"tool-input-error","toolCallId":"c1","toolName":"edit","input":{"a":1},"errorText":"no such tool"}`,
				`{"type":"tool-input-available","toolCallId":"c1","toolName":"edit","input":{"a":2}}`),
			[]upstream.Delta{call("c1", "edit", `{"a":1}`)}},
		{"a call of no tool is dropped",
			framed("tool-calls", `{"type":"tool-input-delta","toolCallId":"zz","inputTextDelta":"{}"}`),
			nil},
		{"an empty tool-calls finish carries nothing", cursortest.EmptyToolCalls(), nil},
		{"unknown frames are ignored",
			framed("stop", `{"type":"source-url","sourceId":"s","url":"https://cursor.com/docs"}`, `{"type":"data-x","data":{}}`,
				`{"type":"text-delta","id":"t0","delta":"ok"}`),
			[]upstream.Delta{text("ok")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := streamDeltas(t, tc.reply)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestToolCallWithoutID(t *testing.T) {
	got, _ := streamDeltas(t, framed("tool-calls", `{"type":"tool-input-available","toolName":"read_file","input":{"path":"a"}}`))
	require.Len(t, got, 1)
	assert.Equal(t, "read_file", got[0].Call.Name)
	assert.True(t, strings.HasPrefix(got[0].Call.ID, "call_") && len(got[0].Call.ID) > len("call_"), "an id of our own: %q", got[0].Call.ID)
	assert.Equal(t, `{"path":"a"}`, got[0].Call.Arguments)
}

func TestFinishReasons(t *testing.T) {
	for _, tc := range []struct {
		frame, want string
	}{
		{cursortest.Finish("tool-calls", nil), "tool-calls"},
		{cursortest.Finish("length", &cursortest.Usage{Input: 1, Output: 2}), "length"},
		{`{"type":"finish","messageMetadata":{"finishReason":"length"}}`, "length"},
		{`{"type":"finish"}`, ""},
	} {
		c := streamOf(t, nil, "data: "+tc.frame+"\n\n")
		_, reason, err := c.attempt(context.Background(), hiRequest, func(upstream.Delta) error { return nil }, true)
		require.NoError(t, err)
		assert.Equal(t, tc.want, reason, tc.frame)
	}
}
