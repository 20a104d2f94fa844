package utils

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
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
	b := make([]byte, 0, len(s))
	start := 0
	for i := plain; i < len(s); {
		if i+8 <= len(s) {
			m := JSONSpecial8(binary.LittleEndian.Uint64(s[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		if c != '\\' || i+1 >= len(s) {
			return "", false // a quote or a control character inside: not one literal
		}
		b = appendValid(b, s[start:i])
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(s[i+2:])
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// A pair is one character; anything else is U+FFFD, and
				// a \u that follows is read on its own.
				if r2, ok := hex4(s[min(i+2, len(s)):]); ok && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						b = utf8.AppendRune(b, dec)
						i += 6
						start = i
						continue
					}
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
			start = i
			continue
		default:
			return "", false
		}
		i += 2
		start = i
	}
	return string(appendValid(b, s[start:])), true
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
