package utils

import (
	"strings"
	"testing"
)

// feedChunks runs one whole reply through a parser in chunks of size n.
func feedChunks(opts ParserOptions, reply string, n int) int {
	p := NewParser(opts)
	events := 0
	for i := 0; i < len(reply); i += n {
		events += len(p.Feed(reply[i:min(i+n, len(reply))]))
	}
	return events + len(p.Close())
}

func BenchmarkParserPlainText(b *testing.B) {
	reply := strings.Repeat("The quick brown fox jumps over the lazy dog; if a < b { return a << 2 }.\n", 1<<20/73)
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		feedChunks(tools, reply, 64)
	}
}

func BenchmarkParserToolCalls(b *testing.B) {
	args := `{"path":"internal/server/handler.go","content":"` + strings.Repeat(`package server\n\nfunc handle() error {\n\treturn nil\n}\n`, 40) + `"}`
	reply := "I'll update three files.\n\n" + trig + "\n" +
		`<invoke name="write_file">` + args + "</invoke>\n" +
		`<invoke name="write_file">` + args + "</invoke>\n" +
		`<invoke name="write_file">` + args + "</invoke>"
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		if feedChunks(tools, reply, 16) < 4 {
			b.Fatal("expected text and three calls")
		}
	}
}
