package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func TestCloudAgents(t *testing.T) {
	cfg, err := FromMap(map[string]string{})
	require.NoError(t, err)
	assert.False(t, cfg.CloudOn())
	assert.Equal(t, "https://api.cursor.com", cfg.CloudAPIURL)
	assert.Equal(t, models.CursorAPIURL, cfg.CloudAPIURL, "the default is the host's one home (a tag cannot name the constant)")
	assert.Equal(t, 30*time.Minute, cfg.CloudMaxWait.Duration())
	assert.Equal(t, 5*time.Second, cfg.CloudPollInterval.Duration())

	cfg, err = FromMap(map[string]string{"CLOUD_AGENTS": "on", "CURSOR_API_KEY": "k", "CLOUD_MAX_WAIT": "60"})
	require.NoError(t, err)
	assert.True(t, cfg.CloudOn())
	assert.Equal(t, time.Minute, cfg.CloudMaxWait.Duration())

	for _, tc := range []struct {
		env  map[string]string
		hint string
	}{
		{map[string]string{"CLOUD_AGENTS": "yes"}, "CLOUD_AGENTS=\"yes\""},
		{map[string]string{"CLOUD_AGENTS": "on"}, "CLOUD_AGENTS=on needs CURSOR_API_KEY"},
		{map[string]string{"CLOUD_AGENTS": "on", "CURSOR_API_KEY": "k", "CLOUD_API_URL": "api.cursor.com"}, "CLOUD_API_URL"},
		{map[string]string{"CLOUD_AGENTS": "on", "CURSOR_API_KEY": "k", "CLOUD_MAX_WAIT": "0"}, "CLOUD_MAX_WAIT"},
		{map[string]string{"CLOUD_AGENTS": "on", "CURSOR_API_KEY": "k", "CLOUD_POLL_INTERVAL": "0.01"}, "CLOUD_POLL_INTERVAL"},
		{map[string]string{"CLOUD_AGENTS": "on", "CURSOR_API_KEY": "k", "CLOUD_WEBHOOK_SECRET": "short"}, "CLOUD_WEBHOOK_SECRET is 5 characters"},
	} {
		_, err := FromMap(tc.env)
		require.Error(t, err, tc.env)
		assert.Contains(t, err.Error(), tc.hint)
	}
}
