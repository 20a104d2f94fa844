package toolproto

import (
	"strings"
	"testing"
)

// feedInChunks runs a whole reply through a new parser in chunks of n bytes
// and returns the number of events.
func feedInChunks(opts ParserOptions, reply string, n int) int {
	p := NewParser(opts)
	events := 0
	for i := 0; i < len(reply); i += n {
		events += len(p.Feed(reply[i:min(i+n, len(reply))]))
	}
	return events + len(p.Close())
}

// benchProse is about 1 MB of prose and code with the '<' characters that
// make the parser look closer.
func benchProse() string {
	const para = "The handler reads the request, checks that len(body) < limit and that a <= b, " +
		"then streams the answer back. In Go, ch <- v sends and x << 2 shifts; in HTML, <br/> breaks a line.\n\n"
	return strings.Repeat(para, (1<<20)/len(para)+1)[:1<<20]
}

// benchToolReply is a realistic reply: some text and three tool calls with
// about 2 KB of arguments each, then a closing remark.
func benchToolReply() string {
	content := strings.Repeat(`package server\n\nfunc handle(w http.ResponseWriter, r *http.Request) error {\n\treturn nil\n}\n`, 22)
	var b strings.Builder
	b.WriteString("I'll update the three handlers so that each returns an error instead of panicking.\n\n")
	b.WriteString(trig + "\n")
	for _, name := range []string{"a", "b", "c"} {
		b.WriteString(`<invoke name="write_file">{"path": "internal/server/` + name + `.go", "content": "` + content + `"}</invoke>` + "\n")
	}
	b.WriteString("\nThat should do it.")
	return b.String()
}

func BenchmarkParserPlainText(b *testing.B) {
	reply := benchProse()
	if got := merged(feed(tools, []string{reply})); len(got) != 1 || got[0].Text != reply {
		b.Fatal("plain text is not passed through unchanged")
	}
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		feedInChunks(tools, reply, 64)
	}
}

// BenchmarkParserToolCalls reads the calls whole, as for a held turn, and
// with their arguments streamed, as for a live one.
func BenchmarkParserToolCalls(b *testing.B) {
	reply := benchToolReply()
	for _, stream := range []bool{false, true} {
		opts := tools
		opts.StreamArgs = stream
		name := "whole"
		if stream {
			name = "streamed"
		}
		b.Run(name, func(b *testing.B) {
			calls := 0
			for _, e := range unstreamed(b, feed(opts, strings.SplitAfter(reply, "\\n"))) {
				if e.Kind == EventToolCall {
					calls++
					if n := len(e.Arguments); n < 1800 || n > 2600 {
						b.Fatalf("arguments of %d bytes, want about 2 KB", n)
					}
				}
			}
			if calls != 3 {
				b.Fatalf("%d tool calls, want 3", calls)
			}
			b.SetBytes(int64(len(reply)))
			b.ReportAllocs()
			for b.Loop() {
				if feedInChunks(opts, reply, 16) < 5 {
					b.Fatal("expected text, three calls and text")
				}
			}
		})
	}
}
