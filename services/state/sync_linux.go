package state

import (
	"errors"
	"os"
	"syscall"
)

// fdatasync syncs file's data (and what of its metadata reading the
// data needs, its length) to disk.
func fdatasync(file *os.File) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if !errors.Is(serr, syscall.EINTR) {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	return serr
}
