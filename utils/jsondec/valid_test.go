package jsondec

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValid(t *testing.T) {
	cases := []string{
		``, ` `, `{}`, ` { } `, `[]`, `[ ]`, `{"a":1}`, `{"a" : 1 , "b":[true,false,null]}`,
		`{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `[1 2]`,
		`"x"`, `"`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\u00e9\uD83D\uDE00"`, `"\u12"`, `"\u12g4"`, `"\x"`,
		"\"a\tb\"", "\"a\x00\"", "\"\xff\xfe\"", "\"\xed\xa0\x80\"", `"a"b`, `"a" "b"`,
		`0`, `-0`, `01`, `-`, `1.`, `.1`, `1.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-1.5e10`, `+1`, `1x`,
		`true`, `tru`, `truex`, `false`, `null`, `nul`, `nulll`, `True`,
		`[[[[]]]]`, `[[[[]]]`, `[{"a":[{"b":{}}]}]`, `{"a":{"b":{"c":[1,{"d":null}]}}}`, `]`, `}`, `{]`, `[}`,
		"\t\n\r {}\n", "\v{}", "{}\u00a0",
		strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
		strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
		strings.Repeat(`{"a":`, maxDepth) + "1" + strings.Repeat("}", maxDepth),
		strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1),
	}
	for _, c := range cases {
		want := json.Valid([]byte(c))
		got := Valid([]byte(c))
		// Stricter is allowed at the depth limit only (encoding/json then
		// answers); everywhere else the two agree.
		assert.Equal(t, want, got, "%.40q", c)
	}
}

// TestValidMatchesEncodingJSON compares Valid with json.Valid on random
// mutations of JSON texts: deleted, doubled, swapped and replaced bytes
// near the places that decide validity.
func TestValidMatchesEncodingJSON(t *testing.T) {
	seeds := []string{
		`{"model":"m","messages":[{"role":"user","content":"hi \"there\" \u00e9\n"}],"stream":true,"n":-1.5e3,"x":null,"y":false}`,
		`[1,2.5,-0,1e10,"a\\b",{"k":[[],{}]},true,null]`,
		`{"a":{"b":{"c":[{"d":"\uD83D\uDE00"}]}}}`,
	}
	alphabet := []byte("{}[]\":,\\ \t\n0123456789-+.eEtrufalsn\x00\x1f\x7f\xff\xc3\xa9u/bfA")
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		b := []byte(seeds[r.IntN(len(seeds))])
		for range 1 + r.IntN(3) {
			i := r.IntN(len(b))
			switch r.IntN(4) {
			case 0:
				b = append(b[:i], b[i+1:]...)
			case 1:
				b = append(b[:i+1], b[i:]...)
			case 2:
				b[i] = alphabet[r.IntN(len(alphabet))]
			case 3:
				j := r.IntN(len(b))
				b[i], b[j] = b[j], b[i]
			}
			if len(b) == 0 {
				b = []byte{alphabet[r.IntN(len(alphabet))]}
			}
		}
		if Valid(b) != json.Valid(b) {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, Valid(b), json.Valid(b))
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,"b",null]}`, `"\u00e9"`, `-1.5e-3`, `[[]]`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if Valid(b) != json.Valid(b) {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, Valid(b), json.Valid(b))
		}
	})
}

func TestMembersAndElements(t *testing.T) {
	var got []string
	ok := members([]byte(`{ "a" : 1 , "b\"c":[1, {"x":"]"}] ,"d":"}" }`), func(k, v []byte) bool {
		got = append(got, string(k)+"="+string(v))
		return true
	})
	assert.True(t, ok)
	assert.Equal(t, []string{`a=1`, `b\"c=[1, {"x":"]"}]`, `d="}"`}, got)

	got = nil
	ok = elements([]byte(`[ 1 ,"a,b", [2,3] ,{"k":"v"},true ]`), func(v []byte) bool {
		got = append(got, string(v))
		return len(got) < 4
	})
	assert.False(t, ok, "stops when fn does")
	assert.Equal(t, []string{`1`, `"a,b"`, `[2,3]`, `{"k":"v"}`}, got)
}

// TestElements holds Elements' split of checked arrays to encoding/json's
// (each element's bytes as a json.RawMessage has them), white space
// around the array and its elements included.
func TestElements(t *testing.T) {
	for _, c := range []string{
		`[]`, ` [ ] `, "\n[\t1 ]\r\n", `[{"type":"message","content":[{"text":"a],\"b"}]}, "x" ,[[]], null,-1.5e3,{}]`,
		`["\u005d", "\\", "ü"]`,
	} {
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(c), &want); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		var got []json.RawMessage
		assert.True(t, Elements([]byte(c), func(e []byte) bool {
			got = append(got, e)
			return true
		}), c)
		if len(want) == 0 {
			assert.Empty(t, got, c)
			continue
		}
		assert.Equal(t, want, got, c)
	}
	for _, notArray := range []string{``, ` `, `{}`, `"[]"`, `1`} {
		assert.False(t, Elements([]byte(notArray), func([]byte) bool { t.Fatal("called"); return true }), notArray)
	}
}
