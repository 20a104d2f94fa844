package chat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/upstream"
)

// TestMaxOutputTokens bounds answers at the request's MaxOutputTokens,
// four bytes a token as the usage estimate counts them: text and reasoning
// are cut there (never inside a UTF-8 sequence, never inside a call), the
// upstream is no longer read, and the answer ends with FinishLength.
func TestMaxOutputTokens(t *testing.T) {
	withTools := func(r *models.Request) { r.Tools = []models.Tool{{Name: "ls"}} }
	cases := []struct {
		name      string
		model     string
		max       int
		edit      func(*models.Request)
		settings  Settings
		deltas    []string
		text      string
		reasoning string // shown
		call      string // name and arguments of the one call
		finish    models.FinishReason
		read      int // deltas the core read; 0: all
	}{
		{"under the bound", "claude-sonnet-4.6", 100, nil, Settings{},
			[]string{"Hello ", "world"}, "Hello world", "", "", models.FinishStop, 0},
		{"exactly at the bound", "claude-sonnet-4.6", 2, nil, Settings{},
			[]string{"1234", "5678"}, "12345678", "", "", models.FinishStop, 0},
		{"cut inside a delta, the rest unread", "claude-sonnet-4.6", 2, nil, Settings{},
			[]string{"12345", "67890", "never read", "nor this"}, "12345678", "", "", models.FinishLength, 2},
		{"cut before a multi-byte character", "claude-sonnet-4.6", 1, nil, Settings{},
			[]string{"ab€c"}, "ab", "", "", models.FinishLength, 0},
		{"no bound", "claude-sonnet-4.6", 0, nil, Settings{},
			[]string{strings.Repeat("x", 5000)}, strings.Repeat("x", 5000), "", "", models.FinishStop, 0},
		{"reasoning counts", "claude-sonnet-4.6-thinking", 2, nil, Settings{ExposeThinking: true},
			[]string{"reasoning:123456", "answer"}, "an", "123456", "", models.FinishLength, 0},
		{"hidden reasoning counts too", "claude-sonnet-4.6-thinking", 2, nil, Settings{},
			[]string{"reasoning:123456", "answer"}, "an", "", "", models.FinishLength, 0},
		{"a call is never cut", "claude-sonnet-4.6", 1, withTools, Settings{},
			[]string{"TRIGGER<invoke name=\"ls\">{\"dir\":\"/a/long/directory/name\"}</invoke>"},
			"", "", `ls{"dir":"/a/long/directory/name"}`, models.FinishToolCalls, 0},
		{"a held strict turn cut is sent, not asked again", "claude-sonnet-4.6", 2, withTools, Settings{Strict: StrictOn},
			[]string{"I will not call any tool."}, "I will n", "", "", models.FinishLength, 0},
	}
	for _, tc := range cases {
		for _, whole := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/whole=%v", tc.name, whole), func(t *testing.T) {
				up := &fakeUpstream{deltas: tc.deltas}
				core := newCore(t, up, tc.settings)
				req := &models.Request{Model: tc.model, Messages: []models.Message{userText("say hi")}, MaxOutputTokens: tc.max}
				if tc.edit != nil {
					tc.edit(req)
				}
				p, err := core.Prepare(req, "req_max")
				require.NoError(t, err)
				got := &answerRecorder{}
				if whole {
					ans, err := core.Complete(context.Background(), p)
					require.NoError(t, err)
					got.text.WriteString(ans.Text)
					got.thinking.WriteString(ans.Thinking)
					got.calls = ans.ToolCalls
					got.finish, got.usage = ans.Finish, ans.Usage
				} else {
					require.NoError(t, core.Stream(context.Background(), p, got))
				}
				assert.Equal(t, tc.text, got.text.String())
				assert.Equal(t, tc.reasoning, got.thinking.String())
				var calls []string
				for _, c := range got.calls {
					calls = append(calls, c.Name+c.Arguments)
				}
				if tc.call != "" {
					assert.Equal(t, []string{tc.call}, calls)
				} else {
					assert.Empty(t, calls)
				}
				assert.Zero(t, got.incomplete, "no call is left incomplete")
				assert.Equal(t, tc.finish, got.finish)
				if tc.read > 0 {
					assert.Equal(t, tc.read, up.read, "reading stopped at the bound")
				}
				assert.Len(t, up.requests, 1, "never asked again")
				if tc.finish == models.FinishLength {
					assert.LessOrEqual(t, got.usage.OutputTokens, tc.max, "the usage estimate agrees with the bound")
				}
			})
		}
	}
}

// answerRecorder is the answer Complete collects (answerSink), with the
// calls left incomplete and the finish, as a streamed answer ends.
type answerRecorder struct {
	answerSink
	incomplete int
	finish     models.FinishReason
	usage      models.Usage
}

func (r *answerRecorder) ToolCallEnd(complete bool) error {
	if !complete {
		r.incomplete++
	}
	return nil
}

func (r *answerRecorder) Finish(reason models.FinishReason, usage models.Usage) error {
	r.finish, r.usage = reason, usage
	return nil
}

// endlessUpstream streams text until the request ends, as an upstream
// that never finishes its answer does.
type endlessUpstream struct{ sent int }

func (e *endlessUpstream) Stream(ctx context.Context, _ upstream.Request, fn func(upstream.Delta) error) (*models.Usage, error) {
	chunk := strings.Repeat("x", 1000)
	for ctx.Err() == nil {
		if err := fn(upstream.Delta{Kind: upstream.DeltaText, Text: chunk}); err != nil {
			return nil, err
		}
		e.sent += len(chunk)
	}
	return nil, ctx.Err()
}

// TestMaxAnswerBytes: an upstream that never ends its answer is cut at
// MaxAnswerBytes, whole or streamed, held or not, as an answer the
// upstream cut at its own cap (FinishLength), and no longer read.
func TestMaxAnswerBytes(t *testing.T) {
	const limit = 64 << 10
	for _, tc := range []struct {
		name  string
		whole bool
		tools bool
	}{{"whole", true, false}, {"streamed", false, false}, {"streamed, held for a required call", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			up := &endlessUpstream{}
			core := newCore(t, up, Settings{MaxAnswerBytes: limit, Strict: StrictOn})
			req := &models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("say hi")}}
			if tc.tools {
				req.Tools = []models.Tool{{Name: "ls"}}
			}
			p, err := core.Prepare(req, "req_cap")
			require.NoError(t, err)
			// Without the cap the answer grows until the client leaves:
			// this deadline stands for the client and fails the test.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got := &answerRecorder{}
			if tc.whole {
				ans, err := core.Complete(ctx, p)
				require.NoError(t, err)
				got.text.WriteString(ans.Text)
				got.finish = ans.Finish
			} else {
				require.NoError(t, core.Stream(ctx, p, got))
			}
			assert.Equal(t, limit, got.text.Len(), "the answer stops at the cap")
			assert.Equal(t, models.FinishLength, got.finish)
			assert.Less(t, up.sent, 2*limit, "the upstream is no longer read")
		})
	}
}
