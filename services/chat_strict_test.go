package services

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
)

// strictScript is an Upstream that answers the n-th request with
// replies[n], after replacing TRIGGER with the request's trigger.
type strictScript struct {
	mu       sync.Mutex
	replies  [][]string
	requests [][]UpstreamMessage
}

var triggerInPrompt = regexp.MustCompile(`<<CALL_[A-Za-z0-9]{8}>>`)

func (u *strictScript) Stream(_ context.Context, req UpstreamRequest, fn func(Delta) error) (*models.Usage, error) {
	u.mu.Lock()
	n := len(u.requests)
	u.requests = append(u.requests, req.Messages)
	u.mu.Unlock()
	trigger := triggerInPrompt.FindString(req.Messages[0].Text)
	for _, d := range u.replies[min(n, len(u.replies)-1)] {
		if err := fn(Delta{Kind: DeltaText, Text: strings.ReplaceAll(d, "TRIGGER", trigger)}); err != nil {
			return nil, err
		}
	}
	return &models.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}, nil
}

// strictRecorder is a Sink that logs what reaches the client, in order.
type strictRecorder struct{ events []string }

func (r *strictRecorder) Text(s string) error { r.events = append(r.events, "text:"+s); return nil }
func (r *strictRecorder) Reasoning(s string) error {
	r.events = append(r.events, "reasoning:"+s)
	return nil
}
func (r *strictRecorder) ToolCall(id, name, args string) error {
	r.events = append(r.events, fmt.Sprintf("call:%s:%s", name, args))
	return nil
}
func (r *strictRecorder) ToolCallStart(id, name string) error {
	r.events = append(r.events, "start:"+name)
	return nil
}
func (r *strictRecorder) ToolCallArguments(fragment string) error {
	r.events = append(r.events, "args:"+fragment)
	return nil
}

func strictRequest(choice string) *models.ChatRequest {
	return &models.ChatRequest{
		Model:      "claude-sonnet-4.6",
		Messages:   []models.Message{{Role: "user", Content: models.Content{Text: "list files"}}},
		Tools:      []models.Tool{{Type: "function", Function: models.FunctionSpec{Name: "ls", Parameters: []byte(`{"type":"object"}`)}}},
		ToolChoice: []byte(choice),
	}
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
			svc := NewChatService(ChatSettings{Catalog: catalog, MaxInputLength: 100000, MaxToolCallBytes: 1 << 20, KiloToolStrict: tc.kilo},
				up, slog.New(slog.DiscardHandler))
			p, err := svc.Prepare(strictRequest(tc.choice), "req_test")
			require.NoError(t, err)
			rec := &strictRecorder{}
			usage, err := svc.Stream(context.Background(), p, rec)
			require.NoError(t, err)
			assert.Equal(t, tc.want, rec.events)
			require.Len(t, up.requests, tc.requests)
			assert.Equal(t, 15*tc.requests, usage.TotalTokens, "usage covers every upstream turn")
			if tc.requests == 2 {
				last := up.requests[1][len(up.requests[1])-1]
				assert.Contains(t, last.Text, "MUST call a function", "the retry carries the reminder")
			}
		})
	}
}

func TestCorrectiveRetry(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"dir":{"type":"string"},"depth":{"type":"integer"}},"required":["dir"]}`)
	newSvc := func(replies [][]string) (*ChatService, *strictScript) {
		catalog, err := models.NewCatalog([]string{"claude-sonnet-4.6"}, nil)
		require.NoError(t, err)
		up := &strictScript{replies: replies}
		return NewChatService(ChatSettings{Catalog: catalog, MaxInputLength: 100000, MaxToolCallBytes: 1 << 20}, up, slog.New(slog.DiscardHandler)), up
	}
	req := func(stream bool) *models.ChatRequest {
		r := strictRequest(`"required"`)
		r.Tools[0].Function.Parameters = schema
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
					_, err = svc.Stream(context.Background(), p, rec)
					require.NoError(t, err)
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
						calls = append(calls, c.Function.Arguments)
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
			svc := NewChatService(ChatSettings{Catalog: catalog, MaxInputLength: 100000, MaxToolCallBytes: 1 << 20, Refusals: refusals}, up, slog.New(slog.DiscardHandler))
			p, err := svc.Prepare(&models.ChatRequest{Model: "claude-sonnet-4.6", Messages: []models.Message{{Role: "user", Content: models.Content{Text: "write a poem"}}}}, "req")
			require.NoError(t, err)
			var got string
			if tc.stream {
				rec := &strictRecorder{}
				_, err = svc.Stream(context.Background(), p, rec)
				got = strings.TrimPrefix(strings.Join(rec.events, ""), "text:")
			} else {
				var ans *Answer
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
