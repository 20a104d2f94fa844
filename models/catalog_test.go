package models

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

func TestUpstreamCatalog(t *testing.T) {
	c, err := NewUpstreamCatalog([]string{"auto", " sonnet-4.5 ", "sonnet-4.5-thinking", "gpt-5", "auto", ""})
	require.NoError(t, err)
	assert.Equal(t, []string{"auto", "auto-thinking", "sonnet-4.5", "sonnet-4.5-thinking", "gpt-5", "gpt-5-thinking"}, c.Names())
	for _, tc := range []struct {
		public, base, upstream string
		thinking               bool
	}{
		{"auto", "auto", "auto", false},
		{"auto-thinking", "auto", "auto", true},
		{"sonnet-4.5-thinking", "sonnet-4.5", "sonnet-4.5-thinking", true}, // the upstream's own thinking model
		{"gpt-5-thinking", "gpt-5", "gpt-5", true},
	} {
		m, ok := c.Resolve(tc.public)
		require.True(t, ok, tc.public)
		assert.Equal(t, ResolvedModel{Public: tc.public, Base: tc.base, Upstream: tc.upstream, Thinking: tc.thinking}, m)
	}
	_, err = NewUpstreamCatalog([]string{" ", ""})
	assert.Error(t, err)

	next, err := NewUpstreamCatalog([]string{"opus-4.6"})
	require.NoError(t, err)
	c.Replace(next)
	assert.Equal(t, []string{"opus-4.6", "opus-4.6-thinking"}, c.Names())
	_, ok := c.Resolve("auto")
	assert.False(t, ok, "a replaced catalog forgets the old models")
	m, ok := c.Resolve("opus-4.6")
	require.True(t, ok)
	assert.Equal(t, "opus-4.6", m.Upstream)
}

func TestNamedCatalog(t *testing.T) {
	c, err := NewNamedCatalog([]NamedModel{
		{ID: "claude-4.5-sonnet", Display: "Sonnet 4.5"},
		{ID: "claude-4.5-sonnet-thinking", Display: "Sonnet 4.5 Thinking"},
		{ID: "gpt-5"},
		{ID: " "},
		{ID: "gpt-5", Display: "dup"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Names(); len(got) != 3 || got[0] != "claude-4.5-sonnet" || got[1] != "claude-4.5-sonnet-thinking" || got[2] != "gpt-5" {
		t.Fatalf("names: %v (no invented -thinking twins, no duplicates)", got)
	}
	if _, ok := c.Resolve("gpt-5-thinking"); ok {
		t.Fatal("a -thinking twin was invented")
	}
	m, _ := c.Resolve("claude-4.5-sonnet-thinking")
	if !m.Thinking || m.Base != "claude-4.5-sonnet" || m.Upstream != "claude-4.5-sonnet-thinking" {
		t.Fatalf("the upstream's own thinking variant: %+v", m)
	}
	if c.DisplayName("claude-4.5-sonnet") != "Sonnet 4.5" || c.DisplayName("gpt-5") != "gpt-5" {
		t.Fatal("display names")
	}
	next, _ := NewNamedCatalog([]NamedModel{{ID: "composer-1", Display: "Composer 1"}})
	c.Replace(next)
	if c.DisplayName("composer-1") != "Composer 1" {
		t.Fatal("Replace carries display names")
	}
	if _, err := NewNamedCatalog(nil); err == nil {
		t.Fatal("an empty list is an error")
	}
}
