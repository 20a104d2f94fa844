package responses

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSealRoundTrip(t *testing.T) {
	s := NewSealer("deployment secret")
	for _, summary := range []string{"", "goal: fix the parser; files: a.go", strings.Repeat("ü", 10000)} {
		sealed := s.Seal("tenant-a", summary)
		assert.True(t, strings.HasPrefix(sealed, sealPrefix))
		assert.NotContains(t, sealed, "parser", "the summary is not readable in the item")
		got, err := s.Open("tenant-a", sealed)
		require.NoError(t, err)
		assert.Equal(t, summary, got)
		// Another replica or a restart: the same secret, a new Sealer.
		got, err = NewSealer("deployment secret").Open("tenant-a", sealed)
		require.NoError(t, err)
		assert.Equal(t, summary, got)
	}
	assert.NotEqual(t, s.Seal("t", "same"), s.Seal("t", "same"), "a fresh nonce each time")
}

func TestSealRefuses(t *testing.T) {
	s := NewSealer("deployment secret")
	sealed := s.Seal("tenant-a", "the summary")
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, sealPrefix))
	require.NoError(t, err)
	flipped := append([]byte{}, raw...)
	flipped[len(flipped)/2] ^= 1
	for name, tc := range map[string]struct {
		sealer  *Sealer
		tenant  string
		content string
	}{
		"tampered":      {s, "tenant-a", sealPrefix + base64.RawURLEncoding.EncodeToString(flipped)},
		"truncated":     {s, "tenant-a", sealed[:len(sealed)-4]},
		"wrong tenant":  {s, "tenant-b", sealed},
		"no tenant":     {s, "", sealed},
		"wrong key":     {NewSealer("another deployment"), "tenant-a", sealed},
		"not ours":      {s, "tenant-a", "gAAAAABo-openai-encrypted"},
		"bad base64":    {s, "tenant-a", sealPrefix + "!!!"},
		"too short":     {s, "tenant-a", sealPrefix + "AAAA"},
		"empty":         {s, "tenant-a", ""},
		"over the size": {s, "tenant-a", sealPrefix + strings.Repeat("A", MaxSealed)},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := tc.sealer.Open(tc.tenant, tc.content)
			assert.ErrorIs(t, err, ErrSealBroken)
			assert.Empty(t, got)
		})
	}
}
