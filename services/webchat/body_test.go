package webchat

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/models"
)

func TestAppendRequestBody(t *testing.T) {
	texts := []string{"", "plain", "quote \" backslash \\ new\nline\ttab", "<b>&amp;</b>", "é 漢字 🎉", "bad \xff utf-8", "\u2028 \x00 \x1f",
		strings.Repeat("long ", 1000)}
	var turns []models.Turn
	for i, text := range texts {
		role := models.RoleUser
		if i%2 == 1 {
			role = models.RoleAssistant
		}
		turns = append(turns, models.Turn{Role: role, Text: text})
	}
	body := appendRequestBody([]byte("keep"), "claude-sonnet-4.6", turns)
	require.True(t, strings.HasPrefix(string(body), "keep"), "appends")
	body = body[len("keep"):]
	require.True(t, json.Valid(body), "%s", body)
	assert.NotContains(t, string(body), `\u003c`, "<, > and & as a browser writes them")

	var got struct {
		Context []struct {
			Type, Content, FilePath string
		}
		Model, ID, Trigger string
		Messages           []struct {
			ID, Role string
			Parts    []struct{ Type, Text string }
		}
	}
	require.NoError(t, json.Unmarshal(body, &got))
	assert.Equal(t, "claude-sonnet-4.6", got.Model)
	assert.Equal(t, "submit-message", got.Trigger)
	assert.Regexp(t, regexp.MustCompile(`^[A-Za-z0-9]{16}$`), got.ID)
	require.Len(t, got.Context, 1)
	assert.Equal(t, "/docs/", got.Context[0].FilePath)
	assert.Equal(t, "file", got.Context[0].Type)
	require.Len(t, got.Messages, len(turns))
	ids := map[string]bool{}
	for i, m := range got.Messages {
		assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{16}$`), m.ID)
		ids[m.ID] = true
		assert.Equal(t, string(turns[i].Role), m.Role)
		require.Len(t, m.Parts, 1)
		assert.Equal(t, "text", m.Parts[0].Type)
		want := strings.ToValidUTF8(turns[i].Text, "\ufffd")
		assert.Equal(t, want, m.Parts[0].Text, "message %d", i)
	}
	assert.Len(t, ids, len(turns), "every message has an id of its own")
	// The key order of the browser's body.
	var keys []string
	gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.String()); return true })
	assert.Equal(t, []string{"context", "model", "id", "messages", "trigger"}, keys)
}
