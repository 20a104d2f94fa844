package webchat

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"

	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// The upstream writes every text and reasoning delta in one fixed shape,
// {"type":"text-delta","id":"<id>","delta":"<text>"}: the Vercel AI SDK
// builds the object with its keys in that order and JSON.stringify adds no
// white space. These are nearly all of its frames, so they are decoded
// here, in one pass over the bytes, and only other frames go through
// gjson's object walk.
var (
	textDeltaHead      = []byte(`{"type":"text-delta","id":"`)
	reasoningDeltaHead = []byte(`{"type":"reasoning-delta","id":"`)
	deltaKey           = []byte(`","delta":"`)
	frameTail          = []byte(`"}`)
)

// fastDelta takes data when it is a text or reasoning delta of the fixed
// shape whose text it can decode exactly as the general decoder
// (gjson's Get(...).String()) does, and adds that text to the pending run
// as add would. It reports false, leaving f as it was, for anything else:
// another type, other keys or their order, white space, an id with a
// quote or backslash, a raw control character, an escape gjson would stop
// at or read as something else. The general decoder reads those.
func (f *frameReader) fastDelta(data []byte) bool {
	var kind upstream.DeltaKind
	var rest []byte
	var ok bool
	if rest, ok = bytes.CutPrefix(data, textDeltaHead); ok {
		kind = upstream.DeltaText
	} else if rest, ok = bytes.CutPrefix(data, reasoningDeltaHead); ok {
		kind = upstream.DeltaReasoning
	} else {
		return false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest[end:], deltaKey); !ok {
		return false
	}
	if rest, ok = bytes.CutSuffix(rest, frameTail); !ok {
		return false
	}
	mark := len(f.pending)
	out, ok := appendJSONText(f.pending, rest)
	if !ok {
		f.pending = out[:mark]
		return false
	}
	f.pending = out
	if len(out) == mark {
		return true // an empty delta adds nothing, as in add
	}
	if mark > 0 && f.kind != kind {
		f.carry = append(f.carry, upstream.Delta{Kind: f.kind, Text: string(out[:mark])})
		f.pending = append(out[:0], out[mark:]...)
	}
	f.kind = kind
	return true
}

// appendJSONText appends the text of the body of a JSON string (between
// its quotes) to dst, decoded as gjson decodes it: bytes as they are,
// invalid UTF-8 included; the escapes \" \\ \/ \b \f \n \r \t and \uXXXX,
// a surrogate pair as its character and a lone surrogate as U+FFFD. ok
// is false where gjson would read something else than a whole string:
// an unescaped quote (the string ends early), a raw control character
// (gjson's unescape stops at it), an unknown or cut escape, a \u without
// four hex digits (gjson reads those as U+0000).
func appendJSONText(dst, s []byte) (out []byte, ok bool) {
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			m := utils.JSONSpecial8(binary.LittleEndian.Uint64(s[i:]))
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
		if c != '\\' || i+1 >= len(s) {
			return dst, false
		}
		dst = append(dst, s[start:i]...)
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
				return dst, false
			}
			if utf16.IsSurrogate(r) && r < 0xdc00 && i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				r2, ok := hex4(s[i+8:])
				if !ok {
					return dst, false
				}
				if r2 >= 0xdc00 && r2 < 0xe000 {
					r = utf16.DecodeRune(r, r2)
					i += 6
				}
			}
			dst = utf8.AppendRune(dst, r) // a lone surrogate is U+FFFD
			i += 4
		default:
			return dst, false
		}
		i += 2
		start = i
	}
	return append(dst, s[start:]...), true
}

// hex4 reads four hex digits.
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
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
