package chat

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/upstream"
)

// strictScript is an Upstream that answers the n-th request with
// replies[n], after replacing TRIGGER with the request's trigger.
type strictScript struct {
	mu       sync.Mutex
	replies  [][]string
	requests [][]models.Turn
	// bytewise sends each delta, trigger in place, one byte at a time.
	bytewise bool
}

var triggerInPrompt = regexp.MustCompile(`<<CALL_[A-Za-z0-9]{8}>>`)

func (u *strictScript) Stream(_ context.Context, req upstream.Request, fn func(upstream.Delta) error) (*models.Usage, error) {
	u.mu.Lock()
	n := len(u.requests)
	u.requests = append(u.requests, req.Messages)
	u.mu.Unlock()
	trigger := triggerInPrompt.FindString(req.Messages[0].Text)
	for _, d := range u.replies[min(n, len(u.replies)-1)] {
		pieces := []string{strings.ReplaceAll(d, "TRIGGER", trigger)}
		if u.bytewise {
			pieces = strings.Split(pieces[0], "")
		}
		for _, piece := range pieces {
			if err := fn(upstream.Delta{Kind: upstream.DeltaText, Text: piece}); err != nil {
				return nil, err
			}
		}
	}
	return &models.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}, nil
}

// strictRecorder is a Sink that logs what reaches the client, in order.
// A call whose arguments came in one piece is logged as "call:name:args";
// a streamed one as "start:name", its "args:" pieces, and "end" or
// "end:incomplete". Finish is kept apart.
type strictRecorder struct {
	events []string
	open   []string // the open call's events, until it ends
	finish []string
}

func (r *strictRecorder) add(e string) error {
	if r.open != nil {
		r.open = append(r.open, e)
	} else {
		r.events = append(r.events, e)
	}
	return nil
}
func (r *strictRecorder) Text(s string) error      { return r.add("text:" + s) }
func (r *strictRecorder) Reasoning(s string) error { return r.add("reasoning:" + s) }
func (r *strictRecorder) ToolCallStart(id, name string) error {
	if r.open != nil {
		panic("a call starts inside another")
	}
	if !strings.HasPrefix(id, "call_") {
		panic("bad call id " + id)
	}
	r.open = []string{"start:" + name}
	return nil
}
func (r *strictRecorder) ToolCallArguments(fragment string) error {
	if r.open == nil {
		panic("arguments outside a call")
	}
	return r.add("args:" + fragment)
}
func (r *strictRecorder) ToolCallEnd(complete bool) error {
	call := r.open
	r.open = nil
	if complete && len(call) == 2 {
		name := strings.TrimPrefix(call[0], "start:")
		r.events = append(r.events, fmt.Sprintf("call:%s:%s", name, strings.TrimPrefix(call[1], "args:")))
		return nil
	}
	r.events = append(r.events, call...)
	if complete {
		r.events = append(r.events, "end")
	} else {
		r.events = append(r.events, "end:incomplete")
	}
	return nil
}
func (r *strictRecorder) Finish(reason models.FinishReason, usage models.Usage) error {
	if r.open != nil {
		panic("finish inside a call")
	}
	r.finish = append(r.finish, fmt.Sprintf("finish:%d:%d", reason, usage.TotalTokens))
	return nil
}

func strictRequest(choice string) *models.Request {
	mode := map[string]models.ToolChoiceMode{`"auto"`: models.ChoiceAuto, `"required"`: models.ChoiceRequired, `"none"`: models.ChoiceNone}[choice]
	return &models.Request{
		Model:    "claude-sonnet-4.6",
		Messages: []models.Message{userText("list files")},
		Tools:    []models.Tool{{Name: "ls", Parameters: []byte(`{"type":"object"}`)}},
		Choice:   models.ToolChoice{Mode: mode},
	}
}

// userText is a user message of plain text.
func userText(s string) models.Message {
	return models.Message{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockText, Text: s}}}
}

func TestStreamStrictMode(t *testing.T) {
	const call = "TRIGGER\n<invoke name=\"ls\">{\"dir\":\".\"}</invoke>"
	cases := []struct {
		name     string
		choice   string
		kilo     bool
		replies  [][]string
		want     []string
		requests int
	}{
		{"call at once: text released with the call", `"required"`, false,
			[][]string{{"Let me look.", "\n", call}},
			[]string{"text:Let me look.", "text:\n", `call:ls:{"dir":"."}`}, 1},
		{"no call: first turn discarded, retried", `"required"`, false,
			[][]string{{"I cannot run tools."}, {"Sure. ", call}},
			[]string{"text:Sure. ", `call:ls:{"dir":"."}`}, 2},
		{"no call twice: second turn sent as text", `"required"`, false,
			[][]string{{"first"}, {"second"}},
			[]string{"text:second"}, 2},
		{"KILO_TOOL_STRICT with auto", `"auto"`, true,
			[][]string{{"nope"}, {call}},
			[]string{`call:ls:{"dir":"."}`}, 2},
		{"not required: text streams at once, no retry", `"auto"`, false,
			[][]string{{"a", "b"}},
			[]string{"text:a", "text:b"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			catalog, err := models.NewCatalog([]string{"claude-sonnet-4.6"}, nil)
			require.NoError(t, err)
			up := &strictScript{replies: tc.replies}
			svc := New(Settings{Catalog: catalog, MaxInputLength: 100000, MaxToolCallBytes: 1 << 20, Strict: map[bool]StrictMode{true: StrictOn, false: StrictOff}[tc.kilo]},
				up, slog.New(slog.DiscardHandler))
			p, err := svc.Prepare(strictRequest(tc.choice), "req_test")
			require.NoError(t, err)
			rec := &strictRecorder{}
			require.NoError(t, svc.Stream(context.Background(), p, rec))
			assert.Equal(t, tc.want, rec.events)
			require.Len(t, up.requests, tc.requests)
			reason := models.FinishStop
			if strings.HasPrefix(tc.want[len(tc.want)-1], "call:") {
				reason = models.FinishToolCalls
			}
			assert.Equal(t, []string{fmt.Sprintf("finish:%d:%d", reason, 15*tc.requests)}, rec.finish, "one finish; usage covers every upstream turn")
			if tc.requests == 2 {
				last := up.requests[1][len(up.requests[1])-1]
				assert.Contains(t, last.Text, "MUST call a function", "the retry carries the reminder")
			}
		})
	}
}

func TestCorrectiveRetry(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"dir":{"type":"string"},"depth":{"type":"integer"}},"required":["dir"]}`)
	newSvc := func(replies [][]string) (*Service, *strictScript) {
		catalog, err := models.NewCatalog([]string{"claude-sonnet-4.6"}, nil)
		require.NoError(t, err)
		up := &strictScript{replies: replies}
		return New(Settings{Catalog: catalog, MaxInputLength: 100000, MaxToolCallBytes: 1 << 20}, up, slog.New(slog.DiscardHandler)), up
	}
	req := func(stream bool) *models.Request {
		r := strictRequest(`"required"`)
		r.Tools[0].Parameters = schema
		r.Stream = stream
		return r
	}
	const good = "TRIGGER<invoke name=\"ls\">{\"dir\":\"src\",\"depth\":\"2\"}</invoke>"
	cases := []struct {
		name     string
		replies  [][]string
		note     string // in the retry's last user message
		wantCall string // arguments of the final call, "" for none
		wantText string // in the final text
	}{
		{"schema violation", [][]string{{"TRIGGER<invoke name=\"ls\">{\"depth\":1}</invoke>"}, {good}}, "missing property 'dir'", `{"depth":2,"dir":"src"}`, ""},
		{"unknown tool", [][]string{{"TRIGGER<invoke name=\"rm\">{}</invoke>"}, {good}}, `"rm" was not run: unknown tool`, `{"depth":2,"dir":"src"}`, ""},
		{"broken JSON", [][]string{{"TRIGGER<invoke name=\"ls\">{dir: src}</invoke>"}, {good}}, "not a JSON object", `{"depth":2,"dir":"src"}`, ""},
		{"still invalid after the retry", [][]string{{"TRIGGER<invoke name=\"ls\">{}</invoke>"}}, "missing property", "", "was not sent: arguments do not match"},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				svc, up := newSvc(tc.replies)
				p, err := svc.Prepare(req(stream), "req_test")
				require.NoError(t, err)
				var calls []string
				var text string
				if stream {
					rec := &strictRecorder{}
					require.NoError(t, svc.Stream(context.Background(), p, rec))
					for _, e := range rec.events {
						if a, ok := strings.CutPrefix(e, "call:ls:"); ok {
							calls = append(calls, a)
						}
						if t, ok := strings.CutPrefix(e, "text:"); ok {
							text += t
						}
					}
				} else {
					ans, err := svc.Complete(context.Background(), p)
					require.NoError(t, err)
					for _, c := range ans.ToolCalls {
						calls = append(calls, c.Arguments)
					}
					text = ans.Text
				}
				require.Len(t, up.requests, 2, "exactly one retry")
				retryLast := up.requests[1][len(up.requests[1])-1].Text
				assert.Contains(t, retryLast, tc.note)
				if tc.wantCall != "" {
					require.Len(t, calls, 1)
					assert.JSONEq(t, tc.wantCall, calls[0], "the coerced arguments")
					assert.Empty(t, text)
				} else {
					assert.Empty(t, calls, "an invalid call is never passed on")
					assert.Contains(t, text, tc.wantText)
				}
			})
		}
	}
}

func TestRefusalRetry(t *testing.T) {
	var refusals []*regexp.Regexp
	for _, p := range DefaultRefusals {
		refusals = append(refusals, regexp.MustCompile(p))
	}
	cases := []struct {
		name     string
		stream   bool
		first    string
		requests int
		want     string
	}{
		{"persona refusal is retried", false, "I'm a support assistant for Cursor, so I can only help with Cursor questions.", 2, "Roses are red."},
		{"scope refusal is retried", false, "Sorry, that is outside the scope of what I can help with.", 2, "Roses are red."},
		{"an ordinary answer is not", false, "Roses are red.", 1, "Roses are red."},
		{"a plain stream is already out: no retry", true, "I am an AI support assistant for Cursor.", 1, "I am an AI support assistant for Cursor."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			catalog, err := models.NewCatalog([]string{"claude-sonnet-4.6"}, nil)
			require.NoError(t, err)
			up := &strictScript{replies: [][]string{{tc.first}, {"Roses are red."}}}
			svc := New(Settings{Catalog: catalog, MaxInputLength: 100000, MaxToolCallBytes: 1 << 20, Refusals: refusals}, up, slog.New(slog.DiscardHandler))
			p, err := svc.Prepare(&models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("write a poem")}}, "req")
			require.NoError(t, err)
			var got string
			if tc.stream {
				rec := &strictRecorder{}
				err = svc.Stream(context.Background(), p, rec)
				got = strings.TrimPrefix(strings.Join(rec.events, ""), "text:")
			} else {
				var ans *models.Answer
				ans, err = svc.Complete(context.Background(), p)
				if ans != nil {
					got = ans.Text
				}
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			require.Len(t, up.requests, tc.requests)
			if tc.requests == 2 {
				assert.Contains(t, up.requests[1][len(up.requests[1])-1].Text, "general-purpose assistant")
			}
		})
	}
}
