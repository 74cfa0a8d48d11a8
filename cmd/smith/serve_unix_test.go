//go:build unix

package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shortDir is a temporary folder with a path short enough for a Unix
// socket name (t.TempDir can pass the 108-byte limit).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestListenUnixRefusesWhatIsNotAStaleSocket: --listen unix:PATH replaces
// only a socket nobody accepts on; a regular file, a symlink (and the file
// it points to) and a live socket are left alone and named in the error.
func TestListenUnixRefusesWhatIsNotAStaleSocket(t *testing.T) {
	dir := shortDir(t)

	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "live.sock")
	lln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer lln.Close()

	for _, tc := range []struct{ path, want string }{
		{file, "regular file"},
		{link, "symlink"},
		{live, "already listening"},
		{dir, "directory"},
	} {
		ln, err := listenUnix(tc.path)
		if err == nil {
			ln.Close()
			t.Errorf("listenUnix(%s) took over the path", tc.path)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("listenUnix(%s) = %q, want it to name the path and say %q", tc.path, err, tc.want)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep me" {
		t.Errorf("the regular file was touched: %q, %v", b, err)
	}
	if target, err := os.Readlink(link); err != nil || target != file {
		t.Errorf("the symlink was touched: %q, %v", target, err)
	}
	if c, err := net.Dial("unix", live); err != nil {
		t.Errorf("the live socket no longer answers: %v", err)
	} else {
		c.Close()
	}
}

// TestListenUnixReplacesStaleSocket: the socket of a server that died
// (the file stays, nobody accepts) is removed and listened on again.
func TestListenUnixReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(shortDir(t), "stale.sock")
	old, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	old.(*net.UnixListener).SetUnlinkOnClose(false)
	old.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the stale socket should still be there: %v", err)
	}
	ln, err := listenUnix(path)
	if err != nil {
		t.Fatalf("listenUnix on a stale socket: %v", err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the new socket does not accept: %v", err)
	}
	c.Close()
}
