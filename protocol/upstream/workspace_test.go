package upstream

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkspaceAbsConfines(t *testing.T) {
	w, err := newWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for rel, ok := range map[string]bool{
		"main.go": true, "a/b/c.txt": true, "./x": true, "a/../b": true,
		"../x": false, "a/../../x": false, "/etc/passwd": false, ".": false,
		".agentsmithy/status.json": false, ".git/config": false, "": false,
	} {
		if _, err := w.abs(rel); (err == nil) != ok {
			t.Errorf("abs(%q): err = %v, want ok %v", rel, err, ok)
		}
	}
}

// TestBadRequestsLeaveFilesAlone: requests the agent cannot or must not
// carry out get a text answer and change nothing, inside or outside.
func TestBadRequestsLeaveFilesAlone(t *testing.T) {
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFixture(t, ws)
	_, base := newTestServer(t, Options{Workspace: ws})
	for _, msg := range []string{
		`create ../escape.txt with "x"`,
		"rename root to x in ../../etc/passwd",
		"delete ../ws/../outside.txt",
		"delete .agentsmithy/status.json",
		"add a comment to nothing in main.go",
		"rename nothing to x in main.go",
		"rename x to y in missing.go",
	} {
		res, body := chat(t, base, "", msg)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"type": "done"`) || strings.Contains(string(body), "file_edit") {
			t.Errorf("%q: %d, file_edit or no done:\n%s", msg, res.StatusCode, body)
		}
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 {
		t.Errorf("something was written next to the workspace: %v", entries)
	}
	for rel, want := range fixture {
		if got, _ := readFile(t, ws, rel); got != want {
			t.Errorf("%s changed", rel)
		}
	}
}

func TestChangedFileCountsDashLines(t *testing.T) {
	c := fileChange("x.sql", "modified", []byte("-- a\n-- b\nkeep\n"), []byte("keep\n++ c\n"), true)
	if c.Additions != 1 || c.Deletions != 2 {
		t.Errorf("additions %d deletions %d, want 1 and 2", c.Additions, c.Deletions)
	}
}

// TestCRLFFileBecomesLF: like Python's read_text/write_text on Linux, the
// server reads a CRLF file with universal newlines and writes it back
// LF-only; its diff never contains CR.
func TestCRLFFileBecomesLF(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "w.txt"), []byte("one\r\ntwo\r\nthree\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, base := newTestServer(t, Options{Workspace: ws})
	_, body := chat(t, base, "", "rename two to TWO in w.txt")
	if got, _ := readFile(t, ws, "w.txt"); got != "one\nTWO\nthree\n" {
		t.Errorf("w.txt = %q", got)
	}
	want := `"diff": "--- a/` + s.Workspace() + `/w.txt\n+++ b/` + s.Workspace() + `/w.txt\n@@ -1,3 +1,3 @@\n one\n\n-two\n\n+TWO\n\n three\n"`
	if !strings.Contains(string(body), want) {
		t.Errorf("file_edit diff is not %s:\n%s", want, body)
	}
}
