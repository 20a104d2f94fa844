package responses

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"cursor2api/handlers/sse"
)

// The appenders below write the events that carry answer text without
// reflection, byte for byte as sse.Writer.Event would (tests hold them to
// it): HTML escaping off, but on inside output items, as json.Marshal does.

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

// appendHTMLEscaped appends the JSON text enc with <, > and & escaped as
// json.Marshal escapes them. Within encoded JSON those bytes only ever
// stand for themselves, so escaping them afterwards is the same as
// escaping them while encoding.
func appendHTMLEscaped(b, enc []byte) []byte {
	first := len(enc)
	for _, c := range []byte("<>&") {
		if i := bytes.IndexByte(enc[:first], c); i >= 0 {
			first = i
		}
	}
	start := 0
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
		b = append(b, enc[start:i]...)
		b = append(b, esc...)
		start = i + 1
	}
	return append(b, enc[start:]...)
}

// appendStringHTML appends s as json.Marshal does, HTML escaping on. It
// is for an item's few short strings (id, status, name).
func appendStringHTML(b []byte, s string) []byte {
	return appendHTMLEscaped(b, sse.AppendString(nil, s))
}

// appendItem appends it as OutputItem.MarshalJSON writes it, its text (a
// message's or reasoning item's text, a function call's arguments, a
// custom call's input) given already encoded by sse.AppendString, in
// pieces. It reports false for a type it does not know.
func appendItem(b []byte, it *OutputItem, text [][]byte) ([]byte, bool) {
	if it.Type == ItemMCPCall || it.Type == ItemMCPListTools || it.Type == ItemCompaction {
		// Few and small: encoded as MarshalJSON does.
		data, err := it.MarshalJSON()
		return append(b, data...), err == nil
	}
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
	case ItemFunctionCall, ItemCustomToolCall:
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
		if it.Type == ItemFunctionCall {
			b = append(b, `,"arguments":`...)
		} else {
			b = append(b, `,"input":`...)
		}
		for _, p := range text {
			b = appendHTMLEscaped(b, p)
		}
	case ItemToolSearchCall:
		b = append(b, `,"status":`...)
		b = appendStringHTML(b, it.Status)
		b = append(b, `,"call_id":`...)
		b = appendStringHTML(b, it.CallID)
		b = append(b, `,"execution":"client","arguments":`...)
		b = appendHTMLEscaped(b, searchArguments(it.Arguments))
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
// encoded text, as json.Marshal writes it, HTML escaping on.
func appendPart(b []byte, shape partShape, text [][]byte) []byte {
	b = append(b, shape.head...)
	for _, p := range text {
		b = appendHTMLEscaped(b, p)
	}
	return append(b, shape.tail...)
}

// encodedText is the item's text as a JSON string, gathered from its
// deltas' encodings. Those concatenate to the whole text's encoding unless
// a piece splits a UTF-8 sequence (each invalid byte becomes U+FFFD); then
// the whole text is encoded again.
type encodedText struct {
	chunks [][]byte // the pieces' encodings, copied in a row
	size   int
	// broken is set when a piece did not end on a whole character.
	broken bool
	parts  [][]byte // reused by of
}

var quote = []byte(`"`)

// add keeps the encoding enc (without its quotes) of the next piece.
func (e *encodedText) add(piece string, enc []byte) {
	if r, size := utf8.DecodeLastRuneInString(piece); r == utf8.RuneError && size == 1 {
		e.broken = true
	}
	n := len(e.chunks)
	if n == 0 || cap(e.chunks[n-1])-len(e.chunks[n-1]) < len(enc) {
		// Chunks grow with the text, from 4 KB up to 256 KB, so that a
		// long text is copied once and held in few pieces.
		e.chunks = append(e.chunks, make([]byte, 0, max(len(enc), min(max(4<<10, e.size), 256<<10))))
		n++
	}
	e.chunks[n-1] = append(e.chunks[n-1], enc...)
	e.size += len(enc)
}

// of returns the encoding of text, which is the pieces added since reset
// in a row, as the pieces of a JSON string, quotes included; they are
// valid until the next add or reset.
func (e *encodedText) of(text string) [][]byte {
	if e.broken {
		enc := sse.AppendString(nil, text)
		e.chunks, e.size, e.broken = append(e.chunks[:0], enc[1:len(enc)-1]), len(enc)-2, false
	}
	e.parts = append(e.parts[:0], quote)
	e.parts = append(e.parts, e.chunks...)
	return append(e.parts, quote)
}

// reset starts the text of a new item.
func (e *encodedText) reset() {
	clear(e.chunks)
	e.chunks, e.size, e.broken = e.chunks[:0], 0, false
}

// set makes text the whole text, encoded anew, and returns its encoding
// as of does: for a custom call's input, which is not the text its
// pieces streamed (they were JSON arguments around it).
func (e *encodedText) set(text string) [][]byte {
	e.reset()
	enc := sse.AppendString(nil, text)
	e.add(text, enc[1:len(enc)-1])
	return e.of(text)
}
