// Package jsondec decodes the doors' request bodies as encoding/json does,
// with less work on the shapes clients send. encoding/json scans a body
// byte by byte twice (and the doors' decoders read the prompt a third
// time); Unmarshal checks it once with Valid, eight bytes at a time, then
// hands each field's bytes to its decoder, leaving small values to
// encoding/json. Wherever encoding/json's rules could read the body
// differently (a repeated field, an escaped key, a ",string" tag, an
// error, ...), it defers the whole body to json.Unmarshal.
package jsondec

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"cursor2api/utils"
)

// Unmarshal is json.Unmarshal(data, v).
func Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		e := rv.Elem()
		// Only into a zero value: a failed fast reading is undone by
		// zeroing, and encoding/json merges into what is there.
		if plan := planOf(e.Type()); plan.kind != kindOther && e.IsZero() && Valid(data) {
			start := skipSpace(data, 0)
			end := len(data)
			for end > start && utils.IsJSONSpace(data[end-1]) {
				end--
			}
			if decode(data[start:end], e, plan) {
				return nil
			}
			e.SetZero()
		}
	}
	return json.Unmarshal(data, v)
}

// kind is how a type is decoded.
type kind uint8

const (
	kindOther       kind = iota // by encoding/json
	kindUnmarshaler             // by its own UnmarshalJSON, on its pointer
	kindString                  // a string kind, by utils.UnquoteJSON
	kindBool                    // a bool kind, from true or false
	kindStruct                  // member by member
	kindSlice                   // element by element
	kindPointer                 // into a new value of its element type
)

// plan is how to decode a type.
type plan struct {
	kind   kind
	fields []field // kindStruct
	elem   *plan   // kindSlice, kindPointer
}

// field is a struct field encoding/json would decode a member into.
type field struct {
	name  string // its JSON name
	index int
	plan  *plan
}

// plans memoizes planOf, as encoding/json memoizes its own field lists:
// a type's plan never changes once it is stored, whole.
var plans sync.Map // reflect.Type → *plan

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

// planOf returns t's plan. The plans of t and of the types within it are
// worked out in a map of this call's own and stored only once all are
// whole, so that no other decoder reads one half filled (a recursive
// type finds its own plan in that map). Two first decodes of a type at
// once may both work its plan out: both are the same.
func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	building := map[reflect.Type]*plan{}
	p := build(t, building)
	for typ, bp := range building {
		plans.LoadOrStore(typ, bp)
	}
	return p
}

// build returns t's plan, stored or under way in building, or works it
// out there.
func build(t reflect.Type, building map[reflect.Type]*plan) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	if p, ok := building[t]; ok {
		return p
	}
	p := &plan{}
	building[t] = p
	fill(p, t, building)
	return p
}

// fill works out t's plan; a type with anything this package does not
// read as encoding/json does is kindOther.
func fill(p *plan, t reflect.Type, building map[reflect.Type]*plan) {
	if t.Kind() == reflect.Pointer {
		if t.Elem().Kind() != reflect.Pointer {
			p.elem, p.kind = build(t.Elem(), building), kindPointer
		}
		return
	}
	pt := reflect.PointerTo(t)
	switch {
	case t.Implements(unmarshalerType), t.Implements(textUnmarshalerType):
		return // methods on the value: encoding/json's
	case pt.Implements(unmarshalerType):
		p.kind = kindUnmarshaler
		return
	case pt.Implements(textUnmarshalerType), t == numberType:
		return
	}
	switch t.Kind() {
	case reflect.String:
		p.kind = kindString
	case reflect.Bool:
		p.kind = kindBool
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return // base64 text: encoding/json's
		}
		p.elem, p.kind = build(t.Elem(), building), kindSlice
	case reflect.Struct:
		fields, ok := structFields(t, building)
		if !ok {
			return
		}
		p.fields, p.kind = fields, kindStruct
	}
}

// structFields lists the fields encoding/json decodes members into, by
// their JSON names; ok is false for a struct whose fields this package
// does not read as encoding/json does (embedded ones, ",string" options)
// or that has more than 64 of them (seen is a bit set).
func structFields(t reflect.Type, building map[reflect.Type]*plan) (fields []field, ok bool) {
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil, false
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for o := range strings.SplitSeq(opts, ",") {
			if o == "string" {
				return nil, false
			}
		}
		if name == "" {
			name = sf.Name
		}
		fields = append(fields, field{name: name, index: i, plan: build(sf.Type, building)})
	}
	if len(fields) > 64 {
		return nil, false
	}
	// Names that fold together: encoding/json's rules of which wins.
	for i := range fields {
		for j := range i {
			if strings.EqualFold(fields[i].name, fields[j].name) {
				return nil, false
			}
		}
	}
	return fields, true
}

// decode decodes the valid JSON value data, trimmed, into v, reporting
// false where it gives way to encoding/json.
func decode(data []byte, v reflect.Value, p *plan) bool {
	if data[0] == 'n' {
		// null: encoding/json's rules differ by kind, and it is cheap.
		return json.Unmarshal(data, v.Addr().Interface()) == nil
	}
	switch p.kind {
	case kindUnmarshaler:
		return v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(data) == nil
	case kindString:
		if data[0] != '"' {
			return false
		}
		s, ok := utils.UnquoteJSON(data)
		if ok {
			v.SetString(s)
		}
		return ok
	case kindBool:
		if data[0] != 't' && data[0] != 'f' {
			return false
		}
		v.SetBool(data[0] == 't') // a checked literal: true or false
		return true
	case kindPointer:
		e := reflect.New(v.Type().Elem())
		if !decode(data, e.Elem(), p.elem) {
			return false
		}
		v.Set(e)
		return true
	case kindSlice:
		if data[0] != '[' {
			return false
		}
		n := 0
		ok := elements(data, func(elem []byte) bool {
			if n == v.Len() {
				v.Grow(1)
				v.SetLen(n + 1)
			}
			n++
			return decode(elem, v.Index(n-1), p.elem)
		})
		if ok && v.IsNil() {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0)) // [] is an empty slice, not nil
		}
		return ok
	case kindStruct:
		if data[0] != '{' {
			return false
		}
		var seen uint64
		return members(data, func(key, val []byte) bool {
			i, ok := fieldOf(key, p.fields, &seen)
			if !ok {
				return false
			}
			if i < 0 {
				return true // a member no field takes: skipped
			}
			f := p.fields[i]
			return decode(val, v.Field(f.index), f.plan)
		})
	}
	return json.Unmarshal(data, v.Addr().Interface()) == nil
}

// fieldOf finds the field key (a key's body, between its quotes) names,
// as encoding/json matches keys, case-insensitively: its index, or -1 for
// a key no field takes. ok is false where encoding/json's rules would
// make the readings differ: a field met twice (it keeps the last, or
// merges), a key with an escape (which may decode to a field's name).
func fieldOf(key []byte, fields []field, seen *uint64) (i int, ok bool) {
	for i, f := range fields {
		if !strings.EqualFold(string(key), f.name) {
			continue
		}
		if *seen&(1<<i) != 0 {
			return 0, false
		}
		*seen |= 1 << i
		return i, true
	}
	for _, c := range key {
		if c == '\\' {
			return 0, false
		}
	}
	return -1, true
}
