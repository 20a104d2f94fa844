package readiness

import "time"

// Key is the state of one of the native back door's Cursor API keys
// (BACKEND=cursor), named by its fingerprint: the key itself never
// appears in /ready.
type Key struct {
	Key string `json:"key"` // the fingerprint
	// State is ok, bad (Cursor refuses it), cooling (resting after a
	// quota or rate limit) or probing (its rest is over: the next of its
	// conversations tries it).
	State string `json:"state"`
	// Reason says why a bad key is refused.
	Reason string `json:"reason,omitempty"`
	// CoolingUntil and CoolingFor say when a cooling key's rest ends.
	CoolingUntil *time.Time `json:"cooling_until,omitempty"`
	CoolingFor   string     `json:"cooling_for,omitempty"`
	// Failures are quota or rate-limit failures in a row.
	Failures  int   `json:"failures_in_a_row,omitempty"`
	Requests  int64 `json:"requests"`
	Cooldowns int64 `json:"cooldowns"`
	// LastError is clipped, and names no key.
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
}
