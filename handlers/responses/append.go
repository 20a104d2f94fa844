package responses

import (
	"bytes"
	"strconv"

	"cursor2api/handlers/sse"
)

// The appenders below write the events that carry answer text (the deltas,
// and the done events and items that repeat the whole text) without
// reflection, byte for byte as sse.Writer.Event writes the same Event:
// encoding/json with HTML escaping off, except inside output items, which
// OutputItem.MarshalJSON encodes with json.Marshal, HTML escaping on. The
// tests hold them to that.

// appendHead appends an event's opening: its type and sequence number.
func appendHead(b []byte, typ string, seq int) []byte {
	b = append(b, `{"type":`...)
	b = sse.AppendString(b, typ)
	b = append(b, `,"sequence_number":`...)
	return strconv.AppendInt(b, int64(seq), 10)
}

// appendItemRef appends the output_index and item_id naming the item an
// event belongs to, then its content_index or summary_index (indexKey),
// when not empty, which is always 0: an item has one part.
func appendItemRef(b []byte, index int, itemID, indexKey string) []byte {
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	if itemID != "" {
		b = append(b, `,"item_id":`...)
		b = sse.AppendString(b, itemID)
	}
	if indexKey != "" {
		b = append(b, `,"`...)
		b = append(b, indexKey...)
		b = append(b, `":0`...)
	}
	return b
}

// htmlEscaped returns the JSON text enc with <, > and & escaped as
// json.Marshal escapes them. Within encoded JSON those bytes only ever
// stand for themselves, so escaping them afterwards is the same as
// escaping them while encoding. enc itself is returned when it has none.
func htmlEscaped(enc []byte) []byte {
	first := len(enc)
	for _, c := range []byte("<>&") {
		if i := bytes.IndexByte(enc[:first], c); i >= 0 {
			first = i
		}
	}
	if first == len(enc) {
		return enc
	}
	out := make([]byte, 0, len(enc)+len(enc)/8)
	start := first
	out = append(out, enc[:first]...)
	for i := first; i < len(enc); i++ {
		var esc string
		switch enc[i] {
		case '<':
			esc = `\u003c`
		case '>':
			esc = `\u003e`
		case '&':
			esc = `\u0026`
		default:
			continue
		}
		out = append(out, enc[start:i]...)
		out = append(out, esc...)
		start = i + 1
	}
	return append(out, enc[start:]...)
}

// appendStringHTML appends s as json.Marshal does, HTML escaping on.
func appendStringHTML(b []byte, s string) []byte {
	n := len(b)
	b = sse.AppendString(b, s)
	esc := htmlEscaped(b[n:])
	if len(esc) == len(b)-n {
		return b // nothing to escape: esc is b[n:] itself
	}
	return append(b[:n], esc...) // a copy: no overlap
}

// appendItem appends it as OutputItem.MarshalJSON writes it, its text (a
// message's or reasoning item's text, a call's arguments) given already
// encoded with HTML escaping on. It reports false for a type it does not
// know.
func appendItem(b []byte, it *OutputItem, text []byte) ([]byte, bool) {
	b = append(b, `{"id":`...)
	b = appendStringHTML(b, it.ID)
	b = append(b, `,"type":`...)
	b = appendStringHTML(b, it.Type)
	switch it.Type {
	case ItemMessage:
		b = append(b, `,"status":`...)
		b = appendStringHTML(b, it.Status)
		b = append(b, `,"role":"assistant","content":[`...)
		if it.Status != StatusInProgress {
			b = appendPart(b, textPart, text)
		}
		b = append(b, ']')
	case ItemReasoning:
		b = append(b, `,"summary":[`...)
		if it.Status != StatusInProgress {
			b = appendPart(b, summaryPart, text)
		}
		b = append(b, ']')
	case ItemFunctionCall:
		b = append(b, `,"status":`...)
		b = appendStringHTML(b, it.Status)
		b = append(b, `,"call_id":`...)
		b = appendStringHTML(b, it.CallID)
		b = append(b, `,"name":`...)
		b = appendStringHTML(b, it.Name)
		if it.Namespace != "" {
			b = append(b, `,"namespace":`...)
			b = appendStringHTML(b, it.Namespace)
		}
		b = append(b, `,"arguments":`...)
		b = append(b, text...)
	default:
		return b, false
	}
	return append(b, '}'), true
}

// partShape is the JSON of a Part around its text.
type partShape struct{ head, tail []byte }

var (
	textPart    = partShape{[]byte(`{"type":"output_text","text":`), []byte(`,"annotations":[],"logprobs":[]}`)}
	summaryPart = partShape{[]byte(`{"type":"summary_text","text":`), []byte(`}`)}
)

// appendPart appends a Part of the shape (TextPart, SummaryPart) and the
// encoded text.
func appendPart(b []byte, shape partShape, text []byte) []byte {
	b = append(b, shape.head...)
	b = append(b, text...)
	return append(b, shape.tail...)
}
