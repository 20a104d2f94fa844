package models

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAliases(t *testing.T) {
	catalog, err := NewCatalog([]string{"claude-sonnet-4.6", "claude-haiku-4.5"}, nil)
	require.NoError(t, err)
	aliases, err := ParseAliases([]string{
		"claude-opus-*=claude-opus-4.6", // not published: skipped
		" claude-haiku-* = claude-haiku-4.5 ",
		"claude-3-5-haiku-????????=claude-haiku-4.5",
		"",
		"claude-*=claude-sonnet-4.6",
	})
	require.NoError(t, err)
	require.Len(t, aliases, 4)
	cases := []struct{ in, want string }{
		{"claude-sonnet-4.6", "claude-sonnet-4.6"},
		{"claude-sonnet-4.6-thinking", "claude-sonnet-4.6-thinking"}, // published: never aliased
		{"claude-haiku-4-5-20251001", "claude-haiku-4.5"},
		{"claude-3-5-haiku-20241022", "claude-haiku-4.5"},
		{"claude-opus-4-1-20250805", "claude-sonnet-4.6"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4.6"},
		{"gpt-4o", ""},
	}
	for _, tc := range cases {
		got, ok := aliases.Resolve(tc.in, catalog)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.want != "", ok, tc.in)
	}
	for _, bad := range []string{"claude-*", "=x", "x=", "[=x"} {
		_, err := ParseAliases([]string{bad})
		assert.Error(t, err, bad)
	}
}

func TestAliasDefaultTarget(t *testing.T) {
	aliases, err := ParseAliases([]string{
		"claude-haiku-*=claude-haiku-4.5",
		"claude-*=claude-sonnet-4.6",
		"claude-*=default",
		"gpt-*=default",
	})
	require.NoError(t, err)
	cases := []struct {
		name    string
		served  []string
		in      string
		want    string
		wantErr bool
	}{
		{"own target served", []string{"gemini-3-flash", "claude-sonnet-4.6"}, "claude-sonnet-4-5-20250929", "claude-sonnet-4.6", false},
		{"own target gone: the default", []string{"gemini-3-flash"}, "claude-haiku-4-5", "gemini-3-flash", false},
		{"old public name", []string{"gemini-3-flash"}, "claude-sonnet-4.6", "gemini-3-flash", false},
		{"thinking asks for the twin", []string{"gemini-3-flash"}, "claude-sonnet-4.6-thinking", "gemini-3-flash-thinking", false},
		{"codex", []string{"gemini-3-flash"}, "gpt-5.1-codex-max", "gemini-3-flash", false},
		{"no family matches", []string{"gemini-3-flash"}, "llama-4", "", true},
		{"the first base name is the default", []string{"gemini-3-pro-thinking", "gemini-3-flash"}, "gpt-5", "gemini-3-flash", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			catalog, err := NewCatalog(tc.served, nil)
			require.NoError(t, err)
			got, ok := aliases.Resolve(tc.in, catalog)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, !tc.wantErr, ok)
		})
	}
}
