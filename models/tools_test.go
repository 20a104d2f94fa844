package models

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOutputBound(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		v    *int
		want int
		err  bool
	}{{nil, 0, false}, {n(1), 1, false}, {n(4096), 4096, false}, {n(0), 0, true}, {n(-3), 0, true}} {
		got, err := OutputBound("max_tokens", tc.v)
		assert.Equal(t, tc.want, got)
		if tc.err {
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, "max_tokens", e.Param)
			assert.Contains(t, e.Message, "at least 1")
		} else {
			assert.NoError(t, err)
		}
	}
}

func TestValidateToolsSchemaBounds(t *testing.T) {
	nested := func(levels int) string {
		return strings.Repeat(`{"type":"object","properties":{"a":`, levels) + `{"type":"string"}` + strings.Repeat(`}}`, levels)
	}
	wide := func(props int) string {
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{`)
		for i := range props {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
		}
		b.WriteString(`}}`)
		return b.String()
	}
	for _, tc := range []struct {
		name, schema, err string
	}{
		{"ordinary", `{"type":"object","properties":{"path":{"type":"string","description":"a {[ path"}}}`, ""},
		{"30 levels", nested(30), ""},
		{"brackets inside strings do not count", `{"description":"` + strings.Repeat("{[", 500) + `\"{"}`, ""},
		{"1000 levels", nested(1000), "tools[3].parameters: the schema nests deeper than 64 levels"},
		{"many objects", wide(3000), "tools[3].parameters: the schema has more than 2000 objects"},
		{"too large", `{"description":"` + strings.Repeat("x", 256<<10) + `"}`, "tools[3].parameters: the schema is 262162 bytes, over the 262144"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools := []Tool{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d", Parameters: []byte(tc.schema)}}
			err := ValidateTools(tools, func(i int, field string) string { return fmt.Sprintf("tools[%d].%s", i, field) })
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, "tools[3].parameters", e.Param)
			assert.Contains(t, e.Message, tc.err)
		})
	}
}
