package chat

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"cursor2api/utils/toolproto"
)

func TestBadCallReason(t *testing.T) {
	for reason, label := range map[string]string{
		toolproto.ReasonUnknownTool:    "unknown_tool",
		toolproto.ReasonBadJSON:        "bad_json",
		toolproto.ReasonCutOff:         "cut_off",
		toolproto.ReasonOpenString:     "cut_off",
		toolproto.ReasonTooLong:        "too_long",
		`missing property "city"`:      "schema",
		"anything a checker might say": "schema",
	} {
		assert.Equal(t, label, BadCallReason(reason), reason)
	}
}
