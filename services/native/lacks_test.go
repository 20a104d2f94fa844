package native

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"cursor2api/models"
	"cursor2api/services/upstream"
)

// A parked run is resumed only by results whose request offers no tool it
// was not started with: a tool search's result that loads a deferred tool
// needs a fresh run, whose tools include it.
func TestRunLacksTools(t *testing.T) {
	search, echo := models.Tool{Name: "ToolSearch"}, models.Tool{Name: "mcp__everything__echo"}
	r := &run{names: toolNames([]models.Tool{search})}
	cases := []struct {
		name  string
		req   upstream.Request
		lacks bool
	}{
		{"the same tools", upstream.Request{Tools: []models.Tool{search}}, false},
		{"fewer tools", upstream.Request{}, false},
		{"a loaded tool", upstream.Request{Tools: []models.Tool{search, echo}}, true},
		{"tools not to be called", upstream.Request{Tools: []models.Tool{search, echo}, Choice: models.ToolChoice{Mode: models.ChoiceNone}}, false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.lacks, r.lacksTools(tc.req), tc.name)
	}
}
