package door

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeldCall(t *testing.T) {
	var h HeldCall
	require.NoError(t, h.ToolCallStart("c1", "read"))
	assert.Error(t, h.ToolCallStart("c2", "write"), "a second call before the first ended")
	require.NoError(t, h.ToolCallArguments(`{"path":`))
	require.NoError(t, h.ToolCallArguments(""))
	require.NoError(t, h.ToolCallArguments(`"a"}`))
	call, ok := h.EndCall(true)
	require.True(t, ok)
	assert.Equal(t, Call{ID: "c1", Name: "read", Fragments: []string{`{"path":`, `"a"}`}}, call)

	assert.Error(t, h.ToolCallArguments("x"), "arguments outside a call")
	_, ok = h.EndCall(true)
	assert.False(t, ok, "no call to end")

	require.NoError(t, h.ToolCallStart("c3", "edit"), "a call may start once the last ended")
	require.NoError(t, h.ToolCallArguments("{"))
	_, ok = h.EndCall(false)
	assert.False(t, ok, "an incomplete call is dropped")
	require.NoError(t, h.ToolCallStart("c4", "edit"), "and the next starts clean")
	call, ok = h.EndCall(true)
	assert.True(t, ok)
	assert.Empty(t, call.Fragments)
}
