package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/upstream"
)

// fakeRunner runs mcp__m__add (sums a and b) and mcp__m__block (waits for
// the context), recording the calls.
type fakeRunner struct {
	mu    sync.Mutex
	calls []string
}

func (*fakeRunner) Tools() []models.Tool {
	return []models.Tool{
		{Name: "mcp__m__add", Description: "Add.", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`)},
		{Name: "mcp__m__block", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
}

func (f *fakeRunner) Run(ctx context.Context, name, arguments string) (string, bool) {
	f.mu.Lock()
	f.calls = append(f.calls, name+" "+arguments)
	f.mu.Unlock()
	if name == "mcp__m__block" {
		<-ctx.Done()
		return "cancelled", true
	}
	var in struct{ A, B int }
	if err := json.Unmarshal([]byte(arguments), &in); err != nil {
		return err.Error(), true
	}
	return fmt.Sprint(in.A + in.B), false
}

// runRecorder is a strictRecorder that also shows the gateway's runs.
type runRecorder struct{ strictRecorder }

func (r *runRecorder) ToolRunStart(run models.ToolRun) error {
	return r.add("run:" + run.Name + ":" + run.Arguments)
}

func (r *runRecorder) ToolRunEnd(run models.ToolRun) error {
	return r.add(fmt.Sprintf("result:%s:%v", run.Output, run.IsError))
}

const addCall = "TRIGGER<invoke name=\"mcp__m__add\">{\"a\":1,\"b\":2}</invoke>"

func TestRunnerRoundsText(t *testing.T) {
	lsTool := models.Tool{Name: "ls", Parameters: json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"}}}`)}
	cases := []struct {
		name      string
		tools     []models.Tool
		mode      RunnerMode
		maxRounds int
		replies   [][]string
		want      []string
		finish    string
		requests  int
		runs      int
	}{
		{"one round", nil, RunnerAlways, 0,
			[][]string{{"Adding. ", addCall}, {"The sum is 3."}},
			[]string{"text:Adding. ", `run:mcp__m__add:{"a":1,"b":2}`, "result:3:false", "text:The sum is 3."}, "finish:1:30", 2, 1},
		{"several rounds", nil, RunnerAlways, 0,
			[][]string{{addCall}, {addCall}, {"Done."}},
			[]string{`run:mcp__m__add:{"a":1,"b":2}`, "result:3:false", `run:mcp__m__add:{"a":1,"b":2}`, "result:3:false", "text:Done."}, "finish:1:45", 3, 2},
		{"client tool ends the answer", []models.Tool{lsTool}, RunnerAlways, 0,
			[][]string{{addCall}, {"TRIGGER<invoke name=\"ls\">{\"dir\":\".\"}</invoke>"}},
			[]string{`run:mcp__m__add:{"a":1,"b":2}`, "result:3:false", "start:ls", `args:{"dir":"."`, "args:}", "end"}, "finish:2:30", 2, 1},
		{"mix in one turn: the client's call goes to the client", []models.Tool{lsTool}, RunnerAlways, 0,
			[][]string{{addCall, "TRIGGER<invoke name=\"ls\">{\"dir\":\".\"}</invoke>"}},
			[]string{"start:ls", `args:{"dir":"."`, "args:}", "end", `run:mcp__m__add:{"a":1,"b":2}`, "result:3:false"}, "finish:2:15", 1, 1},
		{"not offered with client tools under when-no-client-tools", []models.Tool{lsTool}, RunnerWhenNoClientTools, 0,
			[][]string{{"plain"}}, []string{"text:plain"}, "finish:1:15", 1, 0},
		{"off", nil, RunnerOff, 0,
			[][]string{{"plain"}}, []string{"text:plain"}, "finish:1:15", 1, 0},
		{"rounds spent: the tools are taken away", nil, RunnerAlways, 2,
			[][]string{{addCall}, {addCall}, {"Out of tools."}},
			[]string{`run:mcp__m__add:{"a":1,"b":2}`, "result:3:false", `run:mcp__m__add:{"a":1,"b":2}`, "result:3:false", "text:Out of tools."}, "finish:1:45", 3, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := &strictScript{replies: tc.replies}
			run := &fakeRunner{}
			core := newCore(t, up, Settings{Runner: run, RunnerMode: tc.mode, MaxRounds: tc.maxRounds})
			req := &models.Request{Model: "claude-sonnet-4.6", Tools: tc.tools, Messages: []models.Message{userText("add 1 and 2")}}
			p, err := core.Prepare(req, "req-1")
			require.NoError(t, err)
			rec := &runRecorder{}
			require.NoError(t, core.Stream(context.Background(), p, rec))
			assert.Equal(t, tc.want, rec.events)
			assert.Equal(t, []string{tc.finish}, rec.finish)
			require.Len(t, up.requests, tc.requests)
			assert.Len(t, run.calls, tc.runs)
			prompt := up.requests[0][0].Text
			if tc.mode == RunnerAlways {
				assert.Contains(t, prompt, "mcp__m__add", "offered in the prompt")
			} else {
				assert.NotContains(t, prompt, "mcp__m__add")
			}
			if tc.requests > 1 {
				second := up.requests[1]
				last := second[len(second)-1].Text
				assert.Contains(t, last, "3", "the result is replayed to the model")
			}
			if tc.maxRounds > 0 {
				third := up.requests[2]
				all := ""
				for _, m := range third {
					all += m.Text
				}
				assert.Contains(t, all, lastRoundNote)
				assert.NotContains(t, third[0].Text, `"mcp__m__add"`, "no longer offered")
				trigger := triggerInPrompt.FindString(prompt)
				require.NotEmpty(t, trigger)
				assert.Contains(t, all, trigger+"\n<invoke name=\"mcp__m__add\">", "the calls made are replayed with the request's trigger")
			}
			// The whole answer says the same.
			up2 := &strictScript{replies: tc.replies}
			core2 := newCore(t, up2, Settings{Runner: &fakeRunner{}, RunnerMode: tc.mode, MaxRounds: tc.maxRounds})
			p2, err := core2.Prepare(req, "req-2")
			require.NoError(t, err)
			ans, err := core2.Complete(context.Background(), p2)
			require.NoError(t, err)
			assert.Len(t, ans.ToolRuns, tc.runs)
			for _, r := range ans.ToolRuns {
				assert.Equal(t, "3", r.Output)
				assert.True(t, strings.HasPrefix(r.ID, "call_"))
			}
			assert.Equal(t, len(up.requests), len(up2.requests))
			assert.Equal(t, strings.TrimPrefix(tc.finish, "finish:")[2:], fmt.Sprint(ans.Usage.TotalTokens), "usage sums every round")
		})
	}
}

func TestRunnerNative(t *testing.T) {
	up := &scriptedUpstream{native: true, turns: [][]upstream.Delta{
		{text("Adding."), ncall("call_n1", "mcp__m__add", `{"a":20,"b":22}`)},
		{text("42.")},
	}}
	core := newCore(t, up, Settings{Runner: &fakeRunner{}})
	p, err := core.Prepare(&models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("add")}}, "req-n")
	require.NoError(t, err)
	rec := &runRecorder{}
	require.NoError(t, core.Stream(context.Background(), p, rec))
	assert.Equal(t, []string{"text:Adding.", `run:mcp__m__add:{"a":20,"b":22}`, "result:42:false", "text:42."}, rec.events)
	require.Len(t, up.requests, 2)
	assert.Equal(t, "mcp__m__add", up.requests[0].Tools[0].Name, "offered natively")
	conv := up.requests[1].Conversation
	require.Len(t, conv, 3)
	assert.Equal(t, models.BlockToolCall, conv[1].Blocks[1].Kind)
	assert.Equal(t, "call_n1", conv[1].Blocks[1].ID)
	assert.Equal(t, models.RoleTool, conv[2].Role)
	assert.Equal(t, "call_n1", conv[2].ToolCallID)
	assert.Equal(t, "42", conv[2].Text())
	assert.Equal(t, []string{"finish:1:30"}, rec.finish)
}

func TestRunnerCancelledByClient(t *testing.T) {
	up := &strictScript{replies: [][]string{{"TRIGGER<invoke name=\"mcp__m__block\">{}</invoke>"}}}
	core := newCore(t, up, Settings{Runner: &fakeRunner{}})
	p, err := core.Prepare(&models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("go")}}, "req-c")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() { done <- core.Stream(ctx, p, &runRecorder{}) }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the running call outlived the client")
	}
}
