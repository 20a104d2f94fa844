package native

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func TestDefaultAliases(t *testing.T) {
	ids := []string{"composer-2", "claude-4.5-opus-high-thinking", "claude-4.6-opus", "claude-4.5-sonnet-thinking", "claude-4.5-sonnet", "gpt-5.1-codex", "gpt-5.2"}
	catalog, err := models.NewNamedCatalog(func() []models.NamedModel {
		var l []models.NamedModel
		for _, id := range ids {
			l = append(l, models.NamedModel{ID: id})
		}
		return l
	}())
	require.NoError(t, err)
	aliases := DefaultAliases(ids)
	cases := map[string]string{
		"claude-opus-4-5-20251101":   "claude-4.6-opus",
		"claude-3-opus-20240229":     "claude-4.6-opus",
		"claude-haiku-4-5-20251001":  "claude-4.5-sonnet", // no haiku: the nearest
		"claude-sonnet-4-5-20250929": "claude-4.5-sonnet",
		"gpt-5.1-codex-max":          "gpt-5.1-codex",
		"gpt-5":                      "gpt-5.2",
		"o3":                         "gpt-5.2",
		"composer-2":                 "composer-2", // published names resolve to themselves
	}
	for in, want := range cases {
		got, ok := aliases.Resolve(in, catalog)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	_, ok := aliases.Resolve("gemini-3-pro", catalog)
	assert.False(t, ok, "no gemini on the account: no alias")
	assert.Empty(t, DefaultAliases([]string{"composer-2"}))
}
