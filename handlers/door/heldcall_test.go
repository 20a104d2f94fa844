package door

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeldCall(t *testing.T) {
	var h HeldCall
	require.NoError(t, h.Start("c1", "read"))
	assert.Error(t, h.Start("c2", "write"), "a second call before the first ended")
	require.NoError(t, h.Add(`{"path":`))
	require.NoError(t, h.Add(""))
	require.NoError(t, h.Add(`"a"}`))
	call, ok := h.End(true)
	require.True(t, ok)
	assert.Equal(t, HeldCall{ID: "c1", Name: "read", Fragments: []string{`{"path":`, `"a"}`}, open: true}, call)

	assert.Error(t, h.Add("x"), "arguments outside a call")
	_, ok = h.End(true)
	assert.False(t, ok, "no call to end")

	require.NoError(t, h.Start("c3", "edit"), "a call may start once the last ended")
	require.NoError(t, h.Add("{"))
	_, ok = h.End(false)
	assert.False(t, ok, "an incomplete call is dropped")
	require.NoError(t, h.Start("c4", "edit"), "and the next starts clean")
	call, ok = h.End(true)
	assert.True(t, ok)
	assert.Empty(t, call.Fragments)
}
