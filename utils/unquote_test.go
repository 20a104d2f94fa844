package utils

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tidwall/gjson"
)

// unquotePieces are bits of string literals with every case of the
// decoder: escapes, surrogates (paired, lone, reversed, cut), invalid
// UTF-8, and what is not allowed inside a literal.
var unquotePieces = []string{
	"a", "Z", " ", "é", "漢", "🎉", "\u2028", "<", "&", "\xff", "\xe2\x82", "\xed\xa0\x80", "\xc0\xaf",
	`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00e9`, `\u00E9`, `\u0000`, `\u001f`, `\u2028`,
	`\ud83d`, `\ude00`, `\ud83d\ude00`, `\udbff\udfff`, `\ud800\u0041`, `\ude00\ud83d`, `\ud83d\ud83d\ude00`,
	`\uzzzz`, `\u12`, `\x`, `\`, `\u`, `"`, "\x00", "\t", "\n", "\x1f", "\x7f",
	"plain text of some length", strings.Repeat("abcdefgh", 3),
}

// TestUnquoteJSONMatchesEncodingJSON holds UnquoteJSON, DecodeJSONString
// and StringOf to encoding/json on random literals: the same string where
// encoding/json reads one, and UnquoteJSON's ok false and
// DecodeJSONString's error where it fails.
func TestUnquoteJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	check := func(lit string) {
		t.Helper()
		var want string
		err := json.Unmarshal([]byte(lit), &want)
		got, ok := UnquoteJSON([]byte(lit))
		switch {
		case err != nil && ok:
			t.Fatalf("%q: encoding/json fails (%v), UnquoteJSON reads %q", lit, err, got)
		case err == nil && !ok:
			t.Fatalf("%q: encoding/json reads %q, UnquoteJSON fails", lit, want)
		case ok && got != want:
			t.Fatalf("%q:\nUnquoteJSON:   %q\nencoding/json: %q", lit, got, want)
		}
		if dec, derr := DecodeJSONString([]byte(lit)); (derr == nil) != (err == nil) || dec != want {
			t.Fatalf("%q: DecodeJSONString %q (%v), encoding/json %q (%v)", lit, dec, derr, want, err)
		}
		if err == nil {
			// The same literal as gjson finds it in checked JSON.
			if got, ok := StringOf(gjson.Parse(lit)); !ok || got != want {
				t.Fatalf("%q:\nStringOf:      %q (%v)\nencoding/json: %q", lit, got, ok, want)
			}
		}
	}
	for _, lit := range []string{`""`, `"a"`, `"`, ``, `x`, `"a`, `a"`, `"\"`, `"\u"`, `"\ud83d\u"`, `"abc\ud83d"`} {
		check(lit)
	}
	for range 100000 {
		var b strings.Builder
		b.WriteByte('"')
		for range r.IntN(12) {
			b.WriteString(unquotePieces[r.IntN(len(unquotePieces))])
		}
		b.WriteByte('"')
		check(b.String())
	}
}

func BenchmarkUnquoteJSON(b *testing.B) {
	for name, lit := range map[string]string{
		"2KB plain":   `"` + strings.Repeat("Summarise the design of a small HTTP gateway. ", 45) + `"`,
		"2KB escaped": `"` + strings.Repeat(`line \"one\"\n\tand é `, 100) + `"`,
	} {
		b.Run(name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(lit)))
			for b.Loop() {
				var s string
				_ = json.Unmarshal([]byte(lit), &s)
			}
		})
		b.Run(name+"/UnquoteJSON", func(b *testing.B) {
			b.SetBytes(int64(len(lit)))
			for b.Loop() {
				_, _ = UnquoteJSON([]byte(lit))
			}
		})
	}
}

func TestPlainField(t *testing.T) {
	fields := []string{"type", "text"}
	cases := []struct {
		object string
		want   []int // the field of each key; -2 where the reading gives way
	}{
		{`{"type":1,"text":2}`, []int{0, 1}},
		{`{"image_url":1,"text":2}`, []int{-1, 1}},
		{`{"Text":1}`, []int{-2}},
		{`{"text":1,"text":2}`, []int{1, -2}},
		{`{"t\u0065xt":1}`, []int{-2}},
		{`{"x\u0041":1}`, []int{-2}},
	}
	for _, tc := range cases {
		var seen uint64
		var got []int
		gjson.Parse(tc.object).ForEach(func(key, _ gjson.Result) bool {
			i, ok := PlainField(key, fields, &seen)
			if !ok {
				i = -2
			}
			got = append(got, i)
			return ok
		})
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.object, got, tc.want)
		}
	}
}

func TestDecodeTextOrArray(t *testing.T) {
	bad := errors.New("bad")
	for _, tc := range []struct {
		in, text, array string
		err             error
	}{
		{in: `null`},
		{in: `  `},
		{in: `"h\u00e9"`, text: "hé"},
		{in: ` [1,2] `, array: `[1,2]`},
		{in: `{"type":"text"}`, array: `[{"type":"text"}]`},
		{in: `42`, err: bad},
		{in: `true`, err: bad},
	} {
		var text, array string
		err := DecodeTextOrArray([]byte(tc.in), bad,
			func(s string) error { text = s; return nil },
			func(a []byte) error { array = string(a); return nil })
		assert.Equal(t, tc.err, err, tc.in)
		assert.Equal(t, tc.text, text, tc.in)
		assert.Equal(t, tc.array, array, tc.in)
	}
}
