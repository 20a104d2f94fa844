package responses

import (
	"encoding/json"
	"testing"
	"time"

	oairesp "github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

// TestStreamWriterKeepalive: the keepalive of a silent stream is
// response.in_progress with the response as opened, numbered in its place
// among the real events (parseEvents checks 0, 1, 2…); the first one opens
// the response, none follows its end, and each reads in openai-go as a
// response.in_progress event.
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
	var types []string
	for _, e := range evs {
		types = append(types, e.Name)
	}
	assert.Equal(t, []string{
		EventCreated, EventInProgress, EventInProgress,
		EventItemAdded, EventPartAdded, EventTextDelta, EventInProgress, EventTextDelta, EventInProgress,
		EventTextDone, EventPartDone, EventItemDone, EventCompleted,
	}, types)

	created := evs[0].Data.Get("response").Raw
	for i, e := range evs {
		if e.Name != EventInProgress {
			continue
		}
		assert.JSONEq(t, created, e.Data.Get("response").Raw, "event %d repeats the response as opened", i)
		var u oairesp.ResponseStreamEventUnion
		require.NoError(t, json.Unmarshal([]byte(e.Data.Raw), &u))
		ev := u.AsResponseInProgress()
		assert.Equal(t, "response.in_progress", string(ev.Type))
		assert.EqualValues(t, i, ev.SequenceNumber)
		assert.Equal(t, "resp_test", ev.Response.ID)
		assert.Equal(t, oairesp.ResponseStatusInProgress, ev.Response.Status)
	}
	assert.Equal(t, "Hello there", evs[len(evs)-1].Data.Get("response.output.0.content.0.text").String())
}
