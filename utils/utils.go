// Package utils holds the small helpers every layer shares: random ids,
// rune-safe clipping of text, and small pieces of JSON. It imports nothing of
// the project. Its sub-package toolproto is the text tool protocol.
package utils

import (
	"crypto/rand"
	"encoding/json"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// Alphabets for RandomString.
const (
	Alphanumerics = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	HexDigits     = "0123456789abcdef"
)

// RandomString returns n characters of alphabet (at most 256 of them)
// drawn from crypto/rand without bias: for triggers, every id the gateway
// makes, and stand-in header values.
func RandomString(alphabet string, n int) string {
	out := make([]byte, 0, n)
	// Bytes from limit up would favour the alphabet's first characters.
	limit := 256 - 256%len(alphabet)
	var buf [32]byte
	for len(out) < n {
		_, _ = rand.Read(buf[:]) // never fails: crypto/rand.Read panics rather than return an error
		for _, b := range buf {
			if int(b) < limit && len(out) < n {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out)
}

// Default returns v, or def when v is zero or less: an option left unset.
func Default[T ~int | ~int32 | ~int64 | ~float64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// CallIDPrefix starts every tool call id the gateway mints.
const CallIDPrefix = "call_"

// NewCallID mints a tool call id: "call_" and 24 alphanumerics. The doors
// re-prefix ids (Anthropic's toolu_), so a result that comes back is known
// by the part after the first '_'.
func NewCallID() string { return CallIDPrefix + RandomString(Alphanumerics, 24) }

// CallIDKey is the part of a call id that survives the doors'
// re-prefixing: what follows its first '_' (all of an id without one).
func CallIDKey(id string) string {
	if _, key, ok := strings.Cut(id, "_"); ok {
		return key
	}
	return id
}

// CallIDAs gives a call id a door's own prefix ("toolu_").
func CallIDAs(prefix, id string) string { return prefix + CallIDKey(id) }

// CutRunes returns s cut to at most n bytes without splitting a rune:
// the gateway's one rune-safe cut. Nothing is left of s when n <= 0.
func CutRunes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// QuoteLen is how much of a client-supplied string (a model name, a role,
// a path) an error message or a log line quotes: enough to recognise it,
// never the whole of a hostile value.
const QuoteLen = 100

// Clip makes a client- or upstream-supplied string fit a log line or an
// error message: runs of white space become one space, and past n bytes
// it is cut at a rune and ends with "…".
func Clip(s string, n int) string {
	if len(s) <= n && clipped(s) {
		return s // the common case, which every request's log line meets: no copy
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return CutRunes(s, n) + "…"
}

// clipped reports whether Clip would leave s as it is but for its
// length: printable ASCII, with single spaces between words. Anything
// else (other white space, a run of it, non-ASCII bytes, which may be
// Unicode spaces) takes Clip's general path.
func clipped(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' {
			if i == 0 || i == len(s)-1 || s[i-1] == ' ' {
				return false
			}
			continue
		}
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// JSONSpace is the white space JSON allows between tokens. Only it is
// trimmed around JSON, so that other white space (a form feed, say) is
// never taken for layout.
const JSONSpace = " \t\r\n"

// IsJSONSpace reports whether c is JSON white space.
func IsJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Bytes repeated in every byte of a word.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// JSONSpecial8 returns the high bits of the bytes of w (little-endian) that
// a JSON string cannot hold raw: control characters, '"' and '\\' (never
// bytes from 0x80). The lowest set bit marks the first; a borrow may mark a
// byte above it, never below. With these "has less"/"has zero" word tricks,
// scanners skip plain text eight bytes at a time.
func JSONSpecial8(w uint64) uint64 {
	quote, backslash := w^(ones*'"'), w^(ones*'\\')
	return ((w-ones*0x20)&^w | (quote-ones)&^quote | (backslash-ones)&^backslash) & highs
}

// StringObject is the JSON object {key: value} as a model writes it: no
// HTML escapes, which would show a < > & in the value as \u003c when the
// object is read back as text.
func StringObject(key, value string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]string{key: value}) // strings always encode
	return strings.TrimSuffix(b.String(), "\n")
}

// plainASCII marks the ASCII bytes a JSON string holds as they are.
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// AppendJSONString appends s as a JSON string, byte for byte as
// encoding/json writes it with HTML escaping off (as a browser's
// JSON.stringify does, but for U+2028 and U+2029): invalid UTF-8 becomes
// U+FFFD, U+2028 and U+2029 are escaped, <, > and & are not. It is for
// the hot paths that build JSON without reflection.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			// Plain ASCII, the bulk of most text, is skipped eight bytes
			// at a time: m has the high bit of every byte that is not
			// plain (special to JSON, or from 0x80), the lowest first.
			w := s[i : i+8]
			x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
				uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
			m := JSONSpecial8(x) | x&0x8080808080808080
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8 // the first byte that is not plain
		}
		if c := s[i]; c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		// Multi-byte characters come in runs (a word, a line of CJK):
		// read the run character by character before looking for plain
		// ASCII again.
		for i < len(s) && s[i] >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				b = append(b, s[start:i]...)
				b = append(b, `\ufffd`...)
				start = i + size
			case r == '\u2028' || r == '\u2029':
				b = append(b, s[start:i]...)
				b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
				start = i + size
			}
			i += size
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
