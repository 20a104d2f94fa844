package xih

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestXihReportsTheHeaderOrTheMissingGlobals(t *testing.T) {
	t.Setenv("X_IS_HUMAN_MODE", "random") // the check runs whatever the mode
	var out, errs strings.Builder
	code := Command([]string{"-file", "../testdata/challenge.js", "-profile", "chrome-macos", "-budget", "3m"}, &out, &errs)
	require.Equal(t, 0, code, out.String()+errs.String())
	assert.Contains(t, out.String(), "profile: chrome-macos")
	assert.Regexp(t, `header:  \{"b":"fixture-b".*"vr":"fixture-vr"\}`, out.String())
	assert.Contains(t, out.String(), "missing: none")
	assert.Regexp(t, `time:    \d+`, out.String())

	out.Reset()
	code = Command([]string{"-file", "../testdata/challenge_missing.js", "-budget", "3m"}, &out, &errs)
	assert.Equal(t, 1, code)
	assert.Contains(t, out.String(), "error:   window.V_C[0]() rejected: ReferenceError: BroadcastChannel is not defined")
	assert.Contains(t, out.String(), "missing: 1 globals/properties the script read are not defined here:\n  BroadcastChannel\n")

	assert.Equal(t, 2, Command([]string{"-profile", "netscape-4"}, &out, &errs), "an unknown profile is a usage error")
	assert.Contains(t, errs.String(), "unknown browser profile \"netscape-4\": use one of chrome-macos, chrome-windows, chrome-windows-intel")
}
