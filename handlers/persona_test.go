//go:build unix

package handlers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cursortest"
)

// The web chat's 2026 docs persona, through every front door: answers cut
// at its output cap come out whole, and its refusals are asked again.

// cappedScript answers with full (its "TRIGGER" replaced as in script),
// cut every capBytes with finish "length", each continuation repeating
// the word the cut fell in.
func cappedScript(full string, capBytes int) func(int, cursortest.Request) cursortest.Response {
	return func(n int, req cursortest.Request) cursortest.Response {
		text := strings.ReplaceAll(full, "TRIGGER", sentTrigger(req))
		return cursortest.LengthCapped(text, capBytes, cursortest.RestartWord, &defaultUsage)(n, req)
	}
}

// longProse is text several cuts long.
func longProse() string {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "Sentence %d of the long answer goes on for a while. ", i)
	}
	return strings.TrimSpace(b.String())
}

func TestPersonaCutAnswerIsContinued(t *testing.T) {
	prose := longProse()
	const capBytes = 700
	segments := (len(prose) + capBytes - 1) / capBytes
	for _, door := range agentDoors {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", door.name, stream), func(t *testing.T) {
				s := newStack(t, nil, cappedScript(prose, capBytes))
				ans := door.ask(t, s, "claude-sonnet-4.6", "Tell me a long story.", stream, false)
				require.Equal(t, 200, ans.status, ans.errMsg)
				assert.Equal(t, prose, ans.text, "the answer whole, stitched")
				assert.Equal(t, door.stop, ans.finish)
				assert.Len(t, s.up.Requests(), segments)
				assert.EqualValues(t, defaultUsage.Output*segments, ans.usageOut, "the usage of every request")
			})
		}
	}
}

func TestPersonaCallCutMidMarkup(t *testing.T) {
	prose := longProse()
	full := prose + "\nTRIGGER\n<invoke name=\"get_weather\">{\"city\": \"Paris\"}</invoke>"
	capBytes := len(prose) / 2 // the second cut falls inside the call
	for _, door := range agentDoors {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", door.name, stream), func(t *testing.T) {
				s := newStack(t, nil, cappedScript(full, capBytes))
				ans := door.ask(t, s, "claude-sonnet-4.6", "Weather in Paris?", stream, true)
				require.Equal(t, 200, ans.status, ans.errMsg)
				require.Len(t, ans.calls, 1, "the call, whole")
				assert.Equal(t, "get_weather", ans.calls[0].name)
				assert.JSONEq(t, `{"city":"Paris"}`, ans.calls[0].args)
				assert.Equal(t, door.toolStop, ans.finish)
				assert.Equal(t, prose, strings.TrimSpace(ans.text))
				assert.Len(t, s.up.Requests(), 3)
			})
		}
	}
}

func TestPersonaRefusalIsAskedAgain(t *testing.T) {
	for _, refusal := range cursortest.DocsRefusals {
		for _, door := range agentDoors {
			t.Run(door.name+"/"+refusal[:20], func(t *testing.T) {
				s := newStack(t, nil, cursortest.Sequence(cursortest.Refusal(refusal), cursortest.Text(&defaultUsage, "Roses are red.")))
				ans := door.ask(t, s, "claude-sonnet-4.6", "Write a poem.", false, false)
				require.Equal(t, 200, ans.status, ans.errMsg)
				assert.Equal(t, "Roses are red.", ans.text)
				assert.Len(t, s.up.Requests(), 2, "the refusal was asked again")
			})
		}
	}
}

// The persona calls tools natively, in AI SDK tool frames: a call of a
// tool the client declared is the client's call, on every door and
// however the input travels; a call of the persona's own tool, or an
// empty tool-calls finish, is asked again, never an empty answer.
func TestPersonaNativeCalls(t *testing.T) {
	weather := func(how cursortest.ToolInput) cursortest.Response {
		return cursortest.ToolCalls(&defaultUsage, cursortest.NativeCall{ID: "toolu_up_1", Name: "get_weather", Input: `{"city": "Paris"}`, How: how})
	}
	cases := []struct {
		name  string
		reply func(int, cursortest.Request) cursortest.Response
		asked int
	}{
		{"input whole", cursortest.Sequence(weather(cursortest.InputWhole)), 1},
		{"input in deltas", cursortest.Sequence(weather(cursortest.InputDeltas)), 1},
		{"input error frame", cursortest.Sequence(weather(cursortest.InputError)), 1},
		{"the persona's own tool, then the client's", cursortest.Sequence(
			cursortest.ToolCalls(&defaultUsage, cursortest.NativeCall{ID: "t1", Name: "read_file", Input: `{"path":"/docs"}`}),
			weather(cursortest.InputWhole)), 2},
		{"an empty tool-calls finish, then the call", cursortest.Sequence(cursortest.EmptyToolCalls(), weather(cursortest.InputWhole)), 2},
	}
	for _, tc := range cases {
		for _, door := range agentDoors {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", tc.name, door.name, stream), func(t *testing.T) {
					s := newStack(t, nil, tc.reply)
					ans := door.ask(t, s, "claude-sonnet-4.6", "Weather in Paris?", stream, true)
					require.Equal(t, 200, ans.status, ans.errMsg)
					require.Len(t, ans.calls, 1)
					assert.Equal(t, "get_weather", ans.calls[0].name)
					assert.JSONEq(t, `{"city":"Paris"}`, ans.calls[0].args)
					assert.Equal(t, door.toolStop, ans.finish)
					assert.Len(t, s.up.Requests(), tc.asked)
				})
			}
		}
	}
}

// Without tools, the persona's own call and an empty finish are asked
// again too, and the client gets the text.
func TestPersonaNativeCallWithoutTools(t *testing.T) {
	for _, first := range []cursortest.Response{
		cursortest.ToolCalls(&defaultUsage, cursortest.NativeCall{ID: "t1", Name: "read_dir", Input: `{"path":"/docs"}`}),
		cursortest.EmptyToolCalls(),
	} {
		for _, door := range agentDoors {
			t.Run(door.name, func(t *testing.T) {
				s := newStack(t, nil, cursortest.Sequence(first, cursortest.Text(&defaultUsage, "Paris is sunny.")))
				ans := door.ask(t, s, "claude-sonnet-4.6", "Weather in Paris?", true, false)
				require.Equal(t, 200, ans.status, ans.errMsg)
				assert.Equal(t, "Paris is sunny.", ans.text)
				assert.Empty(t, ans.calls)
				assert.Len(t, s.up.Requests(), 2)
			})
		}
	}
}

// When the continuations run out, the answer's finish is the door's
// "length": never a silent truncation.
func TestPersonaCutAnswerFinishesLength(t *testing.T) {
	prose := longProse()
	lengthOf := map[string]string{"openai": "length", "anthropic": "max_tokens", "responses": "incomplete:message", "gemini": "MAX_TOKENS"}
	for _, door := range agentDoors {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", door.name, stream), func(t *testing.T) {
				s := newStack(t, map[string]string{"MAX_CONTINUATIONS": "1"}, cappedScript(prose, 700))
				ans := door.ask(t, s, "claude-sonnet-4.6", "Tell me a long story.", stream, false)
				require.Equal(t, 200, ans.status, ans.errMsg)
				assert.Equal(t, prose[:1400], ans.text, "two cuts' worth, stitched")
				assert.Equal(t, lengthOf[door.name], ans.finish)
				assert.Len(t, s.up.Requests(), 2)
			})
		}
	}
}
