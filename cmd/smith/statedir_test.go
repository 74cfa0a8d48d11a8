package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smith-dev/smith/config"
)

// TestStateDirAtStartReadOnly: an existing folder smith may not write in
// passes MkdirAll; the start-up check of serve and acp still finds it,
// naming the folder and the flag. (Root writes anywhere: skipped as root.)
func TestStateDirAtStartReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write in a read-only folder")
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o700) })
	set, err := config.Load(config.Options{Flags: map[string]string{"state_dir": ro}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	err = stateDirAtStart(set, "")
	if err == nil {
		t.Fatal("a read-only state folder passed the start-up check")
	}
	for _, want := range []string{ro, "--state-dir", "permission denied"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not name %q", err, want)
		}
	}
	if err := stateDirAtStart(set, t.TempDir()); err == nil {
		t.Error("a read-only state folder passed the check with a workspace")
	}
}
