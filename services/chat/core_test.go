package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/upstream"
)

// fakeUpstream is a back door scripted per test: it streams deltas (text
// unless prefixed "reasoning:"), with TRIGGER replaced by the request's
// trigger, then reports usage or fails with err. It records what it was
// asked and how many deltas the core read.
type fakeUpstream struct {
	deltas []string
	usage  *models.Usage
	err    error

	requests []upstream.Request
	read     int
}

func (f *fakeUpstream) Stream(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error) (*models.Usage, error) {
	f.requests = append(f.requests, req)
	trigger := triggerInPrompt.FindString(req.Messages[0].Text)
	for _, d := range f.deltas {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f.read++
		delta := upstream.Delta{Kind: upstream.DeltaText, Text: strings.ReplaceAll(d, "TRIGGER", trigger)}
		if r, ok := strings.CutPrefix(d, "reasoning:"); ok {
			delta = upstream.Delta{Kind: upstream.DeltaReasoning, Text: r}
		}
		if err := fn(delta); err != nil {
			return nil, err
		}
	}
	return f.usage, f.err
}

func newCore(t testing.TB, up upstream.Upstream, settings Settings) *Service {
	t.Helper()
	catalog, err := models.NewCatalog([]string{"claude-sonnet-4.6"}, nil)
	require.NoError(t, err)
	settings.Catalog = catalog
	settings.MaxInputLength = 100000
	settings.MaxToolCallBytes = 1 << 20
	return New(settings, up, slog.New(slog.DiscardHandler))
}

func TestCoreAnswerStream(t *testing.T) {
	reported := &models.Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10}
	withTools := func(r *models.Request) { r.Tools = []models.Tool{{Name: "ls"}} }
	cases := []struct {
		name     string
		model    string
		edit     func(*models.Request)
		settings Settings
		deltas   []string
		usage    *models.Usage
		want     []string
		finish   string
		read     int // deltas the core read; 0: all
	}{
		{"text in order", "claude-sonnet-4.6", nil, Settings{},
			[]string{"Hel", "lo"}, reported, []string{"text:Hel", "text:lo"}, "finish:1:10", 0},
		{"usage estimated when none is reported", "claude-sonnet-4.6", nil, Settings{},
			[]string{"12345678"}, nil, []string{"text:12345678"}, "finish:1:4", 0}, // 8 characters out, 6 in: about 4 a token
		{"thinking model, thinking hidden", "claude-sonnet-4.6-thinking", nil, Settings{},
			[]string{"<thinking>plan</thinking>", "answer"}, reported, []string{"text:answer"}, "finish:1:10", 0},
		{"thinking model, EXPOSE_THINKING", "claude-sonnet-4.6-thinking", nil, Settings{ExposeThinking: true},
			[]string{"reasoning:native ", "<thinking>plan</thinking>", "answer"}, reported, []string{"reasoning:native ", "reasoning:plan", "text:answer"}, "finish:1:10", 0},
		{"thinking asked by the request and shown", "claude-sonnet-4.6", func(r *models.Request) { r.Thinking, r.ShowThinking = true, true }, Settings{},
			[]string{"<thinking>plan</thinking>answer"}, reported, []string{"reasoning:plan", "text:answer"}, "finish:1:10", 0},
		{"no thinking: tags are dropped, content is text", "claude-sonnet-4.6", nil, Settings{},
			[]string{"<thinking>plan</thinking>answer"}, reported, []string{"text:plananswer"}, "finish:1:10", 0},
		{"a call ends the turn and the upstream is no longer read", "claude-sonnet-4.6", withTools, Settings{},
			[]string{"TRIGGER<invoke name=\"ls\">{}</invoke>", "made-up result", "more"}, reported,
			// The arguments stream, their closer held until the call is whole;
			// the text after the call shows the block ended, and nothing
			// after it is read.
			[]string{"start:ls", "args:{", "args:}", "end"}, "finish:2:", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := &fakeUpstream{deltas: tc.deltas, usage: tc.usage}
			core := newCore(t, up, tc.settings)
			req := &models.Request{Model: tc.model, Messages: []models.Message{userText("say hi")}}
			if tc.edit != nil {
				tc.edit(req)
			}
			p, err := core.Prepare(req, "req_core")
			require.NoError(t, err)
			rec := &strictRecorder{}
			require.NoError(t, core.Stream(context.Background(), p, rec))
			assert.Equal(t, tc.want, rec.events)
			require.Len(t, rec.finish, 1)
			assert.True(t, strings.HasPrefix(rec.finish[0], tc.finish), "%s, want %s", rec.finish[0], tc.finish)
			if tc.read > 0 {
				assert.Equal(t, tc.read, up.read, "reading stopped at the call")
			}
			require.Len(t, up.requests, 1)
			assert.Equal(t, "anthropic/claude-sonnet-4.6", up.requests[0].Model, "the back door gets its own model id")
			assert.Equal(t, "req_core", up.requests[0].RequestID)
			thinking := strings.Contains(tc.model, "thinking") || (req.Thinking)
			assert.Equal(t, thinking, strings.Contains(up.requests[0].Messages[len(up.requests[0].Messages)-1].Text, "<thinking>"),
				"the thinking hint goes with thinking turns only")
		})
	}
}

// usageRecorder keeps the usage Finish gives.
type usageRecorder struct {
	strictRecorder
	usage models.Usage
}

func (r *usageRecorder) Finish(reason models.FinishReason, usage models.Usage) error {
	r.usage = usage
	return r.strictRecorder.Finish(reason, usage)
}

// TestUsageEstimate: the usage the client sees is the upstream's when it
// reports a total, and otherwise estimated at four bytes a token, the
// output from what the parser delivered (text, thinking of a thinking
// turn, each call's arguments once), the input from the turns sent.
func TestUsageEstimate(t *testing.T) {
	withTools := func(r *models.Request) { r.Tools = []models.Tool{{Name: "ls"}} }
	cases := []struct {
		name     string
		model    string
		edit     func(*models.Request)
		deltas   []string
		reported *models.Usage
		outBytes int // 0 with reported
	}{
		{"reported", "claude-sonnet-4.6", nil, []string{"Hello"}, &models.Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10}, 0},
		{"reported without a total is estimated", "claude-sonnet-4.6", nil, []string{"Hello"}, &models.Usage{InputTokens: 7}, len("Hello")},
		{"text, in bytes", "claude-sonnet-4.6", nil, []string{"1234", "5678é"}, nil, len("12345678é")},
		{"thinking counts", "claude-sonnet-4.6-thinking", nil, []string{"<thinking>plan</thinking>", "answer"}, nil, len("plan") + len("answer")},
		{"a call's arguments count once", "claude-sonnet-4.6", withTools,
			[]string{"TRIGGER<invoke name=\"ls\">", `{"path":`, ` "src"}`, "</invoke>"}, nil, len(`{"path": "src"}`)},
	}
	for _, tc := range cases {
		for _, whole := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, whole %v", tc.name, whole), func(t *testing.T) {
				up := &fakeUpstream{deltas: tc.deltas, usage: tc.reported}
				core := newCore(t, up, Settings{Strict: StrictOff})
				req := &models.Request{Model: tc.model, Messages: []models.Message{userText("say hi")}}
				if tc.edit != nil {
					tc.edit(req)
				}
				p, err := core.Prepare(req, "req_usage")
				require.NoError(t, err)
				var got models.Usage
				if whole {
					ans, err := core.Complete(context.Background(), p)
					require.NoError(t, err)
					got = ans.Usage
				} else {
					rec := &usageRecorder{}
					require.NoError(t, core.Stream(context.Background(), p, rec))
					got = rec.usage
				}
				if tc.reported != nil && tc.reported.TotalTokens > 0 {
					assert.Equal(t, *tc.reported, got)
					return
				}
				require.Len(t, up.requests, 1)
				sent := 0
				for _, m := range up.requests[0].Messages {
					sent += len(m.Text)
				}
				want := models.Usage{InputTokens: (sent + 3) / 4, OutputTokens: (tc.outBytes + 3) / 4}
				want.TotalTokens = want.InputTokens + want.OutputTokens
				assert.Equal(t, want, got)
				assert.Equal(t, want.InputTokens, p.EstimatedInputTokens(), "what a door states before the answer")
			})
		}
	}
}

func TestCoreErrors(t *testing.T) {
	upErr := models.Upstream(http.StatusBadGateway, "upstream_error", nil, "the upstream failed")
	up := &fakeUpstream{deltas: []string{"partial"}, err: upErr}
	core := newCore(t, up, Settings{})
	p, err := core.Prepare(&models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("hi")}}, "r")
	require.NoError(t, err)
	rec := &strictRecorder{}
	err = core.Stream(context.Background(), p, rec)
	assert.Same(t, upErr, err, "the back door's error reaches the door unchanged")
	assert.Empty(t, rec.finish, "no finish after a failure")

	// A door that can no longer write stops the upstream.
	up = &fakeUpstream{deltas: []string{"a", "b", "c"}}
	core = newCore(t, up, Settings{})
	p, err = core.Prepare(&models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("hi")}}, "r")
	require.NoError(t, err)
	gone := errors.New("client gone")
	err = core.Stream(context.Background(), p, failingSink{err: gone})
	assert.ErrorIs(t, err, gone)
	assert.Equal(t, 1, up.read, "nothing more is read once the door fails")

	// Prepare's errors name the field to fix.
	for _, tc := range []struct {
		req    models.Request
		status int
		param  string
	}{
		{models.Request{Messages: []models.Message{userText("hi")}}, 400, "model"},
		{models.Request{Model: "nope", Messages: []models.Message{userText("hi")}}, 404, "model"},
		{models.Request{Model: "claude-sonnet-4.6"}, 400, "messages"},
		{models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{{Role: models.RoleSystem}}}, 400, "messages"},
	} {
		_, err := core.Prepare(&tc.req, "r")
		var e *models.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, tc.status, e.Status, e.Message)
		assert.Equal(t, tc.param, e.Param, e.Message)
	}
}

// failingSink fails on its first write, as a door whose client left.
type failingSink struct{ err error }

func (f failingSink) Text(string) error                              { return f.err }
func (f failingSink) Reasoning(string) error                         { return f.err }
func (f failingSink) ToolCallStart(string, string) error             { return f.err }
func (f failingSink) ToolCallArguments(string) error                 { return f.err }
func (f failingSink) ToolCallEnd(bool) error                         { return f.err }
func (f failingSink) Finish(models.FinishReason, models.Usage) error { return f.err }

func TestCoreLoopGuardAnswersItself(t *testing.T) {
	up := &fakeUpstream{deltas: []string{"never"}}
	core := newCore(t, up, Settings{ToolLoopMaxRepeat: 1})
	msgs := []models.Message{userText("fix it")}
	for i := range 2 {
		id := fmt.Sprintf("c%d", i)
		msgs = append(msgs,
			models.Message{Role: models.RoleAssistant, Blocks: []models.Block{{Kind: models.BlockToolCall, ID: id, Name: "ls", Arguments: "{}"}}},
			models.Message{Role: models.RoleTool, ToolCallID: id, Blocks: []models.Block{{Kind: models.BlockText, Text: "same"}}})
	}
	p, err := core.Prepare(&models.Request{Model: "claude-sonnet-4.6", Messages: msgs, Tools: []models.Tool{{Name: "ls"}}}, "r")
	require.NoError(t, err)
	rec := &strictRecorder{}
	require.NoError(t, core.Stream(context.Background(), p, rec))
	require.Len(t, rec.events, 1)
	assert.Contains(t, rec.events[0], "Stopped a tool loop")
	assert.Len(t, rec.finish, 1)
	assert.Empty(t, up.requests, "the upstream is not asked")

	ans, err := core.Complete(context.Background(), p)
	require.NoError(t, err)
	assert.Contains(t, ans.Text, "Stopped a tool loop")
	assert.Equal(t, models.FinishStop, ans.Finish)
}

func TestKnownAgent(t *testing.T) {
	agents := []string{"roocode", "Kilo-Code", "cline"}
	for _, tc := range []struct {
		client models.Client
		want   string
	}{
		{models.Client{UserAgent: "RooCode/3.25.4"}, "roocode"},
		{models.Client{Title: "Roo Code"}, "roocode"},
		{models.Client{Referer: "https://kilocode.ai"}, "Kilo-Code"},
		{models.Client{UserAgent: "kilo_code/1"}, "Kilo-Code"},
		{models.Client{Referer: "https://github.com/RooVetGit/Roo-Cline"}, "cline"}, // Roo Code's old name
		{models.Client{UserAgent: "Cline/3.26"}, "cline"},
		{models.Client{UserAgent: "OpenAI/Go 3.9.0", Title: "my app"}, ""},
		{models.Client{}, ""},
	} {
		assert.Equal(t, tc.want, knownAgent(tc.client, agents), "%+v", tc.client)
	}
	assert.Empty(t, knownAgent(models.Client{UserAgent: "anything"}, []string{" - "}), "an empty pattern matches nothing")
}

// replayUpstream streams the same text deltas on every request.
type replayUpstream struct {
	deltas []string
	usage  *models.Usage
}

func (u replayUpstream) Stream(_ context.Context, _ upstream.Request, fn func(upstream.Delta) error) (*models.Usage, error) {
	for _, d := range u.deltas {
		if err := fn(upstream.Delta{Kind: upstream.DeltaText, Text: d}); err != nil {
			return nil, err
		}
	}
	return u.usage, nil
}

// discardSink takes an answer and keeps nothing.
type discardSink struct{}

func (discardSink) Text(string) error                              { return nil }
func (discardSink) Reasoning(string) error                         { return nil }
func (discardSink) ToolCallStart(string, string) error             { return nil }
func (discardSink) ToolCallArguments(string) error                 { return nil }
func (discardSink) ToolCallEnd(bool) error                         { return nil }
func (discardSink) Finish(models.FinishReason, models.Usage) error { return nil }

// BenchmarkStream1MB is the core's own cost of a 1 MB answer in 4,096
// deltas, no tools: the parser, the turn sink and the usage, reported by
// the upstream or estimated.
func BenchmarkStream1MB(b *testing.B) {
	deltas := make([]string, 4096)
	for i := range deltas {
		deltas[i] = strings.Repeat("abcdefgh", 32)
	}
	for _, reported := range []*models.Usage{{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}, nil} {
		b.Run(fmt.Sprintf("reported=%v", reported != nil), func(b *testing.B) {
			core := newCore(b, replayUpstream{deltas: deltas, usage: reported}, Settings{})
			p, err := core.Prepare(&models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("hi")}}, "r")
			require.NoError(b, err)
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			for b.Loop() {
				if err := core.Stream(context.Background(), p, discardSink{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
