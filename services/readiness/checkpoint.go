package readiness

import "time"

// Checkpoint is the state of Vercel's security checkpoint, as the wiring
// reads it.
type Checkpoint struct {
	Mode   string             `json:"mode"`
	Egress []CheckpointEgress `json:"egress"`
}

// CheckpointEgress is the checkpoint's state through one egress.
type CheckpointEgress struct {
	Egress    string `json:"egress"`
	HasCookie bool   `json:"has_cookie"`
	// ExpiresIn is how long the cookie still lasts.
	ExpiresIn     string     `json:"expires_in,omitempty"`
	LastSolve     *time.Time `json:"last_solve,omitempty"`
	LastSolveTook string     `json:"last_solve_took,omitempty"`
	Solves        int64      `json:"solves"`
	Failures      int64      `json:"failures"`
	LastError     string     `json:"last_error,omitempty"`
	// NoCheckpoint is set while the site's page asked for none.
	NoCheckpoint bool `json:"no_checkpoint,omitempty"`
}
