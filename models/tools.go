package models

import (
	"bytes"
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
		if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && !bytes.Equal(p, []byte("null")) && p[0] != '{' {
			param := where(i, "parameters")
			return InvalidRequest(param, "%s must be a JSON Schema object", param)
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
