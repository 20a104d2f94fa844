package upstream

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"cursor2api/models"
)

func TestRequestBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  Request
		want int
	}{
		{"empty", Request{}, 0},
		{"text turns", Request{Messages: []models.Turn{{Role: models.RoleSystem, Text: "abc"}, {Role: models.RoleUser, Text: "héllo"}}}, 3 + 6},
		{"conversation and tools", Request{
			Conversation: []models.Message{{Role: models.RoleAssistant, Blocks: []models.Block{
				{Kind: models.BlockText, Text: "hi"}, {Kind: models.BlockToolCall, Name: "ls", Arguments: `{}`},
			}}},
			Tools: []models.Tool{{Name: "ls", Description: "list", Parameters: []byte(`{"type":"object"}`)}},
		}, 2 + 2 + 2 + 2 + 4 + 17},
		{"an image counts as a large one, not as its data", Request{Conversation: []models.Message{{Role: models.RoleUser, Blocks: []models.Block{
			{Kind: models.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
		}}}}, imageBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.req.Bytes())
		})
	}
}
