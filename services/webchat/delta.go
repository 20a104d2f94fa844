package webchat

import (
	"bytes"

	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// The Vercel AI SDK writes every text and reasoning delta in one fixed
// shape, {"type":"text-delta","id":"<id>","delta":"<text>"} (key order
// fixed, no white space). Nearly all frames are these, so they are decoded
// in one pass here; others go through gjson.
var (
	textDeltaHead      = []byte(`{"type":"text-delta","id":"`)
	reasoningDeltaHead = []byte(`{"type":"reasoning-delta","id":"`)
	deltaKey           = []byte(`","delta":"`)
)

// fastDelta adds data's text to the pending run, as add would, when data is
// a delta of the fixed shape that it decodes exactly as gjson does. For
// anything else it reports false and leaves f as it was.
func (f *frameReader) fastDelta(data []byte) bool {
	_, ok := f.readDelta(data, true)
	return ok
}

// readDelta is fastDelta on s, which follows a line's "data: ": a whole
// line's data when trimmed, else the rest of the buffer, where the frame
// must end its line (its object, any carriage returns, a line feed). n is
// what the frame takes of s, its line's end included.
func (f *frameReader) readDelta(s []byte, trimmed bool) (n int, ok bool) {
	var kind upstream.DeltaKind
	var rest []byte
	if rest, ok = bytes.CutPrefix(s, textDeltaHead); ok {
		kind = upstream.DeltaText
	} else if rest, ok = bytes.CutPrefix(s, reasoningDeltaHead); ok {
		kind = upstream.DeltaReasoning
	} else {
		return 0, false
	}
	// The id is short: found by hand rather than by a call per frame.
	id := 0
	for id < len(rest) && rest[id] != '"' {
		if rest[id] == '\\' || rest[id] < 0x20 {
			return 0, false
		}
		id++
	}
	if rest, ok = bytes.CutPrefix(rest[id:], deltaKey); !ok {
		return 0, false
	}
	mark := len(f.pending)
	out, q, ok := utils.AppendJSONStringBody(f.pending, rest, true)
	if !ok {
		f.pending = out[:mark]
		return 0, false
	}
	after := rest[q+1:] // rest[q] is the closing quote
	switch {
	case len(after) == 0 || after[0] != '}':
		f.pending = out[:mark]
		return 0, false
	case trimmed:
		if len(after) != 1 {
			f.pending = out[:mark]
			return 0, false
		}
		n = len(s)
	default:
		k := 1
		for k < len(after) && after[k] == '\r' {
			k++
		}
		if k == len(after) || after[k] != '\n' {
			f.pending = out[:mark]
			return 0, false
		}
		n = len(s) - len(after) + k + 1
	}
	f.pending = out
	if len(out) == mark {
		return n, true // an empty delta adds nothing, as in add
	}
	if mark > 0 && f.kind != kind {
		f.carry = append(f.carry, upstream.Delta{Kind: f.kind, Text: string(out[:mark])})
		f.pending = append(out[:0], out[mark:]...)
	}
	f.kind = kind
	return n, true
}
