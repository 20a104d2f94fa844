package chat

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func TestStopScanner(t *testing.T) {
	cases := []struct {
		name   string
		stops  []string
		pieces []string
		out    string
		found  string
	}{
		{"none", nil, []string{"a", "b"}, "ab", ""},
		{"whole", []string{"STOP"}, []string{"abSTOPcd"}, "ab", "STOP"},
		{"split", []string{"STOP"}, []string{"abS", "T", "OPcd", "ef"}, "ab", "STOP"},
		{"false start", []string{"STOP"}, []string{"abST", "x STO", "P"}, "abSTx ", "STOP"},
		{"held then flushed", []string{"STOP"}, []string{"abST"}, "abST", ""},
		{"earliest wins", []string{"cd", "b"}, []string{"abcd"}, "a", "b"},
		{"unicode", []string{"✓"}, []string{"ok ✓ done"}, "ok ", "✓"},
		{"empty ignored", []string{""}, []string{"ab"}, "ab", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStopScanner(tc.stops)
			var out strings.Builder
			for _, p := range tc.pieces {
				out.WriteString(s.feed(p))
			}
			out.WriteString(s.flush())
			assert.Equal(t, tc.out, out.String())
			assert.Equal(t, tc.found, s.found)
			whole, found := cutAtStop(strings.Join(tc.pieces, ""), tc.stops)
			assert.Equal(t, tc.out, whole, "cutAtStop agrees")
			assert.Equal(t, tc.found, found)
		})
	}
}

// stopRecorder is a door's sink that takes the stop sequence met.
type stopRecorder struct {
	answerRecorder
	seq string
}

func (r *stopRecorder) StopSequence(seq string) { r.seq = seq }

// TestStopSequences: the core cuts the answer's text at the first stop
// sequence, split across deltas or not, drops everything after it (text,
// reasoning, calls) and reports the sequence; a call before it still goes
// out.
func TestStopSequences(t *testing.T) {
	withTools := func(r *models.Request) { r.Tools = []models.Tool{{Name: "ls"}} }
	cases := []struct {
		name   string
		stops  []string
		edit   func(*models.Request)
		deltas []string
		text   string
		call   string
		finish models.FinishReason
		seq    string
	}{
		{"none met", []string{"ZZZ"}, nil, []string{"one, ZZ", "? no: ZZz"}, "one, ZZ? no: ZZz", "", models.FinishStop, ""},
		{"split across deltas", []string{"END", "never"}, nil,
			[]string{"one, two, E", "ND three", "four", "five"}, "one, two,", "", models.FinishStopSequence, "END"},
		{"the earliest of several", []string{"c", "b"}, nil, []string{"abc"}, "a", "", models.FinishStopSequence, "b"},
		{"a held prefix goes out at the end", []string{"STOP"}, nil, []string{"ab", "ST"}, "abST", "", models.FinishStop, ""},
		{"reasoning after the stop is dropped", []string{"X"}, nil, []string{"aXb", "reasoning:late"}, "a", "", models.FinishStopSequence, "X"},
		{"a call before the stop goes out", []string{"STOP"}, withTools,
			[]string{"ok\nTRIGGER<invoke name=\"ls\">{}</invoke>"}, "ok", `ls{}`, models.FinishToolCalls, ""},
	}
	for _, tc := range cases {
		for _, whole := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/whole=%v", tc.name, whole), func(t *testing.T) {
				up := &fakeUpstream{deltas: tc.deltas}
				core := newCore(t, up, Settings{ExposeThinking: true})
				req := &models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("count")}, StopSequences: tc.stops}
				if tc.edit != nil {
					tc.edit(req)
				}
				p, err := core.Prepare(req, "req_stop")
				require.NoError(t, err)
				got := &stopRecorder{}
				if whole {
					ans, err := core.Complete(context.Background(), p)
					require.NoError(t, err)
					got.text.WriteString(ans.Text)
					got.thinking.WriteString(ans.Thinking)
					got.calls, got.finish, got.seq = ans.ToolCalls, ans.Finish, ans.StopSequence
				} else {
					require.NoError(t, core.Stream(context.Background(), p, got))
				}
				assert.Equal(t, tc.text, strings.TrimSpace(got.text.String()))
				assert.Empty(t, got.thinking.String())
				var calls []string
				for _, c := range got.calls {
					calls = append(calls, c.Name+c.Arguments)
				}
				if tc.call != "" {
					assert.Equal(t, []string{tc.call}, calls)
				} else {
					assert.Empty(t, calls)
				}
				assert.Equal(t, tc.finish, got.finish)
				assert.Equal(t, tc.seq, got.seq)
				assert.Len(t, up.requests, 1, "never asked again")
			})
		}
	}
}
