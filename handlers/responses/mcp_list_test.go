package responses

import (
	"encoding/json"
	"testing"

	oairesp "github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

// TestListTools: the listings group the servers' tools by label, in the
// request's order, and stream as the SDK reads them; a listing with an
// error fails.
func TestListTools(t *testing.T) {
	servers := []models.MCPServer{{Label: "b"}, {Label: "a"}}
	tools := []models.Tool{
		{Name: "mcp__a__x", Description: "X.", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "mcp__b__y"},
		{Name: "mcp__c__z"},
		{Name: "local"},
	}
	items := ListTools(servers, tools)
	require.Len(t, items, 2)
	assert.Equal(t, "b", items[0].ServerLabel)
	assert.Equal(t, []models.Tool{tools[1]}, items[0].Tools)
	assert.Equal(t, []models.Tool{tools[0]}, items[1].Tools)

	items[0].Error = "the listing failed"
	w, buf := newTestWriter(nil)
	require.NoError(t, w.ListTools(items))
	var names []string
	for _, ev := range parseEvents(t, buf.String()) {
		names = append(names, ev.Name)
		var u oairesp.ResponseStreamEventUnion
		require.NoError(t, json.Unmarshal([]byte(ev.Data.Raw), &u))
		if ev.Name == EventItemDone {
			it := u.AsResponseOutputItemDone().Item.AsMcpListTools()
			assert.Empty(t, it.JSON.ExtraFields, ev.Data.Raw)
			require.Len(t, it.Tools, 1)
			assert.Empty(t, it.Tools[0].JSON.ExtraFields, ev.Data.Raw)
			if it.ServerLabel == "b" {
				assert.Equal(t, "the listing failed", it.Error)
				assert.Equal(t, "y", it.Tools[0].Name)
				assert.False(t, it.Tools[0].JSON.Description.Valid(), "no description: null")
			} else {
				assert.False(t, it.JSON.Error.Valid(), ev.Data.Raw)
				assert.Equal(t, "X.", it.Tools[0].Description)
			}
		}
	}
	assert.Equal(t, []string{EventCreated, EventInProgress,
		EventItemAdded, EventMCPListInProgress, EventMCPListFailed, EventItemDone,
		EventItemAdded, EventMCPListInProgress, EventMCPListCompleted, EventItemDone}, names)
	assert.Len(t, w.OutputItems(), 2)
	assert.Len(t, w.Response().Output, 2)
}
