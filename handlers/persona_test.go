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
