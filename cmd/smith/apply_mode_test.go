package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smith-dev/smith/protocol/upstream"
)

// TestApplyModesThroughServeBesideEditor: with a smith serve holding the
// workspace and an editor holding calc.go open, smith apply of a git diff
// that makes calc.go executable with an edit and creates run.sh
// executable goes through the serve's engine: calc.go's edit goes into
// the editor's buffer (the file on disk keeps its text) and its mode onto
// the file on disk, run.sh is created on disk with its mode; smith undo
// takes both back, the buffer's text and calc.go's mode included.
func TestApplyModesThroughServeBesideEditor(t *testing.T) {
	a := newAttachEnv(t, upstream.Options{})
	ed := a.serve()
	ctx := testContext(t)
	path, run := filepath.Join(a.ws, "calc.go"), filepath.Join(a.ws, "run.sh")
	if err := ed.Open(ctx, path, calcOrig); err != nil {
		t.Fatal(err)
	}
	patch := filepath.Join(t.TempDir(), "modes.diff")
	diff := "diff --git a/calc.go b/calc.go\nold mode 100644\nnew mode 100755\n--- a/calc.go\n+++ b/calc.go\n" +
		"@@ -1,4 +1,4 @@\n package calc\n \n-// total adds xs up.\n+// total adds all of xs up.\n func total(xs []int) int {\n" +
		"diff --git a/run.sh b/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1 @@\n+echo hi\n"
	if err := os.WriteFile(patch, []byte(diff), 0o644); err != nil {
		t.Fatal(err)
	}
	mode := func(p string) fs.FileMode {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}

	// smith apply has no --state-dir: the serve's comes from the environment.
	apply := exec.Command(a.smith, "apply", patch)
	apply.Dir, apply.Env = a.ws, append(a.env, "SMITH_STATE_DIR="+a.state)
	var stderr strings.Builder
	apply.Stderr = &stderr
	if err := apply.Run(); err != nil {
		t.Fatalf("smith apply: %v\n%s", err, stderr.String())
	}
	errs := stderr.String()
	if strings.Contains(errs, "will not cover") || !strings.Contains(errs, "undo with: smith undo") {
		t.Errorf("smith apply of a patch that sets modes, through smith serve:\n%s", errs)
	}
	edited := strings.Replace(calcOrig, "// total adds xs up.", "// total adds all of xs up.", 1)
	if b, _ := ed.Buffer(path); b.Text != edited {
		t.Errorf("the editor's buffer after the apply:\n%s", b.Text)
	}
	if got := a.calc(); got != calcOrig {
		t.Errorf("calc.go on disk changed behind the editor's buffer:\n%s", got)
	}
	if m := mode(path); m != 0o755 {
		t.Errorf("calc.go's mode after the apply: %o, want 755", m)
	}
	if b, err := os.ReadFile(run); err != nil || string(b) != "echo hi\n" || mode(run) != 0o755 {
		t.Errorf("run.sh after the apply: %q, %v, want it created executable", b, err)
	}

	_, errs = a.mustRun("undo")
	if !strings.Contains(errs, "calc.go, run.sh restored") {
		t.Errorf("smith undo through smith serve:\n%s", errs)
	}
	if b, _ := ed.Buffer(path); b.Text != calcOrig {
		t.Errorf("the editor's buffer after the undo:\n%s", b.Text)
	}
	if m := mode(path); m != 0o644 {
		t.Errorf("calc.go's mode after the undo: %o, want 644", m)
	}
	if _, err := os.Lstat(run); err == nil {
		t.Errorf("run.sh is still there after the undo")
	}
}
