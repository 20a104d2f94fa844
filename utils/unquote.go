package utils

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// UnquoteJSON decodes the JSON string literal s (quotes included) exactly
// as encoding/json does, lone surrogates and invalid UTF-8 becoming U+FFFD;
// ok is false unless s is one whole literal. It spares the doors' decoders
// encoding/json's two more byte-by-byte scans of an already checked prompt.
func UnquoteJSON(s []byte) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	s = s[1 : len(s)-1]
	// The common case, text without escapes and valid UTF-8, is its bytes.
	plain := 0
	for plain+8 <= len(s) && JSONSpecial8(binary.LittleEndian.Uint64(s[plain:])) == 0 {
		plain += 8
	}
	for plain < len(s) && s[plain] >= 0x20 && s[plain] != '"' && s[plain] != '\\' {
		plain++
	}
	if plain == len(s) {
		if utf8.Valid(s) {
			return string(s), true
		}
		return string(appendValid(make([]byte, 0, len(s)+8), s)), true
	}
	b, ok := AppendJSONUnescaped(make([]byte, 0, len(s)), s, false)
	if !ok {
		return "", false
	}
	return string(b), true
}

// DecodeJSONString decodes the JSON string literal data as encoding/json
// would into a string: by UnquoteJSON, and by encoding/json itself for
// what UnquoteJSON does not take, so that an error is encoding/json's.
func DecodeJSONString(data []byte) (string, error) {
	if s, ok := UnquoteJSON(data); ok {
		return s, nil
	}
	var s string
	err := json.Unmarshal(data, &s)
	return s, err
}

// StringOf is the string v (from checked JSON) as encoding/json reads it;
// ok is false when v is no string. gjson's Str differs only for invalid
// UTF-8, where encoding/json puts U+FFFD, so only then is it decoded again.
func StringOf(v gjson.Result) (string, bool) {
	if v.Type != gjson.String {
		return "", false
	}
	if utf8.ValidString(v.Str) {
		return v.Str, true
	}
	return UnquoteJSON([]byte(v.Raw))
}

// PlainField returns the index in fields (tag names) of the object key key,
// or -1 when no field takes it; seen holds the fields met so far. ok is false
// where encoding/json could read the object differently (a key in another
// case, met twice, or with an escape): the caller then defers to it.
func PlainField(key gjson.Result, fields []string, seen *uint64) (i int, ok bool) {
	name := key.Raw[1 : len(key.Raw)-1]
	for i, f := range fields {
		if !strings.EqualFold(name, f) {
			continue
		}
		if name != f || *seen&(1<<i) != 0 {
			return 0, false
		}
		*seen |= 1 << i
		return i, true
	}
	return -1, strings.IndexByte(name, '\\') < 0
}

// AppendJSONUnescaped appends the body of a JSON string (between its
// quotes) to dst with its escapes decoded, a lone surrogate as U+FFFD.
// Invalid UTF-8 is kept with keepInvalid (as gjson), else each byte becomes
// U+FFFD (as encoding/json). ok is false, dst partly written, when s is not
// one string's body.
func AppendJSONUnescaped(dst, s []byte, keepInvalid bool) (out []byte, ok bool) {
	out, _, ok = unescape(dst, s, keepInvalid, false)
	return out, ok
}

// AppendJSONStringBody is AppendJSONUnescaped of the string body that s
// begins with, up to its closing quote: n is the quote's index in s. ok
// is false as for AppendJSONUnescaped, and when s has no closing quote.
// It is for readers that meet a string in a line they have not cut yet.
func AppendJSONStringBody(dst, s []byte, keepInvalid bool) (out []byte, n int, ok bool) {
	return unescape(dst, s, keepInvalid, true)
}

// unescape decodes s, ending at its first unescaped quote when atQuote
// (a quote is otherwise an error), else at its end.
func unescape(dst, s []byte, keepInvalid, atQuote bool) (out []byte, n int, ok bool) {
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			m := JSONSpecial8(binary.LittleEndian.Uint64(s[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8 // the first special byte
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		if c == '"' && atQuote {
			return appendRun(dst, s[start:i], keepInvalid), i, true
		}
		if c != '\\' || i+1 >= len(s) {
			return dst, 0, false // a quote or a control character inside: not one body
		}
		dst = appendRun(dst, s[start:i], keepInvalid)
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(s[i+2:])
			if !ok {
				return dst, 0, false
			}
			i += 6
			if utf16.IsSurrogate(r) && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
				// A pair is one character; a surrogate alone is U+FFFD
				// (AppendRune's), and a \u after it is read on its own.
				r2, ok := hex4(s[i+2:])
				if !ok {
					return dst, 0, false
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				}
			}
			dst = utf8.AppendRune(dst, r)
			start = i
			continue
		default:
			return dst, 0, false
		}
		i += 2
		start = i
	}
	if atQuote {
		return dst, 0, false // no closing quote
	}
	return appendRun(dst, s[start:], keepInvalid), len(s), true
}

// appendRun appends a run of text without escapes.
func appendRun(dst, s []byte, keepInvalid bool) []byte {
	if keepInvalid {
		return append(dst, s...)
	}
	return appendValid(dst, s)
}

// appendValid appends s with every byte of invalid UTF-8 as U+FFFD, as
// encoding/json reads such bytes in a string.
func appendValid(b, s []byte) []byte {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] < utf8.RuneSelf {
			i++
		}
		b = append(b, s[:i]...)
		s = s[i:]
		if len(s) == 0 {
			break
		}
		r, size := utf8.DecodeRune(s)
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[:size]...)
		}
		s = s[size:]
	}
	return b
}

// hex4 reads the four hex digits of a \u escape.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// DecodeTextOrArray reads a content field that clients send as a string,
// an array, a single object standing for an array of one, or null (which
// calls neither). The outer decoder has checked data: a string is not
// scanned twice more. Any other value is bad.
func DecodeTextOrArray(data []byte, bad error, text func(string) error, array func([]byte) error) error {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0 || bytes.Equal(data, []byte("null")):
		return nil
	case data[0] == '"':
		s, err := DecodeJSONString(data)
		if err != nil {
			return err
		}
		return text(s)
	case data[0] == '[':
		return array(data)
	case data[0] == '{':
		return array(append(append([]byte("["), data...), ']'))
	}
	return bad
}
