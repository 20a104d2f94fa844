package door

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// errorPath names the field of body that does not decode into t, in the
// style of validation errors: messages[0].content, with array indexes,
// which encoding/json's own paths (messages.content) lack. fallback is
// used when no single field is at fault.
func errorPath(body []byte, t reflect.Type, fallback string) string {
	if p := strings.TrimPrefix(locate(body, t), "."); p != "" {
		return p
	}
	return fallback
}

// locate walks raw along t to the innermost value that fails to decode,
// returning its path (".name", "[i]" segments), or "" when raw itself is
// at fault. It runs on the error path only.
func locate(raw []byte, t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) && t.Kind() != reflect.Struct {
		return "" // the type reads the value itself: the value is at fault
	}
	// A struct that reads itself is still walked by its fields: when none
	// is at fault, the walk ends at the struct.
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return ""
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name := jsonName(f)
			if name == "" {
				continue
			}
			for k, v := range obj {
				if strings.EqualFold(k, name) && !decodes(v, f.Type) {
					return "." + name + locate(v, f.Type)
				}
			}
		}
	case reflect.Slice, reflect.Array:
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil {
			return ""
		}
		for i, e := range arr {
			if !decodes(e, t.Elem()) {
				return "[" + strconv.Itoa(i) + "]" + locate(e, t.Elem())
			}
		}
	}
	return ""
}

// decodes reports whether raw decodes into a value of type t.
func decodes(raw []byte, t reflect.Type) bool {
	return json.Unmarshal(raw, reflect.New(t).Interface()) == nil
}

// jsonName is the name a struct field has in JSON, or "" when it has none.
func jsonName(f reflect.StructField) string {
	if !f.IsExported() || f.Anonymous {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return name
}
