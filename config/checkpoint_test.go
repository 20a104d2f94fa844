package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckpoint(t *testing.T) {
	cases := []struct {
		name              string
		env               map[string]string
		mode, page, solve string
		err               string
	}{
		{name: "defaults", env: map[string]string{},
			mode: "auto", page: "https://cursor.com/", solve: "https://cursor.com/.well-known/vercel/security/request-challenge"},
		{name: "derived from CURSOR_API_URL", env: map[string]string{"CURSOR_API_URL": "http://127.0.0.1:9/api/chat", "CHECKPOINT": " OFF "},
			mode: "off", page: "http://127.0.0.1:9/", solve: "http://127.0.0.1:9/.well-known/vercel/security/request-challenge"},
		{name: "explicit", env: map[string]string{"CHECKPOINT_PAGE_URL": "https://example.com/docs", "CHECKPOINT_URL": "https://example.com/solve"},
			mode: "auto", page: "https://example.com/docs", solve: "https://example.com/solve"},
		{name: "bad mode", env: map[string]string{"CHECKPOINT": "on"}, err: `CHECKPOINT="on": must be auto`},
		{name: "bad page", env: map[string]string{"CHECKPOINT_PAGE_URL": "cursor.com"}, err: `CHECKPOINT_PAGE_URL="cursor.com": must be an absolute http or https URL`},
		{name: "bad page is fine when off", env: map[string]string{"CHECKPOINT": "off", "CHECKPOINT_PAGE_URL": "cursor.com"},
			mode: "off", page: "cursor.com", solve: "https://cursor.com/.well-known/vercel/security/request-challenge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := FromMap(tc.env)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.mode, cfg.Checkpoint)
			assert.Equal(t, tc.page, cfg.CheckpointPageURL)
			assert.Equal(t, tc.solve, cfg.CheckpointURL)
		})
	}
}
