package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSessionOf(t *testing.T) {
	for _, tc := range []struct {
		name, metadata, want string
	}{
		{"Claude Code before 2.1.78", `{"user_id":"user_0123abcd_account__session_00000000-0000-4000-8000-000000000000"}`, "00000000-0000-4000-8000-000000000000"},
		{"with an account", `{"user_id":"user_0123abcd_account_11111111-2222-4333-8444-555555555555_session_abc-1"}`, "abc-1"},
		{"Claude Code 2.1.78 on: a JSON string", `{"user_id":"{\"device_id\":\"d1\",\"account_uuid\":\"\",\"session_id\":\"54c1eb09-bc4c-4d2f-98eb-6d2ab2d5e2fe\"}"}`, "54c1eb09-bc4c-4d2f-98eb-6d2ab2d5e2fe"},
		{"the object unencoded", `{"user_id":{"device_id":"d1","session_id":"s-9"}}`, "s-9"},
		{"an ordinary user id names no session", `{"user_id":"alice@example.com"}`, ""},
		{"a JSON string without session_id", `{"user_id":"{\"device_id\":\"d1\"}"}`, ""},
		{"a session_id that is not a string", `{"user_id":"{\"session_id\":7}"}`, ""},
		{"a broken JSON string", `{"user_id":"{\"session_id\":"}`, ""},
		{"no user_id", `{"other":1}`, ""},
		{"user_id null", `{"user_id":null}`, ""},
		{"metadata not an object", `"x"`, ""},
		{"no metadata", ``, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SessionOf(json.RawMessage(tc.metadata)))
		})
	}
}

// TestToRequestSession: the door reads the session from the body's
// metadata, and odd metadata fails nothing.
func TestToRequestSession(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"user_x_account__session_s1"}}`, "s1"},
		{`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"metadata":[1,2]}`, ""},
		{`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, ""},
	} {
		var req MessagesRequest
		require.NoError(t, json.Unmarshal([]byte(tc.body), &req), tc.body)
		out, err := ToRequest(&req)
		require.NoError(t, err, tc.body)
		assert.Equal(t, tc.want, out.Session, tc.body)
	}
}
