package pebblestore

import (
	"errors"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsLockHeld(t *testing.T) {
	for _, tc := range []struct {
		err  error
		held bool
	}{
		{syscall.EAGAIN, true}, // fcntl: another process holds it
		{syscall.EACCES, true},
		{errors.New("lock held by current process"), true},
		// Creating the lock file failed: the directory, not its owner.
		{&fs.PathError{Op: "open", Path: "LOCK", Err: syscall.EACCES}, false},
		{&fs.PathError{Op: "open", Path: "LOCK", Err: syscall.EISDIR}, false},
	} {
		assert.Equal(t, tc.held, isLockHeld(tc.err), "%v", tc.err)
	}
}
