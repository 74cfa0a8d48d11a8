//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestApplyFsyncs: the fsyncs of `smith apply` of a one-file diff through
// the engine are exactly those docs/benchmarks.md lists, in order: the
// write-ahead state file and its folder (and, for a state folder made
// now, the folder that holds it), the temp file, the folder it is renamed
// in, the state file that says the write happened. No pack, no journal
// folder, nothing else.
func TestApplyFsyncs(t *testing.T) {
	strace, smith := straceOrSkip(t)
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(ws, "pkg", "a.go")
	patch := filepath.Join(base, "p.diff")
	if err := os.WriteFile(patch, []byte("--- a/pkg/a.go\n+++ b/pkg/a.go\n@@ -1 +1 @@\n-old\n+new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(base, "state")
	fsyncs := func() []string {
		t.Helper()
		if err := os.WriteFile(file, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(base, "strace.out")
		cmd := exec.Command(strace, "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync", "-o", out, smith, "apply", patch)
		cmd.Dir, cmd.Env = ws, append(os.Environ(), "XDG_STATE_HOME="+state, "NO_COLOR=1")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("smith apply: %v\n%s", err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		dir, err := filepath.Glob(filepath.Join(state, "smith", "*"))
		if err != nil || len(dir) != 1 {
			t.Fatalf("state folders: %v %v", dir, err)
		}
		names := strings.NewReplacer(dir[0], "STATE", filepath.Dir(dir[0]), "STATE/..", ws, "WS")
		tmp := regexp.MustCompile(`(\.tmp-|\.smith-)[0-9a-f]+`)
		var got []string
		// No closing parenthesis: strace -f splits a call another thread
		// interrupts into "fsync(5</p> <unfinished ...>" and a resumed line.
		for _, m := range regexp.MustCompile(`fsync\(\d+<([^>]*)>`).FindAllStringSubmatch(string(b), -1) {
			got = append(got, tmp.ReplaceAllString(names.Replace(m[1]), "${1}*"))
		}
		return got
	}
	first := []string{"STATE/.tmp-*", "STATE", "STATE/..", "WS/pkg/.a.go.smith-*", "WS/pkg", "STATE/.tmp-*"}
	if d := cmp.Diff(first, fsyncs()); d != "" {
		t.Errorf("fsyncs of the first apply (-want +got):\n%s", d)
	}
	next := []string{"STATE/.tmp-*", "STATE", "WS/pkg/.a.go.smith-*", "WS/pkg", "STATE/.tmp-*"}
	if d := cmp.Diff(next, fsyncs()); d != "" {
		t.Errorf("fsyncs of the next apply (-want +got):\n%s", d)
	}
}
