package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLimits(t *testing.T) {
	cfg, err := FromMap(map[string]string{})
	require.NoError(t, err)
	assert.Equal(t, 4096, cfg.MaxConnections)
	assert.Equal(t, 30*time.Second, cfg.BodyReadTimeout.Duration())
	assert.Equal(t, []string{"localhost", "127.0.0.1", "::1"}, cfg.AllowedHosts, "the loopback names by default on loopback")
	assert.Empty(t, cfg.AllowedOrigins, "no browser origin by default")
	assert.Equal(t, 30*time.Second, cfg.LimitsSlotLease.Duration())

	cfg, err = FromMap(map[string]string{"HOST": "0.0.0.0"})
	require.NoError(t, err)
	assert.Empty(t, cfg.AllowedHosts, "any host beyond loopback unless configured")

	cfg, err = FromMap(map[string]string{"ALLOWED_HOSTS": " gw.example , ,*.corp.example", "ALLOWED_ORIGINS": "http://localhost:3000,*",
		"MAX_CONNECTIONS": "10", "BODY_READ_TIMEOUT": "2.5", "LIMITS_SLOT_LEASE": "3s"})
	require.NoError(t, err)
	assert.Equal(t, []string{"gw.example", "*.corp.example"}, cfg.AllowedHosts)
	assert.Equal(t, []string{"http://localhost:3000", "*"}, cfg.AllowedOrigins)
	assert.Equal(t, 10, cfg.MaxConnections)
	assert.Equal(t, 2500*time.Millisecond, cfg.BodyReadTimeout.Duration())
	assert.Equal(t, 3*time.Second, cfg.LimitsSlotLease.Duration())

	for name, env := range map[string]map[string]string{
		"MAX_CONNECTIONS":   {"MAX_CONNECTIONS": "0"},
		"BODY_READ_TIMEOUT": {"BODY_READ_TIMEOUT": "0"},
		"ALLOWED_ORIGINS":   {"ALLOWED_ORIGINS": "localhost:3000"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := FromMap(env)
			require.Error(t, err)
			assert.Contains(t, err.Error(), name)
		})
	}
	_, err = FromMap(map[string]string{"ALLOWED_ORIGINS": "http://app.example/path"})
	assert.Error(t, err, "an origin has no path")
}
