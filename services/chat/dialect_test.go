package chat

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/upstream"
)

// scriptedUpstream answers its n-th request with turns[n] (the last turn
// again when there are fewer), recording the requests. With native set it
// takes tools natively.
type scriptedUpstream struct {
	native   bool
	turns    [][]upstream.Delta
	requests []upstream.Request
}

func (s *scriptedUpstream) NativeTools() bool { return s.native }

func (s *scriptedUpstream) Stream(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error) (*models.Usage, error) {
	s.requests = append(s.requests, req)
	turn := s.turns[min(len(s.requests), len(s.turns))-1]
	for _, d := range turn {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := fn(d); err != nil {
			return nil, err
		}
	}
	return &models.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, CacheReadTokens: 4}, nil
}

func text(s string) upstream.Delta { return upstream.Delta{Kind: upstream.DeltaText, Text: s} }

func ncall(id, name, args string) upstream.Delta {
	return upstream.Delta{Kind: upstream.DeltaToolCall, Call: models.ToolCall{ID: id, Name: name, Arguments: args}}
}

var readTool = models.Tool{Name: "read", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}

func TestNativeDialect(t *testing.T) {
	history := []models.Message{
		{Role: models.RoleSystem, Blocks: []models.Block{{Kind: models.BlockText, Text: "be brief"}}},
		userText("read a.go"),
	}
	cases := []struct {
		name     string
		edit     func(*models.Request)
		turns    [][]upstream.Delta
		want     []string
		finish   string
		requests int
		note     string // in the last user message of the second request
	}{
		{"text and reasoning", func(r *models.Request) { r.ShowThinking = true },
			[][]upstream.Delta{{{Kind: upstream.DeltaReasoning, Text: "plan"}, text("done")}},
			[]string{"reasoning:plan", "text:done"}, "finish:1:15", 1, ""},
		{"a native call keeps its id and is checked", nil,
			[][]upstream.Delta{{text("Reading."), ncall("call_up1", "read", `{"path":"a.go"}`)}},
			[]string{"text:Reading.", `call:read:{"path":"a.go"}`}, "finish:2:15", 1, ""},
		{"a call against its schema is asked again", nil,
			[][]upstream.Delta{{ncall("call_x", "read", `{"file":"a.go"}`)}, {ncall("call_y", "read", `{"path":"a.go"}`)}},
			[]string{`call:read:{"path":"a.go"}`}, "finish:2:30", 2, "Call again with a declared tool (read)"},
		{"a call of an undeclared tool is asked again", nil,
			[][]upstream.Delta{{ncall("call_x", "shell", `{"cmd":"ls"}`)}, {ncall("call_y", "read", `{"path":"a.go"}`)}},
			[]string{`call:read:{"path":"a.go"}`}, "finish:2:30", 2, `"shell" is not a tool of this conversation`},
		{"a required call that is missing is asked again", func(r *models.Request) { r.Choice = models.ToolChoice{Mode: models.ChoiceRequired} },
			[][]upstream.Delta{{text("I would read it.")}, {ncall("call_y", "read", `{"path":"a.go"}`)}},
			[]string{`call:read:{"path":"a.go"}`}, "finish:2:30", 2, "MUST call one of the declared tools"},
		{"an empty turn is asked again", nil,
			[][]upstream.Delta{{}, {text("Here.")}},
			[]string{"text:Here."}, "finish:1:30", 2, "your reply was empty"},
		{"parallel calls all reach the client", nil,
			[][]upstream.Delta{{ncall("call_a", "read", `{"path":"a"}`), ncall("call_b", "read", `{"path":"b"}`)}},
			[]string{`call:read:{"path":"a"}`, `call:read:{"path":"b"}`}, "finish:2:15", 1, ""},
		{"a single-call request keeps the first", func(r *models.Request) { r.SingleCall = true },
			[][]upstream.Delta{{ncall("call_a", "read", `{"path":"a"}`), ncall("call_b", "read", `{"path":"b"}`)}},
			[]string{`call:read:{"path":"a"}`}, "finish:2:15", 1, ""},
		{"the upstream's length cut is the answer's finish", nil,
			[][]upstream.Delta{{text("long"), {Kind: upstream.DeltaLength}}},
			[]string{"text:long"}, "finish:3:15", 1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := &scriptedUpstream{native: true, turns: tc.turns}
			core := newCore(t, up, Settings{})
			req := &models.Request{Model: "claude-sonnet-4.6", Messages: history, Tools: []models.Tool{readTool}, Session: "sess-1"}
			if tc.edit != nil {
				tc.edit(req)
			}
			p, err := core.Prepare(req, "req_native")
			require.NoError(t, err)
			rec := &strictRecorder{}
			require.NoError(t, core.Stream(context.Background(), p, rec))
			assert.Equal(t, tc.want, rec.events)
			require.Len(t, rec.finish, 1)
			assert.True(t, strings.HasPrefix(rec.finish[0], tc.finish), "%s, want %s", rec.finish[0], tc.finish)
			require.Len(t, up.requests, tc.requests)

			first := up.requests[0]
			assert.Empty(t, first.Messages, "a native back door gets no text turns")
			assert.Equal(t, history, first.Conversation, "the conversation goes as the client sent it, system included")
			assert.Equal(t, []models.Tool{readTool}, first.Tools)
			assert.Equal(t, "sess-1", first.Session)
			assert.Equal(t, "anthropic/claude-sonnet-4.6", first.Model)
			for _, m := range first.Conversation {
				assert.NotContains(t, m.Text(), "<<CALL_", "no text protocol reaches a native back door")
			}
			if tc.note != "" {
				second := up.requests[1].Conversation
				assert.Len(t, second, len(history), "the note joins the last user message")
				assert.Contains(t, second[len(second)-1].Text(), tc.note)
				assert.Equal(t, "read a.go", history[1].Text(), "the client's conversation is not changed")
			}
		})
	}
}

func TestNativeDialectNoToolsWhenChoiceNone(t *testing.T) {
	up := &scriptedUpstream{native: true, turns: [][]upstream.Delta{{text("ok")}}}
	core := newCore(t, up, Settings{})
	p, err := core.Prepare(&models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("hi")},
		Tools: []models.Tool{readTool}, Choice: models.ToolChoice{Mode: models.ChoiceNone}}, "req")
	require.NoError(t, err)
	ans, err := core.Complete(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, "ok", ans.Text)
	assert.Empty(t, up.requests[0].Tools, "tool_choice none offers no tool")
	assert.Equal(t, 4, ans.Usage.CacheReadTokens, "the upstream's cache count reaches the answer")
}

func TestNativeDialectComplete(t *testing.T) {
	up := &scriptedUpstream{native: true, turns: [][]upstream.Delta{{text("Reading."), ncall("call_up1", "read", `{"path": "a.go"}`)}}}
	core := newCore(t, up, Settings{})
	p, err := core.Prepare(&models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("read a.go")}, Tools: []models.Tool{readTool}}, "req")
	require.NoError(t, err)
	ans, err := core.Complete(context.Background(), p)
	require.NoError(t, err)
	require.Len(t, ans.ToolCalls, 1)
	assert.Equal(t, "call_up1", ans.ToolCalls[0].ID, "the back door's id comes back, so that it knows the result again")
	assert.Equal(t, `{"path":"a.go"}`, ans.ToolCalls[0].Arguments)
	assert.Equal(t, models.FinishToolCalls, ans.Finish)
}

// A text back door's upstream may call tools natively too (the web chat's
// persona): a call of a declared tool is the client's, anything else is
// asked again, and so is an empty turn.
func TestTextDialectNativeCalls(t *testing.T) {
	cases := []struct {
		name   string
		tools  []models.Tool
		turns  [][]upstream.Delta
		want   []string
		asked  int
		note   string
		finish string
	}{
		{"a declared tool is the client's call", []models.Tool{readTool},
			[][]upstream.Delta{{ncall("tc_1", "read", `{"path":"a.go"}`)}},
			[]string{`call:read:{"path":"a.go"}`}, 1, "", "finish:2:"},
		{"arguments that are not an object are asked again", []models.Tool{{Name: "read"}},
			[][]upstream.Delta{{ncall("tc_1", "read", `a.go please`)}, {ncall("tc_2", "read", `{"path":"a.go"}`)}},
			[]string{`call:read:{"path":"a.go"}`}, 2, `your call of "read" was not run: arguments are not a JSON object`, "finish:2:"},
		{"the persona's own tool is asked again", []models.Tool{readTool},
			[][]upstream.Delta{{ncall("tc_1", "read_file", `{"path":"/docs"}`)}, {text("Answer.")}},
			[]string{"text:Answer."}, 2, `"read_file" is not a tool of this conversation (the tools are read)`, "finish:1:"},
		{"without tools a native call is asked again as text", nil,
			[][]upstream.Delta{{ncall("tc_1", "read_dir", `{}`)}, {text("Answer.")}},
			[]string{"text:Answer."}, 2, "No tool can be called in this conversation", "finish:1:"},
		{"an empty turn is asked again", nil,
			[][]upstream.Delta{{}, {text("Answer.")}},
			[]string{"text:Answer."}, 2, "your reply was empty", "finish:1:"},
		{"a second empty turn is what it is", nil,
			[][]upstream.Delta{{}, {}},
			nil, 2, "your reply was empty", "finish:1:"},
		{"the upstream's cap makes the finish length", nil,
			[][]upstream.Delta{{text("cut"), {Kind: upstream.DeltaLength}}},
			[]string{"text:cut"}, 1, "", "finish:3:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := &scriptedUpstream{turns: tc.turns}
			core := newCore(t, up, Settings{})
			p, err := core.Prepare(&models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("go")}, Tools: tc.tools}, "req")
			require.NoError(t, err)
			rec := &strictRecorder{}
			require.NoError(t, core.Stream(context.Background(), p, rec))
			assert.Equal(t, tc.want, rec.events)
			require.Len(t, rec.finish, 1)
			assert.True(t, strings.HasPrefix(rec.finish[0], tc.finish), "%s, want %s", rec.finish[0], tc.finish)
			require.Len(t, up.requests, tc.asked)
			assert.Empty(t, up.requests[0].Conversation, "a text back door gets text turns only")
			if tc.note != "" {
				msgs := up.requests[1].Messages
				assert.Contains(t, msgs[len(msgs)-1].Text, tc.note)
			}
		})
	}
}
