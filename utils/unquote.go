package utils

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// UnquoteJSON decodes the JSON string literal s (its quotes included) as
// encoding/json decodes it into a string: the escapes, a surrogate pair
// as its character, a lone surrogate and every byte of invalid UTF-8 as
// U+FFFD. ok is false for anything that is not one whole string literal
// (then encoding/json would have failed too, or read something else).
// It is for the doors' decoders, which meet the prompt as a string the
// outer decoder has checked already: encoding/json would scan it twice
// more, byte by byte, to check and decode it again. Plain text is copied
// eight bytes at a time.
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

// StringOf is the text of v, a string value gjson found in JSON checked
// already, as encoding/json reads it; ok is false when v is not a string.
// gjson has decoded it (its Str), and its reading differs from
// encoding/json's only for invalid UTF-8, which it keeps where
// encoding/json puts U+FFFD: valid UTF-8 is taken as it is (an escape
// always decodes to whole characters, so Str is valid exactly when the
// literal's own bytes are), anything else is read again by UnquoteJSON.
func StringOf(v gjson.Result) (string, bool) {
	if v.Type != gjson.String {
		return "", false
	}
	if utf8.ValidString(v.Str) {
		return v.Str, true
	}
	return UnquoteJSON([]byte(v.Raw))
}

// PlainField finds which of fields (JSON names as the struct's tags have
// them) key, an object's key gjson found in checked JSON, names, for the
// one-pass readings that stand in for encoding/json on plain objects: i
// is its index, -1 for a key no field takes (one encoding/json skips
// too). seen holds the fields met so far in the object. ok is false where
// encoding/json's rules would make the two readings differ, and the
// caller gives way to encoding/json: a key in another case than its
// field's (encoding/json matches keys case-insensitively), one met twice
// (encoding/json keeps the last), and one with an escape (which may
// decode to a field's name).
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

// AppendJSONUnescaped appends the text of the body of a JSON string (what
// is between its quotes) to dst, its escapes decoded: \" \\ \/ \b \f \n
// \r \t and \uXXXX, a surrogate pair as its character and a lone
// surrogate as U+FFFD. Invalid UTF-8 is kept as it is with keepInvalid
// (as gjson reads it), else each of its bytes becomes U+FFFD (as
// encoding/json reads it). ok is false, dst then holding a part of it,
// for what is not the body of one string: a quote or a raw control
// character inside, an unknown or cut escape, a \u without four hex
// digits. Plain text is skipped eight bytes at a time.
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
