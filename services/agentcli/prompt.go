package agentcli

import (
	"strings"

	"cursor2api/models"
)

// RenderPrompt writes the conversation as the CLI's one prompt: a lone user
// message as it is, else each turn in a tag naming its role, so the model
// tells instructions and history from the message to answer. It goes to
// stdin, so only MAX_INPUT_LENGTH bounds it.
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
