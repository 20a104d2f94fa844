package responses

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMemoryBounds: a connection keeps its last responses within its
// bytes and count, the newest always when it fits alone.
func TestMemoryBounds(t *testing.T) {
	conv := func(n int) []json.RawMessage {
		return []json.RawMessage{json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)}
	}
	m := &memory{maxBytes: 100}
	m.put("a", conv(40))
	m.put("b", conv(50))
	_, ok := m.get("a")
	assert.True(t, ok, "90 bytes fit")
	m.put("c", conv(60))
	_, okA := m.get("a")
	_, okB := m.get("b")
	_, okC := m.get("c")
	assert.False(t, okA, "the oldest goes first")
	assert.False(t, okB, "until the bytes fit")
	assert.True(t, okC)
	m.put("huge", conv(101))
	_, ok = m.get("huge")
	assert.False(t, ok, "a conversation over the bound alone is not kept")
	_, ok = m.get("c")
	assert.True(t, ok, "and evicts nothing")
	assert.LessOrEqual(t, m.bytes, int64(100))

	m = &memory{maxBytes: 1 << 20}
	for i := range maxRemembered + 3 {
		m.put(string(rune('a'+i)), conv(10))
	}
	assert.Len(t, m.kept, maxRemembered, "and its count")
	_, ok = m.get("a")
	assert.False(t, ok)
}

// TestMemoryOwnsItsItems: an item kept is a copy, not a slice of the
// message it came in (which would keep the whole message alive); the
// items the last response holds already are shared, not copied again.
func TestMemoryOwnsItsItems(t *testing.T) {
	msg := []byte(`{"input":[{"a":1}],"tools":"` + strings.Repeat("t", 1000) + `"}`)
	first := []json.RawMessage{msg[10:17]}
	m := &memory{maxBytes: 1 << 20}
	m.put("r1", first)
	kept, _ := m.get("r1")
	copy(msg[10:17], "XXXXXXX")
	assert.Equal(t, `{"a":1}`, string(kept[0]), "a copy, not the message's bytes")

	next := append(kept[:1:1], json.RawMessage(`{"b":2}`))
	m.put("r2", next)
	again, _ := m.get("r2")
	assert.Same(t, &kept[0][0], &again[0][0], "the history is shared with the response before")
	assert.Equal(t, `{"b":2}`, string(again[1]))
}
