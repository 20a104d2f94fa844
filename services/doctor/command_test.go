package doctor

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"cursor2api/services/cursortest"
)

func TestDoctorSubcommand(t *testing.T) {
	gate := cursortest.NewModelGate("google/gemini-3-flash")
	chat := gate.Reply(cursortest.Always(cursortest.Text(nil, "ok")))
	up := cursortest.NewServer(t, func(n int, req cursortest.Request) cursortest.Response {
		if req.Model == "" { // the page in front of the chat
			return cursortest.Text(nil, "<html></html>")
		}
		return chat(n, req)
	})
	cases := []struct {
		name   string
		env    map[string]string
		want   int
		stdout string
		stderr string
	}{
		{"every step passes", map[string]string{"CURSOR_API_URL": up.URL + "/api/chat"}, 0, "every step passed", ""},
		{"a refused model", map[string]string{"CURSOR_API_URL": up.URL + "/api/chat", "MODELS": "claude-sonnet-4.6"}, 1, "fix: set MODELS=auto", ""},
		{"a bad configuration", map[string]string{"CURSOR_API_URL": "nowhere"}, 2, "", "CURSOR_API_URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TLS_FINGERPRINT", "off")
			t.Setenv("X_IS_HUMAN_MODE", "random")
			t.Setenv("MODELS", "auto")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			assert.Equal(t, tc.want, Command([]string{"-budget", "10s"}, &stdout, &stderr), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			assert.Contains(t, stdout.String(), tc.stdout)
			assert.Contains(t, stderr.String(), tc.stderr)
		})
	}
}
