//go:build unix

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"
)

// listenUnix listens on a Unix socket that only the user can connect to.
// The umask is narrowed while the socket file is created, so there is no
// moment at which another user could connect.
//
// Something already at path is removed only when it is a stale socket: a
// socket nobody accepts on (a crashed server's). Anything else is refused
// and named: a live socket is another server's, and a regular file, a
// symlink or a directory is the user's (removing a symlink named by a typo
// would be as wrong as removing the file it points to).
func listenUnix(path string) (net.Listener, error) {
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	return ln, nil
}

// removeStaleSocket makes room for a socket at path, or says why not.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("--listen %s: a %s is already there and smith only replaces a stale socket; remove it yourself or pick another path", path, fileKind(fi.Mode()))
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("--listen %s: another server is already listening on this socket (stop it or pick another path)", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		// Not provably stale (no permission to connect, a timeout of a busy
		// server): leave it alone.
		return fmt.Errorf("--listen %s: a socket is there and smith cannot tell whether it is in use (%v); remove it yourself if it is stale, or pick another path", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}

// fileKind names a file type for a message.
func fileKind(m fs.FileMode) string {
	switch m.Type() {
	case 0:
		return "regular file"
	case fs.ModeSymlink:
		return "symlink"
	case fs.ModeDir:
		return "directory"
	case fs.ModeNamedPipe:
		return "named pipe"
	case fs.ModeDevice, fs.ModeDevice | fs.ModeCharDevice:
		return "device"
	}
	return "file that is not a socket"
}
