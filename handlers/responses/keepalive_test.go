package responses

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	oairesp "github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

// TestStreamWriterKeepalive: the keepalive of a silent stream is OpenAI's
// keepalive event, numbered in its place among the real events
// (parseEvents checks 0, 1, 2…); the first one opens the response, none
// follows its end, and each reads in openai-go as an event of its own.
func TestStreamWriterKeepalive(t *testing.T) {
	w, buf := newTestWriter(nil)
	require.NoError(t, w.PingIfIdle(0), "silent from the start: the keepalive opens the response")
	require.NoError(t, w.PingIfIdle(0))
	require.NoError(t, w.Text("Hello"))
	require.NoError(t, w.PingIfIdle(0))
	require.NoError(t, w.PingIfIdle(time.Hour), "not silent for an hour: nothing")
	require.NoError(t, w.Text(" there"))
	require.NoError(t, w.PingIfIdle(0))
	require.NoError(t, w.Finish(models.FinishStop, models.Usage{}))
	require.NoError(t, w.PingIfIdle(0), "after the end: nothing")

	evs := parseEvents(t, buf.String())
	types := eventNames(evs)
	assert.Equal(t, []string{
		EventCreated, EventInProgress, EventKeepalive,
		EventItemAdded, EventPartAdded, EventTextDelta, EventKeepalive, EventTextDelta, EventKeepalive,
		EventTextDone, EventPartDone, EventItemDone, EventCompleted,
	}, types)

	for i, e := range evs {
		if e.Name != EventKeepalive {
			continue
		}
		assert.JSONEq(t, fmt.Sprintf(`{"type":"keepalive","sequence_number":%d}`, i), e.Data.Raw, "event %d: nothing but its place", i)
		var u oairesp.ResponseStreamEventUnion
		require.NoError(t, json.Unmarshal([]byte(e.Data.Raw), &u))
		assert.Equal(t, "keepalive", u.Type)
		assert.EqualValues(t, i, u.SequenceNumber)
	}
	assert.Equal(t, "Hello there", evs[len(evs)-1].Data.Get("response.output.0.content.0.text").String())
}
