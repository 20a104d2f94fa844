package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

// TestCallsAreCheckedWholeBeforeTheyStream runs replies with good, broken,
// coercible and native calls through the core, whole and byte by byte,
// streamed and not, strict and not, and checks what reaches the client:
// a complete call is always valid against its schema (coerced where that
// is safe), a broken one is never complete, and the finish reason says
// tool_calls exactly when a complete call was sent.
func TestCallsAreCheckedWholeBeforeTheyStream(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"dir":{"type":"string"},"depth":{"type":"integer"}},"required":["dir"]}`)
	cases := []struct {
		name    string
		reply   string
		retry   string // the second turn, when the first is asked again
		want    string // the arguments of the one complete call, "" for none
		retried bool   // asked again (when nothing of the turn was out)
	}{
		{"valid", "TRIGGER<invoke name=\"ls\">{\"dir\":\"src\"}</invoke>", "", `{"dir":"src"}`, false},
		{"coerced", "TRIGGER<invoke name=\"ls\">{\"dir\":\"src\",\"depth\":\"2\"}</invoke>", "", `{"depth":2,"dir":"src"}`, false},
		{"unquoted value", "TRIGGER<invoke name=\"ls\">{\"dir\": src}</invoke>", "TRIGGER<invoke name=\"ls\">{\"dir\":\"b\"}</invoke>", `{"dir":"b"}`, true},
		{"against the schema", "TRIGGER<invoke name=\"ls\">{\"depth\":1}</invoke>", "TRIGGER<invoke name=\"ls\">{\"dir\":\"c\"}</invoke>", `{"dir":"c"}`, true},
		{"cut off", "TRIGGER<invoke name=\"ls\">{\"dir\":\"sr", "TRIGGER<invoke name=\"ls\">{\"dir\":\"d\"}</invoke>", `{"dir":"d"}`, true},
		{"broken twice", "TRIGGER<invoke name=\"ls\">{\"dir\": src}</invoke>", "TRIGGER<invoke name=\"ls\">{dir}</invoke>", "", true},
		{"native format", "<function_calls>\n<invoke name=\"ls\">\n<parameter name=\"dir\">e</parameter>\n<parameter name=\"depth\">3</parameter>\n</invoke>\n</function_calls>", "", `{"depth":3,"dir":"e"}`, false},
		{"large and broken", "TRIGGER<invoke name=\"ls\">{\"dir\":\"" + strings.Repeat("x", 100) + "\",\"depth\":\"deep\"}</invoke>", "TRIGGER<invoke name=\"ls\">{\"dir\":\"f\"}</invoke>", "", false},
	}
	for _, tc := range cases {
		for _, strict := range []StrictMode{StrictOff, StrictOn} {
			for _, stream := range []bool{true, false} {
				for _, bytewise := range []bool{false, true} {
					name := fmt.Sprintf("%s/strict=%v/stream=%v/bytewise=%v", tc.name, strict == StrictOn, stream, bytewise)
					t.Run(name, func(t *testing.T) {
						replies := [][]string{{tc.reply}}
						if tc.retry != "" {
							replies = append(replies, []string{tc.retry})
						}
						up := &strictScript{replies: replies, bytewise: bytewise}
						core := newCore(t, up, Settings{Strict: strict, StreamArgsAfter: 64})
						req := strictRequest(`"auto"`)
						req.Tools[0].Parameters = schema
						p, err := core.Prepare(req, "req_hold")
						require.NoError(t, err)

						var complete []string
						finish := models.FinishStop
						if stream {
							rec := &strictRecorder{}
							require.NoError(t, core.Stream(context.Background(), p, rec))
							for _, e := range rec.events {
								if args, ok := strings.CutPrefix(e, "call:ls:"); ok {
									complete = append(complete, args)
								}
								if e == "end" {
									t.Fatalf("only the large call may stream, and it is broken: %q", rec.events)
								}
								if e == "end:incomplete" {
									assert.Equal(t, "large and broken", tc.name, "only a call past STREAM_ARGS_AFTER is ever left incomplete")
								}
							}
							require.Len(t, rec.finish, 1)
							_, err := fmt.Sscanf(rec.finish[0], "finish:%d:", &finish)
							require.NoError(t, err)
						} else {
							ans, err := core.Complete(context.Background(), p)
							require.NoError(t, err)
							for _, c := range ans.ToolCalls {
								complete = append(complete, c.Arguments)
							}
							finish = ans.Finish
						}
						// A held turn (strict, or not streamed) reads even a large
						// call whole, so it is asked again like a small one.
						held := strict == StrictOn || !stream
						want := tc.want
						if tc.name == "large and broken" && held {
							want = `{"dir":"f"}`
						}
						if want == "" {
							assert.Empty(t, complete, "a broken call never reaches the client complete")
							assert.Equal(t, models.FinishStop, finish)
						} else {
							require.Len(t, complete, 1)
							assert.JSONEq(t, want, complete[0])
							assert.True(t, json.Valid([]byte(complete[0])))
							assert.Equal(t, models.FinishToolCalls, finish)
						}
						// A held reply (strict, or not streamed) can always be
						// asked again; a live one only while nothing was sent.
						wantRequests := 1
						if tc.retried || (tc.name == "large and broken" && held) {
							wantRequests = 2
						}
						assert.Len(t, up.requests, wantRequests)
					})
				}
			}
		}
	}
}
