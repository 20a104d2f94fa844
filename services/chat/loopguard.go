package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"cursor2api/models"
)

// toolRound is one assistant turn of tool calls with the results that
// answered it, reduced to a comparable fingerprint.
type toolRound struct {
	fingerprint string
	names       []string
}

// DetectToolLoop reports an agent stuck in a loop: the conversation ends
// with more than maxRepeat consecutive rounds of the same tool calls (same
// names, same arguments up to JSON formatting and key order) that got the
// same results. It returns the message to answer with, or "" when there is
// no loop or maxRepeat is 0.
func DetectToolLoop(msgs []models.Message, maxRepeat int) string {
	if maxRepeat <= 0 {
		return ""
	}
	var rounds []toolRound
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch {
		case m.Role == models.RoleAssistant && len(m.ToolCalls()) > 0:
			results := map[string]string{}
			j := i + 1
			for ; j < len(msgs) && msgs[j].Role == models.RoleTool; j++ {
				results[msgs[j].ToolCallID] = msgs[j].Text()
			}
			var fp strings.Builder
			var names []string
			for _, tc := range m.ToolCalls() {
				names = append(names, tc.Name)
				fmt.Fprintf(&fp, "%s\x00%s\x00%s\x01", tc.Name, canonicalJSON(tc.Arguments), results[tc.ID])
			}
			rounds = append(rounds, toolRound{fingerprint: fp.String(), names: names})
			i = j - 1
		case m.Role == models.RoleUser || m.Role == models.RoleAssistant:
			// A new instruction or a plain answer breaks any streak.
			if strings.TrimSpace(m.Text()) != "" || m.Role == models.RoleUser {
				rounds = rounds[:0]
			}
		}
	}
	if len(rounds) <= maxRepeat {
		return ""
	}
	last := rounds[len(rounds)-1]
	streak := 0
	for i := len(rounds) - 1; i >= 0 && rounds[i].fingerprint == last.fingerprint; i-- {
		streak++
	}
	if streak <= maxRepeat {
		return ""
	}
	return fmt.Sprintf("Stopped a tool loop: %s was called %d times in a row with the same arguments and got the same result each time, so calling it again would not help. Please try a different approach, change the arguments, or tell me how to proceed.",
		strings.Join(last.names, ", "), streak)
}

// canonicalJSON re-encodes JSON with sorted keys and no white space, so
// that equal arguments compare equal; anything else is kept as is.
func canonicalJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return strings.TrimSpace(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return s
	}
	return string(b)
}
