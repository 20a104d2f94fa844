package models

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMessageText(t *testing.T) {
	text := func(s string) Block { return Block{Kind: BlockText, Text: s} }
	call := Block{Kind: BlockToolCall, Name: "f"}
	cases := []struct {
		name   string
		blocks []Block
		want   string
	}{
		{"none", nil, ""},
		{"no text", []Block{call}, ""},
		{"one", []Block{text("a")}, "a"},
		{"one among others", []Block{call, text("a"), call}, "a"},
		{"two", []Block{text("a"), call, text("b")}, "a\nb"},
		{"three", []Block{text("a"), text("b"), text("c")}, "a\nb\nc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Message{Role: RoleUser, Blocks: tc.blocks}.Text())
		})
	}
}
