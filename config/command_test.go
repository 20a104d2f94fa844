package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommand(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		env        map[string]string
		errorsOnly bool
		ok         bool
		stderr     string // what stderr says, "" for nothing
		logged     bool   // whether a warning reaches stderr
	}{
		{name: "loaded", args: []string{"-budget", "7"}, ok: true, logged: true},
		{name: "errors only", errorsOnly: true, ok: true},
		{name: "debug", env: map[string]string{"LOG_LEVEL": "debug"}, ok: true, logged: true},
		{name: "errors only at debug", env: map[string]string{"LOG_LEVEL": "debug"}, errorsOnly: true, ok: true},
		{name: "an unknown flag", args: []string{"-nope"}, stderr: "flag provided but not defined: -nope"},
		{name: "a bad configuration", env: map[string]string{"PORT": "port"}, stderr: "cursor2api probe: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stderr strings.Builder
			c := NewCommand("probe", &stderr)
			c.ErrorsOnly = tc.errorsOnly
			budget := c.Flags.Int("budget", 1, "a flag of the command's own")
			cfg, ok := c.Load(tc.args)
			require.Equal(t, tc.ok, ok, stderr.String())
			if !ok {
				assert.Nil(t, cfg)
				assert.Contains(t, stderr.String(), tc.stderr)
				return
			}
			assert.Empty(t, stderr.String())
			if len(tc.args) > 0 {
				assert.Equal(t, 7, *budget)
			}
			log := c.Logger(cfg)
			log.Debug("a detail")
			log.Warn("a warning")
			log.Error("an error")
			assert.Equal(t, tc.logged, strings.Contains(stderr.String(), "a warning"), stderr.String())
			assert.Equal(t, tc.env["LOG_LEVEL"] == "debug" && !tc.errorsOnly, strings.Contains(stderr.String(), "a detail"), stderr.String())
			assert.Contains(t, stderr.String(), "an error")
		})
	}
}

func TestCommandFail(t *testing.T) {
	var stderr strings.Builder
	assert.Equal(t, 2, NewCommand("probe", &stderr).Fail(errors.New("what went wrong")))
	assert.Equal(t, "cursor2api probe: what went wrong\n", stderr.String())
}
