//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package etcdtest

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes f's exclusive flock without waiting, and reports whether
// it got it. A flock belongs to the open file, so a second open of the
// same file fails to lock it even in the same process.
func lockFile(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("etcdtest: lock %s: %w", f.Name(), err)
	}
	return true, nil
}
