package native

import (
	"net/http"

	"cursor2api/models"
	"cursor2api/services/native/keys"
)

// errNoKey is what a request gets when CURSOR_API_KEY is empty (or
// unusable as given): the gateway starts anyway, and /ready says so.
var errNoKey = &models.Error{
	Status: http.StatusServiceUnavailable, Kind: models.KindAPI, Code: "cursor_no_key",
	Message: "the cursor backend has no API key: set CURSOR_API_KEY (Cursor dashboard > Integrations > User API Keys), one key or several separated by commas",
}

// Keys returns the state of every API key, named by fingerprint, for
// /ready and /metrics; nil without a usable CURSOR_API_KEY.
func (c *Client) Keys() []keys.KeyState {
	if c.keys == nil {
		return nil
	}
	return c.keys.Snapshot()
}
