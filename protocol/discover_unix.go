//go:build unix

package protocol

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this pid exists. Signal 0
// checks without sending anything; EPERM means it exists but is not ours.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
