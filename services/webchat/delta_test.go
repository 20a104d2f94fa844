package webchat

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
	"cursor2api/services/upstream"
)

// generalDelta is what the general decoder reads of a frame: the kind
// and text of a text or reasoning delta, ok false for any other frame.
func generalDelta(data []byte) (kind upstream.DeltaKind, text string, ok bool) {
	frame := gjson.ParseBytes(data)
	switch frame.Get("type").String() {
	case "text-delta":
		return upstream.DeltaText, frame.Get("delta").String(), true
	case "reasoning-delta":
		return upstream.DeltaReasoning, frame.Get("delta").String(), true
	}
	return 0, "", false
}

// readDeltas runs frames through a frameReader as attempt does, with or
// without the fast path, and returns what it delivers.
func readDeltas(t testing.TB, frames [][]byte, fast bool) []upstream.Delta {
	f := &frameReader{}
	for _, data := range frames {
		if fast && f.fastDelta(data) {
			continue
		}
		if kind, text, ok := generalDelta(data); ok {
			f.add(kind, text)
		}
	}
	var got []upstream.Delta
	require.NoError(t, f.flush(func(d upstream.Delta) error {
		got = append(got, d)
		return nil
	}))
	return got
}

// checkSame fails when the fast path reads a frame otherwise than the
// general decoder; it reports whether the fast path took the frame.
func checkSame(t testing.TB, data []byte) bool {
	t.Helper()
	f := &frameReader{}
	took := f.fastDelta(data)
	if !took {
		assert.Empty(t, f.pending, "a frame left to the general decoder leaves nothing behind: %q", data)
		return false
	}
	kind, want, ok := generalDelta(data)
	if !ok {
		t.Fatalf("the fast path took a frame the general decoder does not read as a delta: %q", data)
	}
	if string(f.pending) != want {
		t.Fatalf("frame %q:\nfast:    %q\ngeneral: %q", data, f.pending, want)
	}
	if want != "" && f.kind != kind {
		t.Fatalf("frame %q: kind %v, the general decoder reads %v", data, f.kind, kind)
	}
	return true
}

func TestFastDelta(t *testing.T) {
	cases := []struct {
		name, data string
		fast       bool   // the fast path takes it
		text       string // what both read, when fast
	}{
		{"plain", `{"type":"text-delta","id":"t0","delta":"Hello"}`, true, "Hello"},
		{"reasoning", `{"type":"reasoning-delta","id":"r0","delta":"hmm"}`, true, "hmm"},
		{"empty", `{"type":"text-delta","id":"t0","delta":""}`, true, ""},
		{"empty id", `{"type":"text-delta","id":"","delta":"x"}`, true, "x"},
		{"short escapes", `{"type":"text-delta","id":"t0","delta":"q\" b\\ s\/ \b\f\n\r\t"}`, true, "q\" b\\ s/ \b\f\n\r\t"},
		{"escaped backslashes before the end", `{"type":"text-delta","id":"t0","delta":"a\\\\"}`, true, `a\\`},
		{"\\u escapes", `{"type":"text-delta","id":"t0","delta":"\u00e9\u00C9\u20ac\u0000\u001b"}`, true, "éÉ€\x00\x1b"},
		{"surrogate pair", `{"type":"text-delta","id":"t0","delta":"\ud83d\ude00!"}`, true, "😀!"},
		{"lone high surrogate", `{"type":"text-delta","id":"t0","delta":"\ud800x"}`, true, "\ufffdx"},
		{"lone low surrogate", `{"type":"text-delta","id":"t0","delta":"\udc00"}`, true, "\ufffd"},
		{"high surrogate then a letter escape", `{"type":"text-delta","id":"t0","delta":"\ud800\u0041"}`, true, "\ufffdA"},
		{"two high surrogates", `{"type":"text-delta","id":"t0","delta":"\ud800\ud800\udc00"}`, true, "\ufffd𐀀"},
		{"raw UTF-8", `{"type":"text-delta","id":"t0","delta":"漢字 🎉 <b>&amp;</b>"}`, true, "漢字 🎉 <b>&amp;</b>"},
		{"invalid UTF-8 as it is", "{\"type\":\"text-delta\",\"id\":\"t0\",\"delta\":\"a\xff\xe2\x82b\"}", true, "a\xff\xe2\x82b"},
		{"U+2028 raw", "{\"type\":\"text-delta\",\"id\":\"t0\",\"delta\":\"\u2028\u2029\"}", true, "\u2028\u2029"},

		{"other type", `{"type":"text-start","id":"t0"}`, false, ""},
		{"finish", `{"type":"finish","messageMetadata":{"usage":{"inputTokens":1}}}`, false, ""},
		{"other key order", `{"delta":"x","id":"t0","type":"text-delta"}`, false, ""},
		{"id first", `{"id":"t0","type":"text-delta","delta":"x"}`, false, ""},
		{"extra key", `{"type":"text-delta","id":"t0","delta":"x","providerMetadata":{"a":{"b":1}}}`, false, ""},
		{"no id", `{"type":"text-delta","delta":"x"}`, false, ""},
		{"white space", `{"type": "text-delta", "id": "t0", "delta": "x"}`, false, ""},
		{"space before the end", `{"type":"text-delta","id":"t0","delta":"x" }`, false, ""},
		{"after the end", `{"type":"text-delta","id":"t0","delta":"x"}}`, false, ""},
		{"id with an escape", `{"type":"text-delta","id":"t\"0","delta":"x"}`, false, ""},
		{"escaped type", `{"type":"text\u002ddelta","id":"t0","delta":"x"}`, false, ""},
		{"delta not a string", `{"type":"text-delta","id":"t0","delta":1}`, false, ""},
		{"unescaped quote", `{"type":"text-delta","id":"t0","delta":"a"b"}`, false, ""},
		{"quote escaped at the end", `{"type":"text-delta","id":"t0","delta":"a\"}`, false, ""},
		{"unknown escape", `{"type":"text-delta","id":"t0","delta":"a\x"}`, false, ""},
		{"short \\u", `{"type":"text-delta","id":"t0","delta":"a\u12"}`, false, ""},
		{"\\u without hex", `{"type":"text-delta","id":"t0","delta":"a\uzzzz"}`, false, ""},
		{"pair with a bad second half", `{"type":"text-delta","id":"t0","delta":"\ud83d\uzzzz"}`, false, ""},
		{"raw control character", "{\"type\":\"text-delta\",\"id\":\"t0\",\"delta\":\"a\tb\"}", false, ""},
		{"raw control character with an escape", "{\"type\":\"text-delta\",\"id\":\"t0\",\"delta\":\"a\\n\x01b\"}", false, ""},
		{"cut", `{"type":"text-delta","id":"t0","delta":"abc`, false, ""},
		{"not JSON", `text-delta`, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			took := checkSame(t, []byte(tc.data))
			assert.Equal(t, tc.fast, took, "the fast path takes it")
			if tc.fast {
				_, text, _ := generalDelta([]byte(tc.data))
				assert.Equal(t, tc.text, text)
			}
		})
	}
}

// TestFastDeltaUpstreamEncoding: every text as the upstream encodes it
// (JSON.stringify, or Go's encoder) takes the fast path.
func TestFastDeltaUpstreamEncoding(t *testing.T) {
	for _, text := range []string{"", "plain", "line\nbreak \"quoted\" \\", "\x00\x1f\x7f", "<>&\u2028\u2029", "é 漢字 🎉", strings.Repeat("abcdefgh", 32)} {
		delta, err := json.Marshal(text)
		require.NoError(t, err)
		data := []byte(`{"type":"text-delta","id":"0","delta":` + string(delta) + `}`)
		assert.True(t, checkSame(t, data), "%s", data)
	}
}

// TestFastDeltaTakesTheFakesFrames: the fake upstream of the tests and
// the bench writes its deltas as the upstream does, so that what they
// measure is the fast path.
func TestFastDeltaTakesTheFakesFrames(t *testing.T) {
	deltas := 0
	for _, ev := range cursortest.Frames(nil, []string{"plan <b>"}, []string{"Hel", "lo \"world\"\n", "é 🎉"}) {
		if strings.Contains(ev, "-delta") {
			deltas++
			assert.True(t, checkSame(t, []byte(ev)), ev)
		}
	}
	assert.Equal(t, 4, deltas)
}

// TestFastDeltaMerges: the fast path merges runs of a kind as add does,
// also when frames it takes and frames it leaves alternate.
func TestFastDeltaMerges(t *testing.T) {
	frames := [][]byte{
		[]byte(`{"type":"reasoning-delta","id":"r0","delta":"think "}`),
		[]byte(`{"type":"reasoning-delta","id":"r0","delta":"hard"}`),
		[]byte(`{"type":"text-delta","id":"t0","delta":""}`),
		[]byte(`{"type":"reasoning-delta", "id":"r0","delta":"!"}`), // white space: the general decoder
		[]byte(`{"type":"text-delta","id":"t0","delta":"Hel"}`),
		[]byte(`{"type":"text-start","id":"t1"}`),
		[]byte(`{"delta":"lo","id":"t0","type":"text-delta"}`), // key order: the general decoder
		[]byte(`{"type":"text-delta","id":"t0","delta":", world"}`),
		[]byte(`{"type":"reasoning-delta","id":"r1","delta":"more"}`),
	}
	want := []upstream.Delta{
		{Kind: upstream.DeltaReasoning, Text: "think hard!"},
		{Kind: upstream.DeltaText, Text: "Hello, world"},
		{Kind: upstream.DeltaReasoning, Text: "more"},
	}
	assert.Equal(t, want, readDeltas(t, frames, false))
	assert.Equal(t, want, readDeltas(t, frames, true))
}

// deltaPieces are the pieces random delta bodies are made of: every
// escape, cut and odd byte the two decoders could read apart.
var deltaPieces = []string{
	"a", "Z", " ", "é", "漢", "🎉", "\u2028", "<", "&", "\xff", "\xe2\x82", "\xed\xa0\x80",
	`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00e9`, `\u00E9`, `\u0000`, `\u001f`, `\u2028`,
	`\ud83d`, `\ude00`, `\ud83d\ude00`, `\udbff\udfff`, `\ud800\u0041`, `\uzzzz`, `\u12`, `\x`, `\`, `\u`,
	`"`, "\x00", "\t", "\n", "\x1f", "\x7f", "}", "{", ",", ":",
}

// randomFrame is a delta frame, mostly of the upstream's shape, sometimes
// bent: another type, other keys, white space.
func randomFrame(r *rand.Rand) []byte {
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(deltaPieces[r.IntN(len(deltaPieces))])
	}
	body := b.String()
	typ := []string{"text-delta", "reasoning-delta", "text-delta", "text-start", "finish"}[r.IntN(5)]
	switch r.IntN(8) {
	case 0:
		return []byte(`{"delta":"` + body + `","id":"t0","type":"` + typ + `"}`)
	case 1:
		return []byte(`{"type":"` + typ + `","id":"t0","delta":"` + body + `","providerMetadata":{}}`)
	case 2:
		return []byte(`{"type": "` + typ + `", "id": "t0", "delta": "` + body + `"}`)
	case 3:
		return []byte(`{"type":"` + typ + `","id":"` + body + `","delta":"x"}`)
	default:
		return []byte(`{"type":"` + typ + `","id":"t0","delta":"` + body + `"}`)
	}
}

// TestFastDeltaProperty holds the fast path to the general decoder on
// random frames and random sequences of them.
func TestFastDeltaProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	took := 0
	for range 20000 {
		if checkSame(t, randomFrame(r)) {
			took++
		}
	}
	assert.Greater(t, took, 2000, "the fast path is exercised")
	for range 2000 {
		frames := make([][]byte, r.IntN(8))
		for i := range frames {
			frames[i] = randomFrame(r)
		}
		require.Equal(t, readDeltas(t, frames, false), readDeltas(t, frames, true), "%q", frames)
	}
}

// FuzzFastDelta: on any frame, the fast path reads what the general
// decoder reads, or leaves the frame to it.
func FuzzFastDelta(f *testing.F) {
	for _, seed := range []string{
		`{"type":"text-delta","id":"t0","delta":"Hello"}`,
		`{"type":"reasoning-delta","id":"r0","delta":"a\"b\\c\n\u00e9\ud83d\ude00"}`,
		`{"type":"text-delta","id":"t0","delta":"\ud800\u0041\udc00"}`,
		"{\"type\":\"text-delta\",\"id\":\"t0\",\"delta\":\"\xff\t\"}",
		`{"type":"text-delta","id":"t0","delta":"x","providerMetadata":{}}`,
		`{"delta":"x","id":"t0","type":"text-delta"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSame(t, data)
	})
}

// benchFrames are a 1 MB answer's frames, as the bench's fake sends them,
// and prose with line breaks and quotes, which JSON escapes.
var benchFrames = map[string][]byte{
	"256B plain":   []byte(`{"type":"text-delta","id":"t0","delta":"` + strings.Repeat("abcdefgh", 32) + `"}`),
	"256B escaped": []byte(`{"type":"text-delta","id":"t0","delta":"` + strings.Repeat(`say \"hi\"\n  `, 16) + `"}`),
}

func BenchmarkFrameDecode(b *testing.B) {
	for name, data := range benchFrames {
		b.Run(name+"/gjson", func(b *testing.B) {
			f := &frameReader{}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if kind, text, ok := generalDelta(data); ok {
					f.add(kind, text)
				}
				f.pending = f.pending[:0]
			}
		})
		b.Run(name+"/fast", func(b *testing.B) {
			f := &frameReader{}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if !f.fastDelta(data) {
					b.Fatal("not taken")
				}
				f.pending = f.pending[:0]
			}
		})
	}
}
