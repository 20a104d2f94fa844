package models

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestCatalog(t *testing.T) {
	c, err := NewCatalog([]string{"claude-sonnet-4.6", "gemini-3-flash-thinking", "claude-sonnet-4.6", "my-model", "vendor/raw-id"},
		map[string]string{"my-model": "acme/my-model-v2"})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"claude-sonnet-4.6", "claude-sonnet-4.6-thinking",
		"gemini-3-flash-thinking",
		"my-model", "my-model-thinking",
		"vendor/raw-id", "vendor/raw-id-thinking",
	}, c.Names(), "duplicates dropped, order kept, no -thinking-thinking")
	for _, tc := range []struct {
		public, base, upstream string
		thinking               bool
	}{
		{"claude-sonnet-4.6", "claude-sonnet-4.6", "anthropic/claude-sonnet-4.6", false},
		{"claude-sonnet-4.6-thinking", "claude-sonnet-4.6", "anthropic/claude-sonnet-4.6", true},
		{"gemini-3-flash-thinking", "gemini-3-flash", "google/gemini-3-flash", true},
		{"my-model-thinking", "my-model", "acme/my-model-v2", true},
		{"vendor/raw-id", "vendor/raw-id", "vendor/raw-id", false},
	} {
		m, ok := c.Resolve(tc.public)
		require.True(t, ok, tc.public)
		assert.Equal(t, ResolvedModel{Public: tc.public, Base: tc.base, Upstream: tc.upstream, Thinking: tc.thinking}, m)
	}
	_, ok := c.Resolve("gemini-3-flash")
	assert.False(t, ok, "only the -thinking name was listed")
	_, ok = c.Resolve("claude-sonnet-4.6-thinking-thinking")
	assert.False(t, ok)

	id, ok := UpstreamID("claude-opus-9", nil)
	assert.True(t, ok)
	assert.Equal(t, "anthropic/claude-opus-9", id, "vendor inferred from the prefix")

	_, err = NewCatalog([]string{"mystery"}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MODEL_MAP")
	_, err = NewCatalog([]string{" ", ""}, nil)
	assert.Error(t, err)
}

func TestErrorBody(t *testing.T) {
	b, err := json.Marshal(InvalidRequest("tools[0].type", "bad %s", "type").Body())
	require.NoError(t, err)
	assert.JSONEq(t, `{"error":{"message":"bad type","type":"invalid_request_error","param":"tools[0].type","code":null}}`, string(b))
}
