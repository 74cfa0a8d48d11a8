package diffapply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNearestIsDeterministic: when a hunk that matches nowhere nearly
// matches in two places as near to its stated line, the conflict names the
// same place every time (the earlier one), not whichever a map yields
// first.
func TestNearestIsDeterministic(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("a\nb\nX\nq\nq\nq\na\nb\nY\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// stated at line 4: the near places, lines 1 and 7, are 3 lines away each
	diff := []byte("--- a/f.txt\n+++ b/f.txt\n@@ -4,3 +4,3 @@\n a\n b\n-Z\n+W\n")
	for i := 0; i < 50; i++ {
		c := onlyConflict(t, root, diff)
		if c.NearLine != 1 || c.NearMatched != 2 {
			t.Fatalf("run %d: nearest at line %d (%d lines match), want line 1 (2 lines)", i, c.NearLine, c.NearMatched)
		}
	}
}

// TestNearestBeforeLineOne: the best near place may start before line 1;
// that is a place, not "no line occurs in the file".
func TestNearestBeforeLineOne(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := onlyConflict(t, root, []byte("--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n Q\n a\n-b\n+B\n"))
	if strings.Contains(c.Reason, "none of the hunk's old lines") || !strings.Contains(c.Detail, "before line 1") {
		t.Errorf("conflict = %+v, want a place before line 1", c)
	}
}

func onlyConflict(t *testing.T, root string, diff []byte) *Conflict {
	t.Helper()
	p, err := Plan(root, diff, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hunks, _ := p.Conflicts()
	if len(hunks) != 1 || hunks[0].Conflict == nil {
		t.Fatalf("want one conflicting hunk, got %d", len(hunks))
	}
	return hunks[0].Conflict
}
