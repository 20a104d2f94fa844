package toolproto

import (
	"runtime"
	"strings"
	"testing"

	"cursor2api/models"
)

// manyMessages is a history of n short user messages, the shape of the
// quadratic-merge attack (issue 18, hole 1).
func manyMessages(n int) []models.Message {
	msgs := make([]models.Message, n)
	for i := range msgs {
		msgs[i] = models.Message{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockText, Text: "hi"}}}
	}
	return msgs
}

// TestBuildConversationIsLinear merges 100k consecutive user messages and
// checks that the bytes allocated stay proportional to the output. Merging
// with += would copy the growing text once per message: about n²/2 × 4
// bytes, 20 GB here, instead of a few megabytes.
func TestBuildConversationIsLinear(t *testing.T) {
	const n = 100_000
	msgs := manyMessages(n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	conv, err := BuildConversation(msgs, PromptOptions{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(conv) != 1 || conv[0].Role != models.RoleUser {
		t.Fatalf("got %d turns, want one merged user turn", len(conv))
	}
	if want := strings.Repeat("hi\n\n", n-1) + "hi"; conv[0].Text != want {
		t.Fatalf("merged text of %d bytes, want %d", len(conv[0].Text), len(want))
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	if limit := uint64(64 * len(conv[0].Text)); allocated > limit {
		t.Errorf("allocated %d bytes for %d bytes of conversation: more than linear (limit %d)", allocated, len(conv[0].Text), limit)
	}
}

// BenchmarkBuildConversation100k is the 100k-message merge (2.9 MB of
// requests took 5.5 s of CPU before the merge was made linear).
func BenchmarkBuildConversation100k(b *testing.B) {
	msgs := manyMessages(100_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildConversation(msgs, PromptOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
