package anthropic

import (
	"encoding/json"
	"strings"
)

// sessionMark precedes the session id in the user_id Claude Code sent
// before 2.1.78: "user_<hash>_account_<uuid>_session_<uuid>" (the account
// part may be empty).
const sessionMark = "_session_"

// SessionOf is the client's session id in a request's metadata, or "".
// Claude Code puts it in metadata.user_id: before 2.1.78 after sessionMark,
// since then as session_id of a JSON object in the string (some clients
// send the object unencoded). A plain user id names no session: a user
// has many conversations.
func SessionOf(metadata json.RawMessage) string {
	var m struct {
		UserID json.RawMessage `json:"user_id"`
	}
	if len(metadata) == 0 || json.Unmarshal(metadata, &m) != nil || len(m.UserID) == 0 {
		return ""
	}
	var id string
	if json.Unmarshal(m.UserID, &id) != nil {
		return sessionField(m.UserID) // the object itself, unencoded
	}
	if strings.HasPrefix(strings.TrimSpace(id), "{") {
		return sessionField([]byte(id))
	}
	if i := strings.LastIndex(id, sessionMark); i >= 0 {
		return id[i+len(sessionMark):]
	}
	return ""
}

// sessionField is the session_id string of a JSON object, or "".
func sessionField(obj []byte) string {
	var v struct {
		SessionID json.RawMessage `json:"session_id"`
	}
	if json.Unmarshal(obj, &v) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(v.SessionID, &s) != nil {
		return ""
	}
	return s
}
