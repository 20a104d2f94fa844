package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompactionKey: COMPACTION_SECRET is the key when set (at least 32
// characters); else the key comes from the deployment's secrets, the same
// for every replica and restart configured alike, and another for
// another deployment.
func TestCompactionKey(t *testing.T) {
	key := func(env map[string]string) string {
		cfg, err := FromMap(env)
		require.NoError(t, err)
		return cfg.CompactionKey()
	}
	secret := strings.Repeat("s", 32)
	assert.Equal(t, secret, key(map[string]string{"COMPACTION_SECRET": secret, "API_KEY": "k"}))
	a := key(map[string]string{"API_KEY": "k1,k2", "ADMIN_KEY": "admin"})
	assert.Equal(t, a, key(map[string]string{"API_KEY": "k1,k2", "ADMIN_KEY": "admin"}), "replicas agree")
	assert.NotEqual(t, a, key(map[string]string{"API_KEY": "k1", "ADMIN_KEY": "admin"}), "another deployment's key")
	assert.NotEqual(t, a, key(map[string]string{"API_KEY": "k1,k2", "ADMIN_KEY": "other"}))

	_, err := FromMap(map[string]string{"COMPACTION_SECRET": "short"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "COMPACTION_SECRET is 5 characters")
}
