//go:build unix

package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockState takes an exclusive lock on the state folder for the life of an
// Engine: two engines rewriting one state file would lose each other's
// changes. The lock is flock(2) on state/lock, so it dies with the process;
// the file names the holder's pid for the error message.
func lockState(dir string) (release func() error, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, stateDirError(dir, err)
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the state directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := strings.TrimSpace(string(b))
			if holder == "" {
				holder = "unknown"
			}
			return nil, fmt.Errorf("%w: %s is used by another smith engine (pid %s); talk to that one (smith serve) or stop it", ErrStateLocked, dir, holder)
		}
		return nil, fmt.Errorf("lock the state directory: %w", err)
	}
	f.Truncate(0)
	f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	return f.Close, nil // closing the file releases the lock
}
