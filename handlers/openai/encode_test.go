package openai

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"cursor2api/handlers/sse"
	"cursor2api/models"
)

// encodeStrings are texts whose JSON encoding has every special case.
var encodeStrings = []string{
	"", "plain", `quote " and backslash \`, "new\nline\r\ttab", "\b\f\x00\x01\x1f\x7f",
	"<html> & 'apostrophe'", "é ü 漢字 🎉", "\u2028\u2029", "bad \xff utf-8 \xe2\x82", "\xed\xa0\x80 surrogate",
	strings.Repeat("long ", 2000),
}

// TestTextChunkMatchesEncodingJSON holds the append-style encoder of text
// chunks to the bytes the reflective encoder writes for the same chunk.
func TestTextChunkMatchesEncodingJSON(t *testing.T) {
	for _, id := range []string{"chatcmpl-abc", "odd \"id\"\n"} {
		for _, text := range encodeStrings {
			for _, field := range []string{"content", "reasoning_content"} {
				var fast, slow bytes.Buffer
				fw := NewStreamWriter(sse.NewWriter(&fast, nil, nil, nil), id, "model <x>\u2028", 1700000000, false)
				sw := NewStreamWriter(sse.NewWriter(&slow, nil, nil, nil), id, "model <x>\u2028", 1700000000, false)
				fw.started, sw.started = true, true
				text := text
				d := Delta{Content: &text}
				if field == "reasoning_content" {
					d = Delta{ReasoningContent: text}
				}
				if text == "" {
					continue
				}
				if err := fw.textChunk(field, text); err != nil {
					t.Fatal(err)
				}
				if err := sw.chunk(d, nil); err != nil {
					t.Fatal(err)
				}
				if fast.String() != slow.String() {
					t.Errorf("%s %q:\nappend:  %s\nreflect: %s", field, text, fast.String(), slow.String())
				}
				data := bytes.TrimSuffix(bytes.TrimPrefix(fast.Bytes(), []byte("data: ")), []byte("\n\n"))
				if !json.Valid(data) {
					t.Errorf("not JSON: %s", data)
				}
			}
		}
	}
}

func BenchmarkTextChunk(b *testing.B) {
	w := NewStreamWriter(sse.NewWriter(&bytes.Buffer{}, nil, nil, nil), "chatcmpl-abcdefghijklmnopqrstuvwx", "claude-sonnet-4.6", 1700000000, false)
	w.started = true
	b.ReportAllocs()
	for b.Loop() {
		_ = w.Text("word00042 ")
	}
}

// TestFixedChunksMatchEncodingJSON holds the role chunk and the finish
// chunk, appended by hand, to the bytes the reflective encoder writes.
func TestFixedChunksMatchEncodingJSON(t *testing.T) {
	for _, id := range []string{"chatcmpl-abc", "odd \"id\"\n"} {
		var fast, slow bytes.Buffer
		fw := NewStreamWriter(sse.NewWriter(&fast, nil, nil, nil), id, "model <x>\u2028", 1700000000, false)
		sw := NewStreamWriter(sse.NewWriter(&slow, nil, nil, nil), id, "model <x>\u2028", 1700000000, false)
		if err := fw.open(); err != nil {
			t.Fatal(err)
		}
		empty := ""
		if err := sw.chunk(Delta{Role: "assistant", Content: &empty}, nil); err != nil {
			t.Fatal(err)
		}
		for _, r := range []models.FinishReason{models.FinishStop, models.FinishLength, models.FinishToolCalls} {
			if err := fw.fixedChunk(`},"finish_reason":"`, finishReason(r), `"}]}`); err != nil {
				t.Fatal(err)
			}
			reason := finishReason(r)
			if err := sw.chunk(Delta{}, &reason); err != nil {
				t.Fatal(err)
			}
		}
		if fast.String() != slow.String() {
			t.Errorf("id %q:\nappend:  %s\nreflect: %s", id, fast.String(), slow.String())
		}
	}
}
