package chat

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func TestArgumentChecker(t *testing.T) {
	schema := `{"type":"object","properties":{
	  "path":{"type":"string"},
	  "line":{"type":"integer","minimum":1},
	  "ratio":{"type":"number"},
	  "force":{"type":"boolean"},
	  "opts":{"type":"object","properties":{"deep":{"type":"boolean"}}},
	  "tags":{"type":"array","items":{"type":"string"}},
	  "id":{"type":"string"}
	},"required":["path"],"additionalProperties":false}`
	c := NewArgumentChecker([]models.Tool{
		{Name: "edit", Parameters: []byte(schema)},
		{Name: "free"},
		{Name: "remote", Parameters: []byte(`{"$ref":"https://example.invalid/s.json"}`)},
	})
	cases := []struct {
		name, tool, args, want, err string
	}{
		{"valid as is", "edit", `{"path":"a.go","line":3}`, `{"path":"a.go","line":3}`, ""},
		{"integer sent as a string", "edit", `{"path":"a.go","line":"3"}`, `{"line":3,"path":"a.go"}`, ""},
		{"number sent as a string", "edit", `{"path":"a","ratio":" 0.5 "}`, `{"path":"a","ratio":0.5}`, ""},
		{"boolean sent as a string", "edit", `{"path":"a","force":"true"}`, `{"force":true,"path":"a"}`, ""},
		{"object sent as a JSON string", "edit", `{"path":"a","opts":"{\"deep\":true}"}`, `{"opts":{"deep":true},"path":"a"}`, ""},
		{"array sent as a JSON string", "edit", `{"path":"a","tags":"[\"x\",\"y\"]"}`, `{"path":"a","tags":["x","y"]}`, ""},
		{"string stays a string", "edit", `{"path":"a","id":"42"}`, `{"path":"a","id":"42"}`, ""},
		{"missing required", "edit", `{"line":3}`, "", "path"},
		{"wrong type that cannot be coerced", "edit", `{"path":"a","line":"three"}`, "", "line"},
		{"below minimum", "edit", `{"path":"a","line":0}`, "", "minimum"},
		{"unknown property", "edit", `{"path":"a","color":"red"}`, "", "color"},
		{"yes is not a boolean", "edit", `{"path":"a","force":"yes"}`, "", "force"},
		{"no schema: anything goes", "free", `{"x":1}`, `{"x":1}`, ""},
		{"unreadable schema: unchecked", "remote", `{"x":1}`, `{"x":1}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Check(tc.tool, tc.args)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.NotContains(t, err.Error(), "\n", "one line for the model")
				return
			}
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, got)
		})
	}
}
