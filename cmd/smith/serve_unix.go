//go:build unix

package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// listenUnix listens on a Unix socket that only the user can connect to.
// The umask is narrowed while the socket file is created, so there is no
// moment at which another user could connect; a stale socket left by a
// crashed server is removed, a live one is an error.
func listenUnix(path string) (net.Listener, error) {
	if _, err := os.Lstat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another smith serve is already listening there (stop it or pick another path)", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("socket %s: %w", path, err)
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
