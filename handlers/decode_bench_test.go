package handlers

import (
	"os"
	"testing"

	"cursor2api/handlers/anthropic"
	"cursor2api/handlers/responses"
	"cursor2api/utils/jsondec"
)

// BenchmarkDecodeAgentRequest decodes the requests real agents send (the
// recorded Claude Code and Codex turns in testdata: 30 to 50 KB of
// history, tools and tool results) into the core's request, as the doors
// do: the body's JSON (jsondec, as readJSON reads it), then the conversion. MB/s is of the body.
func BenchmarkDecodeAgentRequest(b *testing.B) {
	claude, err := os.ReadFile("testdata/claude_code_tool_rounds.json")
	if err != nil {
		b.Fatal(err)
	}
	codex, err := os.ReadFile("testdata/codex_tool_turn.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("claude_code_messages", func(b *testing.B) {
		b.SetBytes(int64(len(claude)))
		b.ReportAllocs()
		for b.Loop() {
			var r anthropic.MessagesRequest
			if err := jsondec.Unmarshal(claude, &r); err != nil {
				b.Fatal(err)
			}
			if _, err := anthropic.ToRequest(&r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("codex_responses", func(b *testing.B) {
		b.SetBytes(int64(len(codex)))
		b.ReportAllocs()
		for b.Loop() {
			var r responses.Request
			if err := jsondec.Unmarshal(codex, &r); err != nil {
				b.Fatal(err)
			}
			if _, err := responses.ToRequest(&r, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
