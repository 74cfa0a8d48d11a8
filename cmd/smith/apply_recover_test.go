//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyKilledAtEachStepRecovers is issue 16's reproduction: strace
// kills `smith apply` of 200 one-line changes at its Nth unlink or rename
// (the journal's removal used to tear a finished apply); `smith apply
// --recover` must then leave all 200 files old or all new, exit 0, and a
// second --recover and an unrelated apply must not be blocked.
func TestApplyKilledAtEachStepRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs smith under strace many times")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	if out, err := exec.Command(strace, "-f", "-qq", "-o", os.DevNull, "true").CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here: %v %s", err, out)
	}
	smith, err := exec.LookPath("smith") // the test binary as smith (TestMain)
	if err != nil {
		t.Fatal(err)
	}
	type kill struct {
		calls string
		when  int
	}
	var kills []kill
	for _, when := range []int{1, 2, 3, 50, 100, 150} {
		kills = append(kills, kill{"unlinkat", when})
	}
	for _, when := range []int{1, 2, 100, 200, 201, 202} {
		kills = append(kills, kill{"renameat,renameat2,rename", when})
	}
	for _, k := range kills {
		calls, when := k.calls, k.when
		t.Run(fmt.Sprintf("killed at %s %d", calls, when), func(t *testing.T) {
			base := t.TempDir()
			ws := filepath.Join(base, "ws")
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			var diff bytes.Buffer
			for i := 1; i <= 200; i++ {
				if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), fmt.Appendf(nil, "old %d\n", i), 0o644); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&diff, "--- a/f%[1]d.txt\n+++ b/f%[1]d.txt\n@@ -1 +1 @@\n-old %[1]d\n+new %[1]d\n", i)
			}
			patch := filepath.Join(base, "p.diff")
			if err := os.WriteFile(patch, diff.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(base, "state"), "NO_COLOR=1")
			run := func(name string, args ...string) (string, error) {
				cmd := exec.Command(name, args...)
				cmd.Dir, cmd.Env = ws, env
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			run(strace, "-f", "-qq", "-o", os.DevNull, "-e", "trace="+calls, "-e", fmt.Sprintf("inject=%s:signal=KILL:when=%d", calls, when), smith, "apply", patch)
			for i := range 2 {
				if out, err := run(smith, "apply", "--recover"); err != nil {
					t.Fatalf("--recover #%d: %v\n%s", i+1, err, out)
				}
			}
			newN, oldN := 0, 0
			ents, _ := os.ReadDir(ws)
			for _, e := range ents {
				b, _ := os.ReadFile(filepath.Join(ws, e.Name()))
				switch {
				case strings.HasPrefix(e.Name(), "."):
					t.Errorf("left in the workspace: %s", e.Name())
				case bytes.HasPrefix(b, []byte("new")):
					newN++
				case bytes.HasPrefix(b, []byte("old")):
					oldN++
				}
			}
			if newN != 0 && oldN != 0 {
				t.Errorf("after --recover %d files are new and %d old: the apply was torn", newN, oldN)
			}
			if err := os.WriteFile(filepath.Join(ws, "other.txt"), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			other := filepath.Join(base, "o.diff")
			os.WriteFile(other, []byte("--- a/other.txt\n+++ b/other.txt\n@@ -1 +1 @@\n-x\n+y\n"), 0o644)
			if out, err := run(smith, "apply", other); err != nil {
				t.Errorf("an unrelated apply after the recovery: %v\n%s", err, out)
			}
		})
	}
}
