package webchat

import (
	"bytes"

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
// invalid UTF-8 included (utils.AppendJSONUnescaped has the rest). ok is
// false where gjson would read something else than a whole string.
func appendJSONText(dst, s []byte) (out []byte, ok bool) {
	return utils.AppendJSONUnescaped(dst, s, true)
}
