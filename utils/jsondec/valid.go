package jsondec

import (
	"encoding/binary"
	"math/bits"

	"cursor2api/utils"
)

// maxDepth is encoding/json's limit on nesting (its scanner's
// maxNestingDepth). Deeper input is left to encoding/json, which refuses
// it with its own error.
const maxDepth = 10000

// Valid is json.Valid (same grammar, depth, and no UTF-8 check in
// strings), but skips plain string text eight bytes at a time rather than
// calling a state function per byte: a prompt is mostly such text.
func Valid(data []byte) bool {
	i, ok := value(data, skipSpace(data, 0))
	return ok && skipSpace(data, i) == len(data)
}

// value checks the value that starts at data[i] and returns the index
// after it. Containers are walked with an explicit stack of their kinds,
// so that depth costs no recursion.
func value(data []byte, i int) (int, bool) {
	var stack []byte // '{' or '[' per open container
	for {
		// A value is expected at i.
		if i >= len(data) {
			return 0, false
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxDepth {
				return 0, false
			}
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == c+2 { // '}' and ']' follow their openers by two
				i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				var ok bool
				if i, ok = key(data, i); !ok {
					return 0, false
				}
			}
			continue
		case c == '"':
			var ok bool
			if i, ok = stringEnd(data, i); !ok {
				return 0, false
			}
		case c == '-' || '0' <= c && c <= '9':
			var ok bool
			if i, ok = number(data, i); !ok {
				return 0, false
			}
		case c == 't':
			if !hasAt(data, i, "true") {
				return 0, false
			}
			i += 4
		case c == 'f':
			if !hasAt(data, i, "false") {
				return 0, false
			}
			i += 5
		case c == 'n':
			if !hasAt(data, i, "null") {
				return 0, false
			}
			i += 4
		default:
			return 0, false
		}
		// A value ended at i: close containers or go on to the next member.
		for {
			if len(stack) == 0 {
				return i, true
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return 0, false
			}
			top := stack[len(stack)-1]
			c := data[i]
			if c == ',' {
				i = skipSpace(data, i+1)
				if top == '{' {
					var ok bool
					if i, ok = key(data, i); !ok {
						return 0, false
					}
				}
				break // the next value
			}
			if top == '{' && c == '}' || top == '[' && c == ']' {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			return 0, false
		}
	}
}

// key checks an object's key and its colon at data[i], returning where its
// value starts.
func key(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, false
	}
	i, ok := stringEnd(data, i)
	if !ok {
		return 0, false
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return 0, false
	}
	return skipSpace(data, i+1), true
}

// stringEnd checks the string literal at data[i] (its opening quote) and
// returns the index after its closing quote.
func stringEnd(data []byte, i int) (int, bool) {
	for i = nextSpecial(data, i+1); i < len(data); i = nextSpecial(data, i) {
		switch c := data[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(data) {
				return 0, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
					return 0, false
				}
				i += 6
			default:
				return 0, false
			}
		default: // a control character
			return 0, false
		}
	}
	return 0, false
}

// nextSpecial returns the index, from i, of the first byte a JSON string
// cannot hold as it is (a quote, a backslash, a control character), or
// len(data): plain text is skipped eight bytes at a time.
func nextSpecial(data []byte, i int) int {
	for ; i+8 <= len(data); i += 8 {
		if m := utils.JSONSpecial8(binary.LittleEndian.Uint64(data[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8 // the lowest mark is a special byte
		}
	}
	for ; i < len(data); i++ {
		if c := data[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

// number checks the number at data[i]: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return 0, false
	}
	if i < len(data) && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hasAt(data []byte, i int, lit string) bool {
	return len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && utils.IsJSONSpace(data[i]) {
		i++
	}
	return i
}

// members calls fn with each member of the valid JSON object data
// (trimmed): its key's body, between the quotes, and its value, trimmed.
// It stops, reporting false, when fn does.
func members(data []byte, fn func(key, value []byte) bool) bool {
	i := skipSpace(data, 1)
	for i < len(data) && data[i] == '"' {
		k := skipString(data, i)
		key := data[i+1 : k-1]
		v := skipSpace(data, skipSpace(data, k)+1) // past the colon
		end := skipValue(data, v)
		if !fn(key, data[v:end]) {
			return false
		}
		i = skipSpace(data, end)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return true
}

// Elements calls fn with each element of data, a JSON array checked
// already (by Valid, or as a part of a body Unmarshal decoded), each a
// slice of data without the white space around it. It stops, reporting
// false, when fn does. It is for a door that splits an array it keeps
// raw (the Responses input) without the copy a parser of strings makes.
func Elements(data []byte, fn func(elem []byte) bool) bool {
	start := skipSpace(data, 0)
	end := len(data)
	for end > start && utils.IsJSONSpace(data[end-1]) {
		end--
	}
	if end-start < 2 || data[start] != '[' {
		return false
	}
	return elements(data[start:end], fn)
}

// elements calls fn with each element of the valid JSON array data
// (trimmed), trimmed. It stops, reporting false, when fn does.
func elements(data []byte, fn func(elem []byte) bool) bool {
	i := skipSpace(data, 1)
	for i < len(data) && data[i] != ']' {
		end := skipValue(data, i)
		if !fn(data[i:end]) {
			return false
		}
		i = skipSpace(data, end)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return true
}

// skipValue returns the index after the valid value at data[i].
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(data) {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// skipString returns the index after the valid string literal at data[i].
func skipString(data []byte, i int) int {
	for i = nextSpecial(data, i+1); data[i] != '"'; i = nextSpecial(data, i) {
		i += 2 // an escape's backslash and the byte after it (a valid string has no control characters)
	}
	return i + 1
}
