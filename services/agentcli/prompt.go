package agentcli

import (
	"strings"

	"cursor2api/models"
)

// RenderPrompt writes the conversation as the one prompt the CLI takes.
// A lone user message is sent as it is; otherwise every turn is wrapped
// in a tag naming its role, so that the model tells the gateway's
// instructions and the earlier turns from the message to answer, which
// comes last. The prompt goes to the CLI's stdin, so its only limit is
// MAX_INPUT_LENGTH, applied by the core before.
func RenderPrompt(turns []models.Turn) string {
	if len(turns) == 1 && turns[0].Role == models.RoleUser {
		return turns[0].Text
	}
	var b strings.Builder
	for i, t := range turns {
		if i > 0 {
			b.WriteString("\n\n")
		}
		role := string(t.Role)
		if role == "" {
			role = string(models.RoleUser)
		}
		b.WriteString("<" + role + ">\n")
		b.WriteString(t.Text)
		b.WriteString("\n</" + role + ">")
	}
	return b.String()
}
