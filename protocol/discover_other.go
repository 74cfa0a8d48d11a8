//go:build !unix

package protocol

import "os"

// processAlive reports whether a process with this pid exists. Where there
// is no signal 0, finding the process is the best check there is.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
