package openai

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func TestContentDecoding(t *testing.T) {
	cases := []struct {
		name, in string
		text     string
		nonText  []string
	}{
		{"string", `"hello"`, "hello", nil},
		{"null", `null`, "", nil},
		{"empty string", `""`, "", nil},
		{"escapes", `"a\"b\\c\n\u00e9\ud83d\ude00"`, "a\"b\\c\né😀", nil},
		{"unicode without escapes", `"héllo 😀"`, "héllo 😀", nil},
		{"invalid UTF-8 is replaced", "\"a\xffb\"", "a\ufffdb", nil},
		{"parts", `[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]`, "a\nb", []string{"image_url"}},
		{"bare strings in the array", `["a", "b"]`, "a\nb", nil},
		{"single part object", `{"type":"text","text":"solo"}`, "solo", nil},
		{"input_text part", `[{"type":"input_text","text":"x"}]`, "x", nil},
		{"file part", `[{"type":"file","file":{"file_id":"f"}}]`, "", []string{"file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c Content
			require.NoError(t, json.Unmarshal([]byte(tc.in), &c))
			assert.Equal(t, tc.text, c.Text)
			assert.Equal(t, tc.nonText, c.NonText)
		})
	}
	for _, bad := range []string{`42`, `true`, `[42]`} {
		var c Content
		assert.Error(t, json.Unmarshal([]byte(bad), &c), bad)
	}
}

func TestFunctionCallArguments(t *testing.T) {
	var tc ToolCall
	require.NoError(t, json.Unmarshal([]byte(`{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}`), &tc))
	assert.Equal(t, `{"a":1}`, tc.Function.Arguments)
	require.NoError(t, json.Unmarshal([]byte(`{"id":"c","function":{"name":"f","arguments":{"a":1}}}`), &tc))
	assert.Equal(t, `{"a":1}`, tc.Function.Arguments, "an object is taken as the JSON text")
	require.NoError(t, json.Unmarshal([]byte(`{"id":"c","function":{"name":"f","arguments":null}}`), &tc))
	assert.Equal(t, "", tc.Function.Arguments)
}

func TestErrorBody(t *testing.T) {
	b, err := json.Marshal(ErrorBodyOf(models.InvalidRequest("tools[0].type", "bad %s", "type")))
	require.NoError(t, err)
	assert.JSONEq(t, `{"error":{"message":"bad type","type":"invalid_request_error","param":"tools[0].type","code":null}}`, string(b))
}
