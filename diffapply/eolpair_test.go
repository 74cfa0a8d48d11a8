package diffapply

import (
	"strings"
	"testing"
)

// TestDroppedNoNewlineMarkerIsANewlineChange: a diff that lost its
// "\ No newline at end of file" marker still shows the change: the last
// line removed and added back unchanged at the end of the file. That is
// the final newline changing, not a no-op.
func TestDroppedNoNewlineMarkerIsANewlineChange(t *testing.T) {
	const d = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-x\n+x\n"
	for _, c := range []struct{ before, after string }{
		{"a\nx", "a\nx\n"}, // the newline is added
		{"a\nx\n", "a\nx"}, // the newline is removed
	} {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"f": c.before})
		p, err := Plan(root, []byte(d), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(p.Files[0].After); got != c.after {
			t.Errorf("before %q: after %q, want %q", c.before, got, c.after)
		}
		if !strings.Contains(strings.Join(p.Repairs, "\n"), "final newline") {
			t.Errorf("before %q: repairs %q do not say how the pair was read", c.before, p.Repairs)
		}
	}
	// A pair that differs by its CR is a line-ending change, read as such.
	{
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"f": "a\r\nx\r\n"})
		p, err := Plan(root, []byte("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\r\n-x\r\n+x\n"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(p.Files[0].After); got != "a\r\nx\n" {
			t.Errorf("CRLF to LF on the last line: after %q, want %q", got, "a\r\nx\n")
		}
	}
	// Not at the end of the file, the same pair is what it says.
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"f": "a\nx\nz\n"})
	p, err := Plan(root, []byte("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-x\n+x\n z\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(p.Files[0].After); got != "a\nx\nz\n" {
		t.Errorf("mid-file pair: after %q", got)
	}
}
