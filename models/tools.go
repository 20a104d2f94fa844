package models

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)

// ValidateTools checks the tools every door declares the same way: a name
// of 1 to 64 letters, digits, '_', '-' or '.', names unique, parameters
// (when given) a JSON object. where(i, field) names field ("name" or
// "parameters") of the i-th tool in the door's wire format, for Param and
// the message.
func ValidateTools(tools []Tool, where func(i int, field string) string) error {
	seen := make(map[string]int, len(tools))
	for i, t := range tools {
		param := where(i, "name")
		switch {
		case t.Name == "":
			return InvalidRequest(param, "%s is required", param)
		case !toolNameRE.MatchString(t.Name):
			return InvalidRequest(param, "%s %.100q is invalid: use 1 to 64 letters, digits, '_', '-' or '.'", param, t.Name)
		}
		if j, dup := seen[t.Name]; dup {
			return InvalidRequest(param, "%s %.100q repeats tools[%d]: tool names must be unique", param, t.Name, j)
		}
		seen[t.Name] = i
		if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
			param := where(i, "parameters")
			if p[0] != '{' {
				return InvalidRequest(param, "%s must be a JSON Schema object", param)
			}
			if err := SchemaBounds(p); err != nil {
				return InvalidRequest(param, "%s: %v", param, err)
			}
		}
	}
	return nil
}

// The bounds of one tool's schema. Compiling it (to check calls) costs
// far more than reading it, and more than linearly: at 1,000 levels or
// 20,000 properties it takes seconds. Real tools stay well inside.
const (
	MaxSchemaBytes = 256 << 10
	MaxSchemaDepth = 64   // objects and arrays within each other
	MaxSchemaNodes = 2000 // objects: each may be a subschema to compile
)

// SchemaBounds reports a schema (JSON, checked already) larger, deeper or
// with more objects than a tool's schema may have, in words for the
// client. It only counts brackets, so it costs one pass over raw.
func SchemaBounds(raw []byte) error {
	if len(raw) > MaxSchemaBytes {
		return fmt.Errorf("the schema is %d bytes, over the %d a tool may have", len(raw), MaxSchemaBytes)
	}
	depth, nodes, inString := 0, 0, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > MaxSchemaDepth {
				return fmt.Errorf("the schema nests deeper than %d levels", MaxSchemaDepth)
			}
			if c == '{' {
				nodes++
				if nodes > MaxSchemaNodes {
					return fmt.Errorf("the schema has more than %d objects", MaxSchemaNodes)
				}
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// HasTool reports whether tools declares name.
func HasTool(tools []Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// OutputBound reads an optional output bound that the request gave in
// param: 0 when it is absent, an error when it is below 1.
func OutputBound(param string, v *int) (int, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 1 {
		return 0, InvalidRequest(param, "%s is %d: it must be at least 1", param, *v)
	}
	return *v, nil
}

// JSONObjectNote is the system instruction of a JSON mode without a
// schema (OpenAI's json_object, Gemini's responseMimeType alone).
const JSONObjectNote = "Answer with one JSON object only: no prose before or after it, no markdown code fence."

// JSONSchemaNote is the system instruction of a JSON mode with a schema,
// the same words whichever door asked: the upstream has no structured
// output, so the schema becomes a constraint in the prompt. name and
// description, when given, say what the value is.
func JSONSchemaNote(schema []byte, name, description string) string {
	var b strings.Builder
	b.WriteString("Answer with one JSON value only: no prose before or after it, no markdown code fence. It must match this JSON Schema")
	if name != "" {
		b.WriteString(" (")
		b.WriteString(name)
		if description != "" {
			b.WriteString(": ")
			b.WriteString(description)
		}
		b.WriteString(")")
	}
	b.WriteString(":\n")
	b.Write(schema)
	return b.String()
}
