package utils

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRandomString(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		s := RandomString(Alphanumerics, 24)
		assert.Regexp(t, `^[A-Za-z0-9]{24}$`, s)
		assert.False(t, seen[s], "ids repeat")
		seen[s] = true
	}
	assert.Regexp(t, `^[0-9a-f]{64}$`, RandomString(HexDigits, 64))
	assert.Empty(t, RandomString(Alphanumerics, 0))
	// Every character of the alphabet comes up about as often.
	counts := map[rune]int{}
	for _, r := range RandomString("abc", 30000) {
		counts[r]++
	}
	for _, r := range "abc" {
		assert.InDelta(t, 10000, counts[r], 600, "%c is drawn without bias", r)
	}
}

// TestNewCallID: the one form of the gateway's call ids, which the
// doors re-prefix and the native back door matches after the first '_'.
func TestNewCallID(t *testing.T) {
	a, b := NewCallID(), NewCallID()
	assert.Regexp(t, `^call_[A-Za-z0-9]{24}$`, a)
	assert.True(t, strings.HasPrefix(a, CallIDPrefix))
	assert.NotEqual(t, a, b)
}

func TestCallIDKeyAndAs(t *testing.T) {
	for _, tc := range []struct{ id, key, toolu string }{
		{"call_abc", "abc", "toolu_abc"},
		{"toolu_abc", "abc", "toolu_abc"},    // a door's id comes back to the same key
		{"mcptoolu_a_b", "a_b", "toolu_a_b"}, // only the first '_' parts the prefix
		{"plain", "plain", "toolu_plain"},    // a client's own id without one
		{"", "", "toolu_"},
	} {
		assert.Equal(t, tc.key, CallIDKey(tc.id), tc.id)
		assert.Equal(t, tc.toolu, CallIDAs("toolu_", tc.id), tc.id)
	}
	id := NewCallID()
	assert.Equal(t, CallIDKey(id), CallIDKey(CallIDAs("fc_", id)), "a minted id survives re-prefixing")
}

func TestCutRunesAndClip(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		cut  string
		clip string
	}{
		{"hello", 10, "hello", "hello"},
		{"hello", 3, "hel", "hel…"},
		{"héllo", 2, "h", "h…"}, // é is two bytes: never split
		{"a  b\n\tc", 10, "a  b\n\tc", "a b c"},
		{"日本語", 4, "日", "日…"},
		{"", 0, "", ""},
		{" lead", 10, " lead", "lead"},
		{"trail ", 10, "trail ", "trail"},
		{"a b", 3, "a b", "a b"},
		{"a\u00a0b", 10, "a\u00a0b", "a b"}, // a Unicode space
		{"/v1/chat/completions", 100, "/v1/chat/completions", "/v1/chat/completions"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.cut, CutRunes(tc.in, tc.n), "CutRunes(%q, %d)", tc.in, tc.n)
		assert.True(t, utf8.ValidString(CutRunes(tc.in, tc.n)))
		assert.Equal(t, tc.clip, Clip(tc.in, tc.n), "Clip(%q, %d)", tc.in, tc.n)
	}
	// A budget already spent (the core's cap on a reply) cuts to nothing.
	assert.Empty(t, CutRunes("héllo", 0))
	assert.Empty(t, CutRunes("héllo", -3))
}

// TestClipFastPath checks the copy-free path against the general one on
// every short string of a few telling bytes.
func TestClipFastPath(t *testing.T) {
	alphabet := []string{"a", " ", "\t", "\n", "\u00a0", "é", "~", "\x7f"}
	var walk func(prefix string, depth int)
	walk = func(prefix string, depth int) {
		want := strings.Join(strings.Fields(prefix), " ")
		if len(want) > 4 {
			want = CutRunes(want, 4) + "…"
		}
		assert.Equal(t, want, Clip(prefix, 4), "Clip(%q, 4)", prefix)
		if depth == 0 {
			return
		}
		for _, c := range alphabet {
			walk(prefix+c, depth-1)
		}
	}
	walk("", 4)
}

func TestJSONSpace(t *testing.T) {
	for c := 0; c < 256; c++ {
		assert.Equal(t, strings.IndexByte(JSONSpace, byte(c)) >= 0, IsJSONSpace(byte(c)), "byte %#x", c)
	}
	assert.False(t, IsJSONSpace('\f'), "a form feed is not JSON white space")
}

// TestJSONSpecial8 holds the word-at-a-time search to a byte-by-byte one:
// whether a special byte is there, and where the first is.
func TestJSONSpecial8(t *testing.T) {
	first := func(b []byte) int {
		for i, c := range b {
			if c < 0x20 || c == '"' || c == '\\' {
				return i
			}
		}
		return -1
	}
	check := func(w []byte) {
		t.Helper()
		m := JSONSpecial8(binary.LittleEndian.Uint64(w))
		got := -1
		if m != 0 {
			got = bits.TrailingZeros64(m) / 8
		}
		require.Equal(t, first(w), got, "%q", w)
	}
	for pos := range 8 {
		for c := range 256 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			check(w)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	word := make([]byte, 8)
	for range 200000 {
		for i := range word {
			word[i] = []byte{byte(r.IntN(256)), byte(r.IntN(256)), 'a', 0x80, 0xff, 0x1f, 0x20, '"', '\\', 0x21, 0x5d, 0x00, 0xa2, 0xdc}[r.IntN(14)]
		}
		check(word)
	}
}

func TestStringObject(t *testing.T) {
	for value, want := range map[string]string{
		"":                    `{"k":""}`,
		"a <b> & \"c\"\n\t\\": `{"k":"a <b> & \"c\"\n\t\\"}`,
		"é \u2028":            `{"k":"é \u2028"}`,
	} {
		got := StringObject("k", value)
		if got != want {
			t.Errorf("StringObject(%q) = %s, want %s", value, got, want)
		}
		var back map[string]string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back["k"] != value {
			t.Errorf("StringObject(%q) = %s does not read back: %v", value, got, err)
		}
	}
}

func TestDefault(t *testing.T) {
	assert.Equal(t, 5*time.Second, Default(0, 5*time.Second))
	assert.Equal(t, 5*time.Second, Default(-time.Second, 5*time.Second), "a negative option is unset too")
	assert.Equal(t, time.Second, Default(time.Second, 5*time.Second))
	assert.Equal(t, 7, Default(7, 100))
	assert.Equal(t, 0.5, Default(0, 0.5))
}
