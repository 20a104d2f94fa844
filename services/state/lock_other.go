//go:build !unix

package state

import (
	"errors"
	"os"
)

// errLocked is lockFile's error for a file another process holds.
var errLocked = errors.New("locked by another process")

// lockFile does not lock where there is no flock: one process per
// STATE_DIR is then the operator's to keep.
func lockFile(*os.File) error { return nil }

// syncDir does nothing where directories cannot be synced.
func syncDir(string) error { return nil }
