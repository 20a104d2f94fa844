package responses

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

// TestToRequestCompaction: only a compaction_trigger that ends the input
// asks for a compaction (one in stored history or mid-input is a spent
// request control); a compaction item becomes its summary, in its place,
// through the opener of the request's key, and is refused without one.
func TestToRequestCompaction(t *testing.T) {
	s := NewSealer("secret")
	item := `{"type":"compaction","encrypted_content":"` + s.Seal("k", "SUMMARY") + `"}`
	user := `{"role":"user","content":"go on"}`
	trigger := `{"type":"compaction_trigger"}`
	for _, tc := range []struct {
		name, input string
		history     []string
		compaction  bool
	}{
		{"last", "[" + user + "," + trigger + "]", nil, true},
		{"not last", "[" + trigger + "," + user + "]", nil, false},
		{"in history", "[" + user + "]", []string{user, trigger}, false},
		{"item then trigger", "[" + item + "," + user + "," + trigger + "]", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var history []json.RawMessage
			for _, h := range tc.history {
				history = append(history, json.RawMessage(h))
			}
			dec, err := ToRequestWith(&Request{Model: "m", Input: json.RawMessage(tc.input)}, history, s.For("k"))
			require.NoError(t, err)
			assert.Equal(t, tc.compaction, dec.Compaction)
			msgs := dec.Request.Messages
			last := msgs[len(msgs)-1].Blocks[0].Text
			assert.Equal(t, tc.compaction, last == CompactionPrompt, last)
			if tc.compaction {
				assert.Equal(t, models.ChoiceNone, dec.Request.Choice.Mode, "no tool may be called")
			}
		})
	}
	dec, err := ToRequestWith(&Request{Model: "m", Input: json.RawMessage("[" + item + "," + user + "]")}, nil, s.For("k"))
	require.NoError(t, err)
	assert.Equal(t, summaryHead+"SUMMARY", dec.Request.Messages[0].Blocks[0].Text)
	assert.Equal(t, models.RoleUser, dec.Request.Messages[0].Role)

	_, err = ToRequest(&Request{Model: "m", Input: json.RawMessage("[" + item + "," + user + "]")}, nil)
	var e *models.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "input[0]", e.Param)
}
