//go:build !unix

package daemon

// lockState is a no-op where flock(2) does not exist; do not run two
// engines on one workspace there.
func lockState(dir string) (release func() error, err error) {
	return func() error { return nil }, nil
}
