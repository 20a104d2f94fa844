package chat

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"cursor2api/models"
)

func call(id, name, args string) models.Block {
	return models.Block{Kind: models.BlockToolCall, ID: id, Name: name, Arguments: args}
}

// round is an assistant tool call answered by a tool result.
func round(n int, name, args, result string) []models.Message {
	id := fmt.Sprintf("call_%d", n)
	return []models.Message{
		{Role: models.RoleAssistant, Blocks: []models.Block{call(id, name, args)}},
		{Role: models.RoleTool, ToolCallID: id, Blocks: []models.Block{{Kind: models.BlockText, Text: result}}},
	}
}

func history(rounds ...[]models.Message) []models.Message {
	msgs := []models.Message{userText("fix the build")}
	for _, r := range rounds {
		msgs = append(msgs, r...)
	}
	return msgs
}

func TestDetectToolLoop(t *testing.T) {
	same := func(n int) []models.Message { return round(n, "read_file", `{"path":"a.go"}`, "package a") }
	cases := []struct {
		name      string
		msgs      []models.Message
		maxRepeat int
		loop      bool
	}{
		{"two repeats are allowed", history(same(1), same(2)), 2, false},
		{"three repeats stop", history(same(1), same(2), same(3)), 2, true},
		{"key order and spacing do not matter", history(
			round(1, "grep", `{"a":1,"b":2}`, "x"), round(2, "grep", `{ "b": 2, "a": 1 }`, "x"), round(3, "grep", `{"b":2,"a":1}`, "x")), 2, true},
		{"different results are progress", history(
			round(1, "run", `{}`, "1 failed"), round(2, "run", `{}`, "2 failed"), round(3, "run", `{}`, "3 failed")), 2, false},
		{"different arguments are progress", history(
			round(1, "read_file", `{"path":"a"}`, "x"), round(2, "read_file", `{"path":"b"}`, "x"), round(3, "read_file", `{"path":"c"}`, "x")), 2, false},
		{"a user message resets the streak", append(append(history(same(1), same(2)), userText("again")), append(same(3), same(4)...)...), 2, false},
		{"only the trailing streak counts", history(same(1), same(2), same(3), round(4, "ls", `{}`, "a.go")), 2, false},
		{"off when zero", history(same(1), same(2), same(3), same(4)), 0, false},
		{"max one", history(same(1), same(2)), 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := DetectToolLoop(tc.msgs, tc.maxRepeat)
			if tc.loop {
				assert.Contains(t, got, "Stopped a tool loop")
				assert.Contains(t, got, tc.msgs[len(tc.msgs)-2].ToolCalls()[0].Name)
			} else {
				assert.Empty(t, got)
			}
		})
	}
}
