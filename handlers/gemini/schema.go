package gemini

import (
	"bytes"
	"encoding/json"
	"strings"
)

// JSONSchema turns a Gemini schema (OpenAPI subset: upper-case types,
// nullable, which clients use in the *JsonSchema fields too) into JSON
// Schema: types go lower case and nullable adds "null". A schema that needs
// no change, or is not JSON, is returned as it came, for the caller to check.
func JSONSchema(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	m, ok := v.(map[string]any)
	if !ok || !normalize(m) {
		return raw
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(m) != nil {
		return raw
	}
	return bytes.TrimSpace(b.Bytes())
}

// Keywords whose value is a schema, an array of schemas, or an object of
// named schemas; everything else (enum, default, const, examples, ...) is
// data and left alone.
var (
	schemaKeywords = map[string]bool{"items": true, "additionalProperties": true, "not": true, "if": true, "then": true, "else": true,
		"contains": true, "propertyNames": true, "additionalItems": true, "unevaluatedProperties": true, "unevaluatedItems": true}
	schemaListKeywords = map[string]bool{"anyOf": true, "oneOf": true, "allOf": true, "prefixItems": true}
	schemaMapKeywords  = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true}
)

// normalize rewrites one schema object in place and reports whether it
// changed anything.
func normalize(m map[string]any) bool {
	changed := false
	for k, v := range m {
		switch {
		case k == "type":
			switch t := v.(type) {
			case string:
				if lt := strings.ToLower(t); lt != t {
					changed = true
					if lt == "type_unspecified" {
						delete(m, k)
					} else {
						m[k] = lt
					}
				}
			case []any:
				for i, e := range t {
					if s, ok := e.(string); ok && strings.ToLower(s) != s {
						t[i], changed = strings.ToLower(s), true
					}
				}
			}
		case schemaKeywords[k]:
			changed = normalizeAny(v) || changed
		case schemaListKeywords[k]:
			if list, ok := v.([]any); ok {
				for _, e := range list {
					changed = normalizeAny(e) || changed
				}
			}
		case schemaMapKeywords[k]:
			if named, ok := v.(map[string]any); ok {
				for _, e := range named {
					changed = normalizeAny(e) || changed
				}
			}
		}
	}
	if nullable, ok := m["nullable"].(bool); ok {
		delete(m, "nullable")
		changed = true
		if t, ok := m["type"].(string); ok && nullable {
			m["type"] = []any{t, "null"}
		}
	}
	return changed
}

// normalizeAny normalizes a schema, or each schema of an array (items in
// its old tuple form).
func normalizeAny(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return normalize(x)
	case []any:
		changed := false
		for _, e := range x {
			changed = normalizeAny(e) || changed
		}
		return changed
	}
	return false
}
