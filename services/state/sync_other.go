//go:build !linux

package state

import "os"

// fdatasync syncs file to disk (fsync: there is no fdatasync here).
func fdatasync(file *os.File) error { return file.Sync() }
