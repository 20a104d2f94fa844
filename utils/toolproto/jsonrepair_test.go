package toolproto

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assertCompactObject checks that out is what RepairArguments promises: a
// compact JSON object, left unchanged by another repair.
func assertCompactObject(t *testing.T, out string) {
	t.Helper()
	require.True(t, strings.HasPrefix(out, "{"), "not an object: %q", out)
	require.True(t, json.Valid([]byte(out)), "not JSON: %q", out)
	var buf bytes.Buffer
	require.NoError(t, json.Compact(&buf, []byte(out)))
	require.Equal(t, buf.String(), out, "not compact")
	for _, closed := range []bool{false, true} {
		again, ok := RepairArguments(out, closed)
		require.True(t, ok)
		require.Equal(t, out, again, "repair is not idempotent")
	}
}

func TestRepairArguments(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		closed bool
		want   string
	}{
		{name: "empty body", body: "", want: "{}"},
		{name: "white space body", body: " \n\t ", closed: true, want: "{}"},
		{name: "valid object is compacted", body: "{ \"a\" : 1,\n  \"b\" : [1, 2] }", want: `{"a":1,"b":[1,2]}`},
		{name: "white space around the object", body: "\n\n  {\"a\":1}  \n", want: `{"a":1}`},
		{name: "empty object", body: "{}", want: "{}"},
		{name: "unicode kept", body: `{"a":"é 🌍 \u00e9"}`, want: `{"a":"é 🌍 \u00e9"}`},

		// Code fences.
		{name: "json fence", body: "```json\n{\"a\": 1}\n```", want: `{"a":1}`},
		{name: "fence without a language", body: "```\n{\"a\": 1}\n```", want: `{"a":1}`},
		{name: "fence on one line", body: "```{\"a\": 1}```", want: `{"a":1}`},
		{name: "fence around white space", body: "\n```JSON\n  {\"a\": 1}  \n```\n", want: `{"a":1}`},
		{name: "empty fence", body: "```json\n```", want: "{}"},

		// Control characters inside strings.
		{name: "raw newlines in a string", body: "{\"c\":\"line 1\nline 2\n\"}", want: `{"c":"line 1\nline 2\n"}`},
		{name: "raw tab and carriage return", body: "{\"c\":\"a\tb\r\nc\"}", want: `{"c":"a\tb\r\nc"}`},
		{name: "other control characters", body: "{\"c\":\"\x00\x01\x1f\"}", want: `{"c":"\u0000\u0001\u001f"}`},
		{name: "raw newlines outside strings are layout", body: "{\n\"a\":\n1\n}", want: `{"a":1}`},
		{name: "escapes are tracked", body: "{\"q\":\"say \\\"hi\\\"\",\"dir\":\"C:\\\\\",\"c\":\"x\ny\"}", want: `{"q":"say \"hi\"","dir":"C:\\","c":"x\ny"}`},
		{name: "raw newline in a key", body: "{\"a\nb\":1}", want: `{"a\nb":1}`},

		// Trailing commas.
		{name: "trailing comma in an object", body: `{"a":1,}`, want: `{"a":1}`},
		{name: "trailing comma in an array", body: `{"a":[1,2,]}`, want: `{"a":[1,2]}`},
		{name: "trailing comma before white space", body: "{\"a\":1 ,\n  }", want: `{"a":1}`},
		{name: "nested trailing commas", body: `{"a":{"b":[1,],},}`, want: `{"a":{"b":[1]}}`},
		{name: "comma inside a string kept", body: `{"a":"x,",}`, want: `{"a":"x,"}`},
		{name: "brackets inside a string ignored", body: "{\"a\":\"}]{[\",\n}", want: `{"a":"}]{["}`},

		// Missing closing brackets, only when the closing tag was seen.
		{name: "missing final brace", body: `{"a":1`, closed: true, want: `{"a":1}`},
		{name: "missing brackets", body: `{"a":[1,{"b":2`, closed: true, want: `{"a":[1,{"b":2}]}`},
		{name: "missing brace after a trailing comma", body: "{\"a\":[1,2],\n", closed: true, want: `{"a":[1,2]}`},
		{name: "missing brace after a string", body: `{"a":"b"`, closed: true, want: `{"a":"b"}`},

		// Several repairs at once.
		{name: "fence, raw newlines and trailing comma", body: "```json\n{\n  \"path\": \"a.py\",\n  \"content\": \"def f():\n    return 1\n\",\n}\n```", want: `{"path":"a.py","content":"def f():\n    return 1\n"}`},
		{name: "raw newlines and missing brace", body: "{\"content\":\"a\nb\"", closed: true, want: `{"content":"a\nb"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := RepairArguments(tc.body, tc.closed)
			require.True(t, ok, "not repaired: %q", tc.body)
			assert.Equal(t, tc.want, got)
			assertCompactObject(t, got)
			if !tc.closed {
				again, ok := RepairArguments(tc.body, true)
				require.True(t, ok, "what is repaired unclosed is repaired closed")
				assert.Equal(t, got, again)
			}
		})
	}
}

func TestRepairArgumentsRefuses(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		closed bool
	}{
		{name: "unclosed string", body: `{"a":"b`, closed: true},
		{name: "unclosed string, not closed", body: `{"a":"b`},
		{name: "unclosed string swallowing the brace", body: `{"a":"b}`, closed: true},
		{name: "missing brace, not closed", body: `{"a":1`},
		{name: "missing brackets, not closed", body: `{"a":[1,2`},
		{name: "top-level array", body: `[1,2]`, closed: true},
		{name: "top-level array of objects", body: `[{"a":1}]`, closed: true},
		{name: "top-level array missing its bracket", body: `[{"a":1}`, closed: true},
		{name: "string", body: `"a"`, closed: true},
		{name: "number", body: `42`, closed: true},
		{name: "null", body: `null`, closed: true},
		{name: "mismatched brackets", body: `{"a":[1}`, closed: true},
		{name: "mismatched brackets the other way", body: `{"a":1]`, closed: true},
		{name: "closing bracket first", body: `}{`, closed: true},
		{name: "extra closing brace", body: `{"a":1}}`, closed: true},
		{name: "single quotes", body: `{'a':'b'}`, closed: true},
		{name: "single-quoted value", body: `{"a":'b'}`, closed: true},
		{name: "unquoted key", body: `{a:1}`, closed: true},
		{name: "bad literal", body: `{"a":tru}`, closed: true},
		{name: "NaN", body: `{"a":NaN}`, closed: true},
		{name: "comment", body: "{\"a\":1 // one\n}", closed: true},
		{name: "text after the object", body: `{"a":1} and more`, closed: true},
		{name: "text before the object", body: `Here it is: {"a":1}`, closed: true},
		{name: "two objects", body: `{"a":1}{"b":2}`, closed: true},
		{name: "double comma", body: `{"a":1,,}`, closed: true},
		{name: "backslash before a raw newline", body: "{\"a\":\"x\\\ny\"}", closed: true},
		{name: "prose", body: "please read a.go", closed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := RepairArguments(tc.body, tc.closed)
			assert.False(t, ok, "repaired into %q", got)
			assert.Empty(t, got)
		})
	}
}

func TestParametersToJSON(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // "" when refused
	}{
		{name: "strings and a number", body: "<parameter name=\"path\">a.go</parameter>\n<parameter name=\"line\">12</parameter>", want: `{"path":"a.go","line":12}`},
		{name: "JSON values kept", body: `<parameter name="o">{"a": [1, 2]}</parameter><parameter name="b">true</parameter><parameter name="n">null</parameter>`, want: `{"o":{"a":[1,2]},"b":true,"n":null}`},
		{name: "block value loses its layout newlines", body: "<parameter name=\"content\">\nline 1\n  line 2\n</parameter>", want: `{"content":"line 1\n  line 2"}`},
		{name: "quoted and bare names", body: `<parameter name='a'>1</parameter> <parameter name = b >x</parameter>`, want: `{"a":1,"b":"x"}`},
		{name: "not JSON stays a string", body: `<parameter name="v">007</parameter><parameter name="w">{oops</parameter>`, want: `{"v":"007","w":"{oops"}`},
		{name: "empty value", body: `<parameter name="v"></parameter>`, want: `{"v":""}`},
		{name: "markup in a value", body: `<parameter name="html"><b>hi</b></parameter>`, want: `{"html":"<b>hi</b>"}`},
		{name: "repeated name keeps the last value in the first place", body: `<parameter name="a">1</parameter><parameter name="b">2</parameter><parameter name="a">3</parameter>`, want: `{"a":3,"b":2}`},
		{name: "text between children", body: `<parameter name="a">1</parameter> and <parameter name="b">2</parameter>`},
		{name: "text after the children", body: `<parameter name="a">1</parameter> done`},
		{name: "text before the children", body: `see <parameter name="a">1</parameter>`},
		{name: "unclosed child", body: `<parameter name="a">1`},
		{name: "no children", body: `{"a":1}`},
		{name: "empty body", body: ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParametersToJSON(tc.body)
			if tc.want == "" {
				assert.False(t, ok, "accepted as %q", got)
				return
			}
			require.True(t, ok)
			// Values are re-encoded by encoding/json, which escapes <, > and &
			// as \u003c...: the same JSON, but not the same bytes.
			assert.JSONEq(t, tc.want, got)
			assertCompactObject(t, got)
		})
	}
}

func FuzzRepairArguments(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":1,}`, "{\"a\":\"x\ny\"", "```json\n{\"a\":[1,\n```", `[1]`, `{"a":"b`, `{'a':1}`} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, closed bool) {
		out, ok := RepairArguments(body, closed)
		if !ok {
			require.Empty(t, out)
			return
		}
		assertCompactObject(t, out)
		if !closed {
			again, ok := RepairArguments(body, true)
			require.True(t, ok)
			require.Equal(t, out, again)
		}
	})
}
