package chat

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
			got, err := c.Check(context.Background(), tc.tool, tc.args)
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

// TestArgumentCheckerResolvesNoExternalRef: a schema is the client's (or
// an MCP server's), so none of its references may open a file or a URL:
// the content would reach the model in validation notes, and a FIFO would
// hang the request. References inside the schema still work.
func TestArgumentCheckerResolvesNoExternalRef(t *testing.T) {
	dir := t.TempDir()
	const secret = "TOPSECRET-4711"
	secretFile := filepath.Join(dir, "secret.json")
	require.NoError(t, os.WriteFile(secretFile, []byte(`{"const":"`+secret+`"}`), 0o600))
	t.Chdir(dir)
	wd, err := os.Getwd()
	require.NoError(t, err)
	for name, schema := range map[string]string{
		"absolute file URL": `{"type":"object","properties":{"a":{"$ref":"file://` + secretFile + `"}}}`,
		"relative to cwd":   `{"type":"object","properties":{"a":{"$ref":"secret.json"}}}`,
		"base from $id":     `{"$id":"file://` + dir + `/","type":"object","properties":{"a":{"$ref":"secret.json"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			c := NewArgumentChecker([]models.Tool{{Name: "t", Parameters: []byte(schema)}})
			_, err := c.Check(context.Background(), "t", `{"a":"x"}`)
			if err != nil {
				assert.NotContains(t, err.Error(), secret, "a file's content reaches the model")
				assert.NotContains(t, err.Error(), wd)
			}
		})
	}
	t.Run("internal refs still work", func(t *testing.T) {
		c := NewArgumentChecker([]models.Tool{{Name: "t", Parameters: []byte(
			`{"$defs":{"n":{"type":"integer"}},"type":"object","properties":{"a":{"$ref":"#/$defs/n"},"b":{"oneOf":[{"type":"string"},{"$ref":"#/$defs/n"}]}}}`)}})
		_, err := c.Check(context.Background(), "t", `{"a":1}`)
		require.NoError(t, err)
		for _, args := range []string{`{"a":"x"}`, `{"b":true}`} {
			_, err = c.Check(context.Background(), "t", args)
			require.Error(t, err, args)
			assert.NotContains(t, err.Error(), wd, "no working directory in the note")
		}
	})
}

// TestArgumentCheckerDoesNotOpenAFIFO: a $ref to a FIFO must not block
// the request (it would wait for a writer forever).
func TestArgumentCheckerDoesNotOpenAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	c := NewArgumentChecker([]models.Tool{{Name: "t", Parameters: []byte(`{"type":"object","properties":{"a":{"$ref":"file://` + fifo + `"}}}`)}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.Check(context.Background(), "t", `{"a":"x"}`)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		// Free the blocked open so that the goroutine ends with the test.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("checking a call opened the FIFO the schema names")
	}
}

// TestArgumentCheckerBounds: a schema out of models.SchemaBounds (an MCP
// server's: the doors refuse a client's) is never compiled, which would
// cost seconds, and a schema is compiled only while the request lasts.
func TestArgumentCheckerBounds(t *testing.T) {
	const levels = 100 // 200 JSON levels: some 0.2 s to compile
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, levels) + `{"type":"string"}` + strings.Repeat(`}}`, levels)
	args := strings.Repeat(`{"a":`, levels) + `1` + strings.Repeat(`}`, levels)
	c := NewArgumentChecker([]models.Tool{{Name: "deep", Parameters: []byte(deep)}, {Name: "t", Parameters: []byte(`{"type":"object"}`)}})
	got, err := c.Check(context.Background(), "deep", args)
	require.NoError(t, err, "left unchecked, not compiled")
	assert.Equal(t, args, got)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Check(ctx, "t", `{}`)
	assert.ErrorIs(t, err, context.Canceled, "no schema is compiled for a request that ended")
}
