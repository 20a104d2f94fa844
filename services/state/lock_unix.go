//go:build unix

package state

import (
	"errors"
	"os"
	"syscall"
)

// errLocked is lockFile's error for a file another process holds.
var errLocked = errors.New("locked by another process")

// lockFile takes an exclusive flock of file without waiting. It lasts
// until the file is closed.
func lockFile(file *os.File) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	err = rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	if errors.Is(ferr, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return ferr
}

// syncDir syncs the directory dir, so that the names of the files
// created or renamed in it survive a power cut.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
