package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"cursor2api/models"
	"cursor2api/utils"
)

// ArgumentChecker validates tool-call arguments against the parameters
// schema of the tool, after coercing the cases where the model's intent is
// unambiguous. Schemas are compiled on first use, so a request with many
// tools pays only for the ones the model calls.
type ArgumentChecker struct {
	params map[string]json.RawMessage

	mu       sync.Mutex
	compiled map[string]*compiledSchema
}

type compiledSchema struct {
	schema *jsonschema.Schema // nil when the schema could not be compiled
	props  map[string]any     // top-level "properties", for coercion
}

// NewArgumentChecker returns a checker for the request's tools.
func NewArgumentChecker(tools []models.Tool) *ArgumentChecker {
	c := &ArgumentChecker{params: make(map[string]json.RawMessage, len(tools)), compiled: map[string]*compiledSchema{}}
	for _, t := range tools {
		c.params[t.Name] = t.Parameters
	}
	return c
}

// Check returns the arguments to send (coerced and compact) or an error
// that quotes what is wrong, short enough to show the model.
// A schema not compiled yet is compiled only while ctx lasts, so that a
// request whose client left stops between tools; the error is then ctx's.
func (c *ArgumentChecker) Check(ctx context.Context, name, args string) (string, error) {
	cs, err := c.schemaFor(ctx, name)
	if err != nil {
		return "", err
	}
	if cs == nil || cs.schema == nil {
		return args, nil // no schema, or one we cannot read: nothing to hold against the call
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil {
		return "", fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	v, changed := coerce(v, cs.props)
	if err := cs.schema.Validate(v); err != nil {
		return "", fmt.Errorf("arguments do not match the parameters schema: %s", schemaErrorText(err))
	}
	if !changed {
		return args, nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encoding coerced arguments: %w", err)
	}
	return string(out), nil
}

func (c *ArgumentChecker) schemaFor(ctx context.Context, name string) (*compiledSchema, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs, ok := c.compiled[name]; ok {
		return cs, nil
	}
	raw, ok := c.params[name]
	if !ok {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cs := &compiledSchema{}
	c.compiled[name] = cs
	raw = bytes.TrimSpace(raw)
	// The doors refuse a client's schema out of bounds; an MCP server's
	// is left unchecked (the server checks its own calls), never compiled.
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || models.SchemaBounds(raw) != nil {
		return cs, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return cs, nil
	}
	if m, ok := doc.(map[string]any); ok {
		cs.props, _ = m["properties"].(map[string]any)
	}
	cs.schema, _ = compileSchema(doc) // external $refs and the like: left unchecked
	return cs, nil
}

// schemaLocation is where a tool's schema is said to be: a URL of no
// scheme a loader serves, so that a relative $ref resolves neither
// against the working directory (the library's default base) nor to
// anything that exists.
const schemaLocation = "mem:///tool-parameters.json"

// compileSchema compiles a tool's schema, resolving its references inside
// the document only: the schema is the client's (or a called MCP
// server's), and the library's default loader would open any file:// URL
// it names (a secret's content quoted back in validation notes, a FIFO
// that never answers).
func compileSchema(doc any) (*jsonschema.Schema, error) {
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(noLoader{})
	if err := compiler.AddResource(schemaLocation, doc); err != nil {
		return nil, err
	}
	return compiler.Compile(schemaLocation)
}

// noLoader refuses every external reference. The standard metaschemas
// that $schema names are built into the library and never reach it.
type noLoader struct{}

func (noLoader) Load(string) (any, error) {
	return nil, errExternalRef
}

var errExternalRef = errors.New("external schema references are not resolved")

// coerce fixes the top-level values whose type the schema names and the
// model got wrong in an unambiguous way: a number or boolean sent as a
// string, an object or array sent as a JSON string.
func coerce(v any, props map[string]any) (any, bool) {
	obj, ok := v.(map[string]any)
	if !ok || props == nil {
		return v, false
	}
	changed := false
	for k, val := range obj {
		s, isString := val.(string)
		prop, _ := props[k].(map[string]any)
		if !isString || prop == nil {
			continue
		}
		types := schemaTypes(prop["type"])
		if types["string"] {
			continue
		}
		t := strings.TrimSpace(s)
		switch {
		case types["integer"] || types["number"]:
			if _, err := strconv.ParseFloat(t, 64); err == nil {
				obj[k], changed = json.Number(t), true
			}
		case types["boolean"]:
			if b, err := strconv.ParseBool(t); err == nil && (t == "true" || t == "false") {
				obj[k], changed = b, true
			}
		case types["object"] || types["array"]:
			if parsed, err := jsonschema.UnmarshalJSON(strings.NewReader(t)); err == nil {
				_, isObj := parsed.(map[string]any)
				_, isArr := parsed.([]any)
				if (isObj && types["object"]) || (isArr && types["array"]) {
					obj[k], changed = parsed, true
				}
			}
		}
	}
	return obj, changed
}

func schemaTypes(t any) map[string]bool {
	out := map[string]bool{}
	switch t := t.(type) {
	case string:
		out[t] = true
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				out[s] = true
			}
		}
	}
	return out
}

// schemaErrorText flattens a validation error to one line the model can
// act on.
func schemaErrorText(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	var kept []string
	for _, l := range lines {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "-"))
		if l == "" || strings.HasPrefix(l, "jsonschema validation failed") {
			continue
		}
		kept = append(kept, l)
	}
	return utils.Clip(strings.Join(kept, "; "), 400)
}
