package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/handlers/sse"
	"cursor2api/models"
)

// trickyTexts have every case where JSON encoders differ: quotes and
// backslashes, control characters, HTML's <, > and & (escaped inside
// output items only), U+2028 and U+2029, invalid UTF-8, white space alone
// (held until text follows), and no text at all.
var trickyTexts = []string{
	"Hello", ` "quoted" \back\ `, "line\nbreak\r\ttab\b\f", "\x00\x01\x1f\x7f", "<b>&amp;</b> a<b", "\u2028\u2029",
	"bad \xff utf-8 \xe2\x82", "\xed\xa0\x80 surrogate", "é 漢字 🎉", " ", "\n", "", strings.Repeat("long <&> ", 300),
}

// sameIDs replaces each random output item id (msg_, rs_ or fc_ and 32
// letters or digits) by its number of first appearance, so that two
// writers' streams compare byte for byte.
func sameIDs(s string) string {
	seen := map[string]string{}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '_')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for _, p := range []string{"msg", "rs", "fc", "tsc"} {
			if strings.HasSuffix(s[:i], p) {
				start = i - len(p)
			}
		}
		end := i + 1
		for end < len(s) && end-i <= 32 && isAlnum(s[end]) {
			end++
		}
		if start == i || end-i != 33 {
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		id := s[start:end]
		if _, ok := seen[id]; !ok {
			seen[id] = fmt.Sprintf("%s_%032d", s[start:i], len(seen))
		}
		b.WriteString(s[:start])
		b.WriteString(seen[id])
		s = s[end:]
	}
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// sink is what both writers are: the chat.Sink methods and Error.
type sink interface {
	Text(string) error
	Reasoning(string) error
	ToolCallStart(id, name string) error
	ToolCallArguments(string) error
	ToolCallEnd(bool) error
	Finish(models.FinishReason, models.Usage) error
	Error(*models.Error) error
}

// step is one call of the core on a writer.
type step func(sink) error

// bothWrite plays steps on a StreamWriter and on the reflective writer of
// the same response, and fails unless they write the same bytes, return
// the same errors and end with the same response.
func bothWrite(t *testing.T, base Response, names Names, steps []step) *StreamWriter {
	t.Helper()
	var fast, slow bytes.Buffer
	fw := NewStreamWriter(sse.NewWriter(&fast, nil, nil, nil), base, names)
	rw := newReflectWriter(sse.NewWriter(&slow, nil, nil, nil), base, names)
	for i, st := range steps {
		ferr, rerr := st(fw), st(rw)
		require.Equal(t, fmt.Sprint(rerr), fmt.Sprint(ferr), "step %d", i)
	}
	require.Equal(t, sameIDs(slow.String()), sameIDs(fast.String()), "the stream, byte for byte")
	fr, err := json.Marshal(fw.Response())
	require.NoError(t, err)
	rr, err := json.Marshal(rw.Response())
	require.NoError(t, err)
	require.Equal(t, sameIDs(string(rr)), sameIDs(string(fr)), "the response")
	want, err := OutputItems(fw.Response())
	require.NoError(t, err)
	require.Equal(t, want, append([]json.RawMessage{}, fw.OutputItems()...), "the stored items, without encoding them again")
	return fw
}

// trickyBase is a response whose echoed settings need escaping too.
func trickyBase() Response {
	maxOut := 100
	return NewResponse("resp_<&>", 1700000000, &Request{
		Model: "m <x> \u2028", Instructions: "be \"kind\" <b>\n", MaxOutputTokens: &maxOut,
		Tools:    []json.RawMessage{json.RawMessage(`{ "type": "function", "name": "f<g>", "parameters": {"a": "&"} }`)},
		Metadata: map[string]string{"k<": "v&\xff"},
	})
}

func TestStreamWriterMatchesReflection(t *testing.T) {
	names := Names{"crm__find": {Namespace: "crm", Name: "find"}, "o<d>&": {Name: "o<d>&"}, SearchToolName: {Name: SearchToolName, Search: true}}
	for _, text := range trickyTexts {
		t.Run(fmt.Sprintf("%q", text), func(t *testing.T) {
			bothWrite(t, trickyBase(), names, []step{
				func(w sink) error { return w.Reasoning(text) },
				func(w sink) error { return w.Reasoning("…" + text) },
				func(w sink) error { return w.Text(text) },
				func(w sink) error { return w.Text(text + "!") },
				func(w sink) error { return w.ToolCallStart("call_<1>", "crm__find") },
				func(w sink) error { return w.ToolCallArguments(`{"q":` + fmt.Sprintf("%q", text)) },
				func(w sink) error { return w.ToolCallArguments(`}`) },
				func(w sink) error { return w.ToolCallEnd(true) },
				func(w sink) error { return w.ToolCallStart("call_2", "o<d>&") },
				func(w sink) error { return w.ToolCallArguments(text) },
				func(w sink) error { return w.ToolCallEnd(false) },
				func(w sink) error { return w.ToolCallStart("call_<s>", SearchToolName) },
				func(w sink) error { return w.ToolCallArguments(`{ "query" : ` + fmt.Sprintf("%q", text)) },
				func(w sink) error { return w.ToolCallArguments(` }`) },
				func(w sink) error { return w.ToolCallEnd(true) },
				func(w sink) error { return w.ToolCallStart("call_s2", SearchToolName) },
				func(w sink) error { return w.ToolCallArguments(text) },
				func(w sink) error { return w.ToolCallEnd(false) },
				func(w sink) error { return w.Text(text) },
				func(w sink) error { return w.ToolCallStart("call_3", "cut") },
				func(w sink) error { return w.ToolCallArguments(text) },
				func(w sink) error {
					return w.Finish(models.FinishToolCalls, models.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3})
				},
			})
		})
	}
	t.Run("characters split between pieces", func(t *testing.T) {
		// Each piece alone is invalid UTF-8; together they are é, 😀 and
		// U+2028, which encode otherwise than their halves.
		bothWrite(t, trickyBase(), names, []step{
			func(w sink) error { return w.Reasoning("\xf0\x9f") },
			func(w sink) error { return w.Reasoning("\x98\x80") },
			func(w sink) error { return w.Text("caf\xc3") },
			func(w sink) error { return w.Text("\xa9 \xe2\x80") },
			func(w sink) error { return w.Text("\xa8!") },
			func(w sink) error { return w.ToolCallStart("call_1", "crm__find") },
			func(w sink) error { return w.ToolCallArguments(`{"q":"\xc3`) },
			func(w sink) error { return w.ToolCallArguments(`\xa9"}`) },
			func(w sink) error { return w.ToolCallEnd(true) },
			func(w sink) error { return w.Finish(models.FinishToolCalls, models.Usage{}) },
		})
	})
	t.Run("failure", func(t *testing.T) {
		bothWrite(t, trickyBase(), names, []step{
			func(w sink) error { return w.Text("Part <of> it") },
			func(w sink) error {
				return w.Error(&models.Error{Status: 502, Kind: models.KindAPI, Code: "upstream_error", Message: "bad <gateway>"})
			},
		})
	})
	t.Run("incomplete details", func(t *testing.T) {
		base := trickyBase()
		details := json.RawMessage(`{"reason":"x","output":null,"y":1}`)
		base.IncompleteDetails = &details
		bothWrite(t, base, names, []step{
			func(w sink) error { return w.Text("text") },
			func(w sink) error { return w.Finish(models.FinishStop, models.Usage{}) },
		})
	})
}

// TestStreamWriterMatchesReflectionRandomly plays random answers.
func TestStreamWriterMatchesReflectionRandomly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	text := func() string {
		var b strings.Builder
		for range r.IntN(3) + 1 {
			b.WriteString(trickyTexts[r.IntN(len(trickyTexts))])
		}
		return b.String()
	}
	for range 200 {
		var steps []step
		inCall := false
		for range r.IntN(20) {
			s := text()
			if r.IntN(3) == 0 {
				// Cut inside a character, now and then.
				cut := r.IntN(len(s) + 1)
				s, rest := s[:cut], s[cut:]
				steps = append(steps, func(w sink) error { return w.Text(s) }, func(w sink) error { return w.Text(rest) })
				continue
			}
			switch k := r.IntN(6); {
			case inCall && k < 3:
				steps = append(steps, func(w sink) error { return w.ToolCallArguments(s) })
			case inCall && k == 3:
				complete := r.IntN(2) == 0
				steps = append(steps, func(w sink) error { return w.ToolCallEnd(complete) })
				inCall = false
			case k < 2:
				steps = append(steps, func(w sink) error { return w.Text(s) })
			case k < 4:
				steps = append(steps, func(w sink) error { return w.Reasoning(s) })
			default:
				name := "crm__find"
				if r.IntN(3) == 0 {
					name = SearchToolName
				}
				steps = append(steps, func(w sink) error { return w.ToolCallStart("call_"+s, name) })
				inCall = true
			}
		}
		if r.IntN(5) == 0 {
			steps = append(steps, func(w sink) error { return w.Error(&models.Error{Status: 504, Message: "late"}) })
		} else {
			steps = append(steps, func(w sink) error { return w.Finish(models.FinishStop, models.Usage{TotalTokens: 9}) })
		}
		bothWrite(t, trickyBase(), Names{"crm__find": {Namespace: "crm", Name: "find"}, SearchToolName: {Name: SearchToolName, Search: true}}, steps)
	}
}

// TestHTMLEscaped: escaping <, > and & after encoding is json.Marshal's
// escaping.
func TestHTMLEscaped(t *testing.T) {
	for _, text := range append(trickyTexts, "&&<<>>", "\\u003c <") {
		want, err := json.Marshal(text)
		require.NoError(t, err)
		assert.Equal(t, "x"+string(want), string(appendHTMLEscaped([]byte("x"), sse.AppendString(nil, text))), "%q", text)
		assert.Equal(t, "x"+string(want), string(appendStringHTML([]byte("x"), text)), "%q", text)
	}
}

// BenchmarkResponsesStream1MB is the door's cost of a 1 MB answer in 4,096
// text deltas, from the first event to response.completed.
func BenchmarkResponsesStream1MB(b *testing.B) {
	chunk := strings.Repeat("abcdefgh", 32)
	base := NewResponse("resp_bench", 1700000000, &Request{Model: "m"})
	for _, tc := range []struct {
		name string
		new  func(*sse.Writer) sink
	}{
		{"append", func(w *sse.Writer) sink { return NewStreamWriter(w, base, nil) }},
		{"reflect", func(w *sse.Writer) sink { return newReflectWriter(w, base, nil) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var out bytes.Buffer
			b.SetBytes(4096 * int64(len(chunk)))
			b.ReportAllocs()
			for b.Loop() {
				out.Reset()
				w := tc.new(sse.NewWriter(&out, nil, nil, nil))
				for range 4096 {
					if err := w.Text(chunk); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Finish(models.FinishStop, models.Usage{TotalTokens: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
