//go:build unix

package editor

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// NewStdio takes over stdin and stdout for the protocol.
//
// Stdin is put in non-blocking mode so that closing it interrupts a pending
// read (a blocking read on a pipe ignores Close), which lets a shut-down
// server return instead of hanging until the editor writes again.
//
// The protocol gets its own copy of the stdout descriptor, and fd 1 is
// then pointed at stderr: a stray print anywhere in the process (a
// library, a panic handler writing to stdout) lands in the log instead of
// corrupting the editor's JSON-RPC stream. After NewStdio, os.Stdout
// writes to stderr.
func NewStdio() (*Stdio, error) {
	out, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("duplicate stdout: %w", err)
	}
	if err := unix.Dup2(2, 1); err != nil {
		unix.Close(out)
		return nil, fmt.Errorf("point stdout at stderr: %w", err)
	}
	// SetNonblock fails for files the poller cannot watch (a regular file
	// given as stdin); reads then block as before, which is harmless.
	nbErr := syscall.SetNonblock(0, true)
	return &Stdio{
		in:          os.NewFile(0, "stdin"),
		out:         os.NewFile(uintptr(out), "protocol-stdout"),
		nonblocking: nbErr == nil,
	}, nil
}

func restoreBlocking() { _ = syscall.SetNonblock(0, false) }
