package chat

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultRefusals(t *testing.T) {
	refusals, err := CompileRefusals(nil)
	require.NoError(t, err)
	svc := &Service{settings: Settings{Refusals: refusals}}
	caught := []string{
		// the support persona
		"I'm a support assistant for Cursor, so I can only help with Cursor questions.",
		"I am an AI support assistant for Cursor.",
		"Sorry, that is outside the scope of what I can help with.",
		// the docs persona (2026)
		"I can only help with questions about Cursor, the AI code editor.",
		"I can only assist with Cursor-related questions. Is there anything about Cursor I can help with?",
		"I only help with questions related to Cursor.",
		"I'm a documentation assistant, so I can't write a poem for you.",
		"I am Cursor's documentation assistant.",
		"As the Cursor docs assistant, I can point you to the right page.",
		"I'm only able to answer questions related to Cursor and its features.",
		"I'm here to help with questions about Cursor. What would you like to know?",
		"I'm designed to help you with Cursor.",
		"This assistant is scoped to answering questions about Cursor.",
		"Writing a sorting algorithm isn't something I can help with here.",
		"That falls outside my scope, but the Cursor docs may help.",
		"I only have two tools: read_file and read_dir, which read the Cursor documentation.",
		"My tools are `read_file` and `read_dir`.",
		"抱歉，我只能回答与 Cursor AI 代码编辑器相关的问题。",
		"我专注于回答与 Cursor 编辑器相关的问题。",
		"我是 Cursor 的文档助手。",
	}
	notCaught := []string{
		"Cursor is an AI code editor; open its settings with Ctrl+, and pick a model.",
		"I can help with that. In Cursor, open the command palette and run \"Reload Window\".",
		"Here's how to configure Cursor rules: create .cursor/rules/style.mdc.",
		"I'm able to help with the Cursor configuration: first, open settings.json.",
		"I can only answer the Cursor question once you share the error log.",
		"The documentation assistant pattern is common in support sites.",
		"Let me read the file with read_file, then list the folder.",
		"I only have two apples left.",
		"This variable is outside the function's scope, so the closure cannot see it.",
		"Roses are red, violets are blue.",
		"To make Cursor's agent use your tools, enable MCP in the settings.",
		"我可以帮你写这个函数。在 Cursor 中打开终端即可。",
	}
	for _, s := range caught {
		assert.True(t, svc.isRefusal(s), "a refusal: %q", s)
	}
	for _, s := range notCaught {
		assert.False(t, svc.isRefusal(s), "an ordinary answer: %q", s)
	}
}
