//go:build unix

package handlers

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/native/nativetest"
)

// The door matrix of the agent backend's tests (agentDoors), whose readers
// check every event's exact fields and order, on BACKEND=cursor: what the
// client libraries accept above is also well framed.
func TestNativeBackendFraming(t *testing.T) {
	s, up := newNativeStackWith(t, nativetest.Options{Script: nativeScenarios}, nil)
	forEachDoor(t, func(t *testing.T, door agentDoor, stream bool) {
		a := door.ask(t, s, "composer-2", "SCENARIO:text", stream, false)
		require.Equal(t, http.StatusOK, a.status, a.errMsg)
		assert.Equal(t, "Hello, <b>world</b> & ünïcode ✓", a.text)
		assert.Equal(t, door.stop, a.finish)
		assert.EqualValues(t, 8, a.usageOut)

		a = door.ask(t, s, "composer-2", "SCENARIO:thinking", stream, false)
		require.Equal(t, http.StatusOK, a.status, a.errMsg)
		assert.Equal(t, "The answer is 4.", a.text)
		if door.asksReasoning {
			assert.Equal(t, "The user wants 2+2. That is 4.", a.reasoning)
		} else {
			assert.Empty(t, a.reasoning)
		}

		a = door.ask(t, s, "composer-2", "SCENARIO:tool", stream, true)
		require.Equal(t, http.StatusOK, a.status, a.errMsg)
		assert.Equal(t, door.toolStop, a.finish)
		assert.Equal(t, "Let me check.", strings.TrimSpace(a.text))
		require.Len(t, a.calls, 1)
		assert.Equal(t, "get_weather", a.calls[0].name)
		assert.JSONEq(t, `{"city":"Paris","unit":"c"}`, a.calls[0].args)

		a = door.ask(t, s, "composer-2", "SCENARIO:badmodel", stream, false)
		assert.Equal(t, http.StatusBadRequest, a.status, "a real status before the first byte")
		assert.Equal(t, "invalid_request_error", a.errType)
	})
	// The parked turns of the unanswered calls are still open: the
	// stack's cleanup closes them.
	assert.Len(t, up.Runs(), 2*len(agentDoors)*4, "four scenarios per door, streamed and not")
}
