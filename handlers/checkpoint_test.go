package handlers

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

// checkpointDoors are one request through each front door.
var checkpointDoors = []struct {
	name, path, body string
	header           []string
	// text reads the answer's text.
	text string
}{
	{"openai", "/v1/chat/completions", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`, nil, "choices.0.message.content"},
	{"anthropic", "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`,
		[]string{"anthropic-version", "2023-06-01"}, "content.0.text"},
	{"responses", "/v1/responses", `{"model":"claude-sonnet-4.6","input":"hi"}`, nil, "output.0.content.0.text"},
}

// The upstream behind Vercel's checkpoint: every door gets its answer,
// the gateway passing the checkpoint in-process, in both of its guises.
func TestCheckpointThroughEachDoor(t *testing.T) {
	for _, variant := range []struct {
		name string
		v    cursortest.CheckpointVariant
	}{{"429 with token", cursortest.CheckpointChallenge}, {"403 access denied", cursortest.CheckpointDenied}} {
		for _, door := range checkpointDoors {
			t.Run(variant.name+"/"+door.name, func(t *testing.T) {
				s := newStack(t, nil, cursortest.Always(cursortest.Text(&cursortest.Usage{Input: 3, Output: 2}, "behind the checkpoint")))
				cp := s.up.EnableCheckpoint(cursortest.CheckpointOptions{Variant: variant.v})
				r := s.do(t, http.MethodPost, door.path, door.body, door.header...)
				require.Equal(t, http.StatusOK, r.status, r.body)
				assert.Equal(t, "behind the checkpoint", gjson.Get(r.body, door.text).String(), r.body)
				st := cp.Stats()
				assert.Equal(t, 1, st.Challenged)
				assert.Equal(t, 1, st.Solved)
				assert.Equal(t, 1, st.Passed)

				// The cookie is kept: the next request goes straight through.
				r = s.do(t, http.MethodPost, door.path, door.body, door.header...)
				require.Equal(t, http.StatusOK, r.status, r.body)
				assert.Equal(t, 1, cp.Stats().Solved)

				ready := s.do(t, http.MethodGet, "/ready", "")
				c := gjson.Get(ready.body, "checkpoint")
				assert.Equal(t, "auto", c.Get("mode").String(), ready.body)
				assert.Equal(t, "direct", c.Get("egress.0.egress").String(), ready.body)
				assert.True(t, c.Get("egress.0.has_cookie").Bool(), ready.body)
				assert.EqualValues(t, 1, c.Get("egress.0.solves").Int(), ready.body)
				assert.NotContains(t, ready.body, "_vcrcs=", "the cookie is never shown")

				m := s.do(t, http.MethodGet, "/metrics", "")
				assert.Contains(t, m.body, `cursor2api_checkpoint_solves_total{outcome="ok"} 1`)
				assert.Contains(t, m.body, `cursor2api_checkpoint_cookie_valid{egress="direct"} 1`)
				assert.NotContains(t, s.logs.String(), "_vcrcs=1.", "cookies are never logged")
			})
		}
	}
}

// A challenge token whose payload has a fifth field (the site's layout
// changes) is passed as the public solvers pass it: by the fields the
// solver needs, the rest ignored and logged once.
func TestCheckpointTokenWithExtraFields(t *testing.T) {
	door := checkpointDoors[0]
	s := newStack(t, nil, cursortest.Always(cursortest.Text(nil, "behind a newer checkpoint")))
	cp := s.up.EnableCheckpoint(cursortest.CheckpointOptions{ExtraFields: []string{"0"}})
	r := s.do(t, http.MethodPost, door.path, door.body, door.header...)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "behind a newer checkpoint", gjson.Get(r.body, door.text).String(), r.body)
	assert.Equal(t, 1, cp.Stats().Solved)
	assert.Contains(t, s.logs.String(), "5 payload fields")
}

// A refused solution: every door answers a clear 503 naming the
// checkpoint and CURSOR_COOKIE, never the checkpoint's HTML.
func TestCheckpointRefusedThroughEachDoor(t *testing.T) {
	for _, door := range checkpointDoors {
		t.Run(door.name, func(t *testing.T) {
			s := newStack(t, nil, cursortest.Always(cursortest.Text(nil, "unreachable")))
			cp := s.up.EnableCheckpoint(cursortest.CheckpointOptions{})
			cp.Refuse(true)
			r := s.do(t, http.MethodPost, door.path, door.body, door.header...)
			require.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
			assert.True(t, strings.HasPrefix(r.header.Get("Content-Type"), "application/json"), r.header.Get("Content-Type"))
			msg := gjson.Get(r.body, "error.message").String()
			for _, want := range []string{"Vercel's security checkpoint", "CURSOR_COOKIE"} {
				assert.Contains(t, msg, want, r.body)
			}
			assert.NotContains(t, r.body, "<title", "no checkpoint HTML")
			assert.NotContains(t, r.body, "<!DOCTYPE")
			assert.Empty(t, s.up.Requests(), "no chat request got past the checkpoint")
			assert.Positive(t, cp.Stats().Refused)

			ready := s.do(t, http.MethodGet, "/ready", "")
			assert.Contains(t, gjson.Get(ready.body, "checkpoint.egress.0.last_error").String(), "refused", ready.body)
			m := s.do(t, http.MethodGet, "/metrics", "")
			assert.Contains(t, m.body, `cursor2api_checkpoint_solves_total{outcome="refused"} 1`)
			assert.Contains(t, m.body, `cursor2api_checkpoint_cookie_valid{egress="direct"} 0`)
		})
	}
}

// A streamed request meets the checkpoint before its first byte: it gets
// its stream, or a real 503 status.
func TestCheckpointStreamed(t *testing.T) {
	body := `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	s := newStack(t, nil, cursortest.Always(cursortest.Text(nil, "streamed")))
	cp := s.up.EnableCheckpoint(cursortest.CheckpointOptions{})
	r := s.chat(t, body)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Contains(t, r.body, "streamed")
	assert.Equal(t, 1, cp.Stats().Solved)

	s = newStack(t, nil, cursortest.Always(cursortest.Text(nil, "streamed")))
	s.up.EnableCheckpoint(cursortest.CheckpointOptions{}).Refuse(true)
	assertAPIError(t, s.chat(t, body), http.StatusServiceUnavailable, "api_error", "", "vercel_checkpoint", "CURSOR_COOKIE")
}

// CHECKPOINT=off: the checkpoint answer stays a 429 telling how to pass it
// by hand.
func TestCheckpointOff(t *testing.T) {
	s := newStack(t, map[string]string{"CHECKPOINT": "off"}, cursortest.Always(cursortest.Text(nil, "unreachable")))
	cp := s.up.EnableCheckpoint(cursortest.CheckpointOptions{})
	assertAPIError(t, s.chat(t, checkpointDoors[0].body), http.StatusTooManyRequests, "rate_limit_error", "", "upstream_rate_limited", "CURSOR_COOKIE")
	assert.Zero(t, cp.Stats().Solved)
	ready := s.do(t, http.MethodGet, "/ready", "")
	assert.False(t, gjson.Get(ready.body, "checkpoint").Exists(), ready.body)
}
