package toolproto

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"cursor2api/utils"
)

// argScanner streams an <invoke>'s JSON body as it arrives, so a client
// sees a long call grow. Like encoding/json's scanner it reads a byte at a
// time with explicit state, never looking back, and it writes what
// RepairArguments would make of the body. The closing brace is held until
// finish checks the whole, so an invalid call never reaches the client as
// complete JSON. A body that does not open like an object is declined.
type argScanner struct {
	step    argStep
	started bool   // the body opened like an object: its pieces may be taken
	out     []byte // the arguments written so far
	taken   int    // how much of out take has handed out
	stack   []byte // closers of the open brackets, the object's own first
	comma   bool   // a comma outside strings, held until the next significant byte
	gap     bool   // white space after a literal: another literal may not follow
	ticks   int    // backticks of an opening fence seen
	fenced  bool   // the object is inside a markdown fence
	tail    []byte // what follows the closed object: white space, and the closing fence
}

// argStep is where an argScanner stands in the body.
type argStep uint8

const (
	argLead     argStep = iota // before the '{', or the fence
	argInfo                    // after an opening fence, up to the end of its line
	argOpen                    // after the '{', before its first significant byte
	argValue                   // outside strings
	argString                  // inside a string
	argEscape                  // after a backslash inside a string
	argEnd                     // the object is closed
	argFenceEnd                // the closing fence came before the object closed
	argDeclined                // the body does not open like an object
	argFailed                  // the body cannot be repaired into JSON
)

// reset readies the scanner for a new body. decline makes it pass on
// nothing, for a call whose arguments are not to be streamed.
func (a *argScanner) reset(decline bool) {
	*a = argScanner{out: a.out[:0], stack: a.stack[:0], tail: a.tail[:0]}
	if decline {
		a.step = argDeclined
	}
}

// write scans the next piece of the body and returns how much of it it
// took: all of it, but when the object closes inside the piece it stops
// right after the closing brace, so that the caller can read what follows.
func (a *argScanner) write(s string) int {
	for i := 0; i < len(s); i++ {
		switch a.step {
		case argDeclined, argFailed:
			return len(s)
		case argString:
			// The bulk of a long body is string content: copy runs of
			// ordinary bytes at once.
			j := i
			for j < len(s) && s[j] != '"' && s[j] != '\\' && s[j] >= 0x20 {
				j++
			}
			a.out = append(a.out, s[i:j]...)
			if j == len(s) {
				return len(s)
			}
			i = j
			a.stringEnd(s[i])
		case argEscape:
			a.out = append(a.out, s[i])
			a.step = argString
		case argLead:
			a.lead(s[i])
		case argInfo:
			a.info(s[i])
		case argOpen:
			a.open(s[i])
		case argValue:
			a.value(s[i])
		case argEnd, argFenceEnd:
			a.tail = append(a.tail, s[i])
			continue
		}
		if a.step == argEnd {
			return i + 1
		}
	}
	return len(s)
}

// lead expects the object's '{', or a fence around it.
func (a *argScanner) lead(c byte) {
	switch {
	case c == '`' && !a.fenced:
		if a.ticks++; a.ticks == 3 {
			a.step = argInfo
		}
	case a.ticks > 0 && !a.fenced:
		a.step = argDeclined // not a fence
	case utils.IsJSONSpace(c):
	case c == '{':
		a.out = append(a.out, c)
		a.stack = append(a.stack, '}')
		a.step = argOpen
	default:
		a.step = argDeclined
	}
}

// info skips the info string of an opening fence ("json").
func (a *argScanner) info(c byte) {
	switch {
	case c == '\n':
		a.fenced = true
		a.step = argLead
	case c == ' ' || c == '\t' || c == '\r' || c == '_' || c == '-' || c == '+' || c == '.' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9':
	default:
		a.step = argDeclined
	}
}

// open expects a key or the end of an empty object: only then is the body
// known to be meant as JSON.
func (a *argScanner) open(c byte) {
	switch {
	case utils.IsJSONSpace(c):
	case c == '"':
		a.started = true
		a.out = append(a.out, c)
		a.step = argString
	case c == '}':
		a.started = true
		a.close(c)
	default:
		a.step = argDeclined
	}
}

// value handles a byte outside strings.
func (a *argScanner) value(c byte) {
	switch c {
	case ' ', '\t', '\n', '\r':
		if n := len(a.out); n > 0 && isLiteralByte(a.out[n-1]) && !a.comma {
			a.gap = true
		}
		return
	case ',':
		if a.comma {
			a.step = argFailed
			return
		}
		a.comma = true
		a.gap = false
		return
	case '}', ']':
		a.comma = false // a trailing comma: dropped
		a.gap = false
		a.close(c)
		return
	case '`':
		if a.fenced {
			// The closing fence: the model left brackets open.
			a.tail = append(a.tail, c)
			a.step = argFenceEnd
			return
		}
	}
	if a.gap && isLiteralByte(c) {
		// "1 2" or "tr ue": dropping the space would make it valid.
		a.step = argFailed
		return
	}
	a.gap = false
	if a.comma {
		a.out = append(a.out, ',')
		a.comma = false
	}
	a.out = append(a.out, c)
	switch c {
	case '"':
		a.step = argString
	case '{':
		a.stack = append(a.stack, '}')
	case '[':
		a.stack = append(a.stack, ']')
	}
}

// isLiteralByte reports whether c can be part of a number, true, false or
// null: what two of must not be joined by dropping the space between them.
func isLiteralByte(c byte) bool {
	return c != '{' && c != '}' && c != '[' && c != ']' && c != ',' && c != ':' && c != '"' && !utils.IsJSONSpace(c)
}

// close pops the bracket c closes. The object's own brace is not written:
// finish adds it once the whole is known to be valid.
func (a *argScanner) close(c byte) {
	n := len(a.stack)
	if n == 0 || a.stack[n-1] != c {
		a.step = argFailed
		return
	}
	a.stack = a.stack[:n-1]
	if n == 1 {
		a.step = argEnd
		return
	}
	a.out = append(a.out, c)
	a.step = argValue
}

// stringEnd handles the byte that ends a run of ordinary string bytes.
func (a *argScanner) stringEnd(c byte) {
	switch c {
	case '"':
		a.out = append(a.out, c)
		a.step = argValue
	case '\\':
		a.out = append(a.out, c)
		a.step = argEscape
	case '\n':
		a.out = append(a.out, `\n`...)
	case '\r':
		a.out = append(a.out, `\r`...)
	case '\t':
		a.out = append(a.out, `\t`...)
	default: // another control character
		a.out = append(a.out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
	}
}

// inString reports whether the body read so far ends inside a string of
// a JSON object.
func (a *argScanner) inString() bool { return a.started && a.step == argString }

// take returns what has been written since the last take, less a rune cut
// by the end of the input, which is kept for the next.
func (a *argScanner) take() string {
	if !a.started {
		return ""
	}
	end := len(a.out)
	for i := end - 1; i >= a.taken && i >= end-utf8.UTFMax; i-- {
		if utf8.RuneStart(a.out[i]) {
			if !utf8.FullRune(a.out[i:end]) {
				end = i
			}
			break
		}
	}
	s := string(a.out[a.taken:end])
	a.taken = end
	return s
}

// finish ends the body. closed says whether its closing tag was seen. It
// returns the whole arguments, with the rest of them ready to take, or
// the reason the body is not a call, the same reason as RepairArguments
// would give.
func (a *argScanner) finish(closed bool) (args, reason string) {
	if !a.complete(closed) || !json.Valid(a.out) {
		if !closed {
			return "", ReasonCutOff
		}
		return "", ReasonBadJSON
	}
	return string(a.out), ""
}

// tailFits reports whether what follows the object is only white space
// and, for a fenced object, the closing fence.
func (a *argScanner) tailFits() bool {
	rest := strings.Trim(string(a.tail), utils.JSONSpace)
	if a.fenced {
		return rest == "```"
	}
	return rest == ""
}

// complete writes the closers the body still needs, or reports false when
// it cannot be completed.
func (a *argScanner) complete(closed bool) bool {
	switch {
	case a.step == argEnd:
		if !a.tailFits() {
			return false
		}
	case closed && (a.step == argValue && !a.fenced || a.step == argFenceEnd && a.tailFits()):
		// The model stopped without closing its brackets.
		a.comma = false
		for i := len(a.stack) - 1; i > 0; i-- {
			a.out = append(a.out, a.stack[i])
		}
	default:
		return false
	}
	a.out = append(a.out, '}')
	return true
}
