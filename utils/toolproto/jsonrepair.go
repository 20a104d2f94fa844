package toolproto

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"cursor2api/utils"
)

// RepairArguments turns an <invoke> body into a compact JSON object, fixing
// only the unambiguous: an empty body is {}, a markdown fence goes, control
// characters in strings are escaped (models write code raw), a trailing
// comma is dropped, and when closed (the tag was seen) missing closing
// brackets are added, never a quote. It reports false for anything else.
func RepairArguments(body string, closed bool) (string, bool) {
	body = stripFence(strings.Trim(body, utils.JSONSpace))
	if body == "" {
		return "{}", true
	}
	if out, ok := compactObject(body); ok {
		return out, true
	}
	fixed, ok := repairJSON(body, closed)
	if !ok {
		return "", false
	}
	return compactObject(fixed)
}

func compactObject(s string) (string, bool) {
	if !strings.HasPrefix(s, "{") || !json.Valid([]byte(s)) {
		return "", false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return "", false
	}
	return buf.String(), true
}

// stripFence removes a ```json ... ``` fence wrapping the whole body.
func stripFence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	inner := s[3 : len(s)-3]
	if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(inner[:nl], "{[\"") {
		inner = inner[nl+1:] // drop the info string ("json")
	}
	return strings.Trim(inner, utils.JSONSpace)
}

// repairJSON walks s once, tracking only whether it is inside a string and
// the stack of open brackets, and applies the repairs RepairArguments lists.
func repairJSON(s string, closed bool) (string, bool) {
	out := make([]byte, 0, len(s)+8)
	var stack []byte
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			case c < 0x20:
				switch c {
				case '\n':
					out = append(out, `\n`...)
				case '\r':
					out = append(out, `\r`...)
				case '\t':
					out = append(out, `\t`...)
				default:
					out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
				}
				continue
			}
			out = append(out, c)
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return "", false
			}
			stack = stack[:len(stack)-1]
			out = trimTrailingComma(out)
		}
		out = append(out, c)
	}
	if inString {
		return "", false
	}
	if len(stack) > 0 {
		if !closed {
			return "", false
		}
		for i := len(stack) - 1; i >= 0; i-- {
			out = trimTrailingComma(out)
			out = append(out, stack[i])
		}
	}
	return string(out), true
}

// trimTrailingComma drops a comma (and the white space after it) at the end
// of what has been written, so "[1,2,]" becomes "[1,2]".
func trimTrailingComma(b []byte) []byte {
	t := bytes.TrimRight(b, utils.JSONSpace)
	if len(t) > 0 && t[len(t)-1] == ',' {
		return t[:len(t)-1]
	}
	return b
}

const hexDigits = "0123456789abcdef"

var (
	parameterRE     = regexp.MustCompile(`(?s)<parameter\s+name\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)'|([^\s"'<>/]+))\s*>(.*?)</parameter>`)
	parameterOpenRE = regexp.MustCompile(`^\s*<parameter[\s>]`)
)

// rawArguments are the arguments of a call whose body is bare text for
// the string parameter param: the text without the line breaks that set
// it off from the tags, and without trailing white space.
func rawArguments(param, body string) string {
	return utils.StringObject(param, strings.TrimRight(strings.TrimLeft(body, "\r\n"), " \t\r\n"))
}

// ParametersToJSON reads an invoke body written as <parameter name="k">v
// </parameter> children (the Anthropic-style form models fall back to)
// into a compact JSON object. A value that is valid JSON (a number, true,
// an object...) is kept as such; anything else is a string. It reports
// false when the body is not made only of such children.
func ParametersToJSON(body string) (string, bool) {
	if !parameterOpenRE.MatchString(body) {
		return "", false
	}
	obj := make(map[string]json.RawMessage)
	var order []string
	rest := body
	for _, m := range parameterRE.FindAllStringSubmatchIndex(body, -1) {
		if strings.TrimSpace(body[len(body)-len(rest):m[0]]) != "" {
			return "", false // text between the children
		}
		rest = body[m[1]:]
		name := ""
		for g := 1; g <= 3; g++ {
			if m[2*g] >= 0 {
				name = body[m[2*g]:m[2*g+1]]
			}
		}
		value := body[m[8]:m[9]]
		raw := json.RawMessage(strings.TrimSpace(value))
		if len(raw) == 0 || !json.Valid(raw) {
			// A string; the newlines around a block value are layout.
			raw, _ = json.Marshal(strings.Trim(value, "\n"))
		}
		if _, dup := obj[name]; !dup {
			order = append(order, name)
		}
		obj[name] = raw
	}
	if len(order) == 0 || strings.TrimSpace(rest) != "" {
		return "", false
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		b.Write(key)
		b.WriteByte(':')
		if err := json.Compact(&b, obj[k]); err != nil {
			return "", false
		}
	}
	b.WriteByte('}')
	return b.String(), true
}
