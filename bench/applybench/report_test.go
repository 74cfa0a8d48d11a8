package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

// A dumped failure must replay as the same case: same patch (with the
// workspace path restored), same files byte for byte, including files
// without a final newline and CRLF files.
func TestFailureArchiveRoundTrip(t *testing.T) {
	root := "/srv/ws/proj"
	bc := &benchCase{
		Set: setDamaged, Kind: kindAbsolutePath, Commit: "0123456789abcdef",
		patch:  []byte("--- " + root + "/a.txt\n+++ " + root + "/a.txt\n@@ -1 +1 @@\n-x\n+y\n"),
		before: map[string][]byte{"a.txt": []byte("x\r\n"), "gone.txt": []byte("bye\n"), "d/nonl.txt": []byte("no newline")},
		after:  map[string][]byte{"a.txt": []byte("y\r\n"), "d/nonl.txt": []byte("no newline")},
	}
	res := &result{Tool: "smith", Outcome: outcomeSilentWrong, got: map[string][]byte{"a.txt": []byte("y\n")}}

	path := filepath.Join(t.TempDir(), "case.txtar")
	if err := os.WriteFile(path, txtar.Format(failureArchive(root, bc, res)), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readArchive(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.root != "proj" || got.kind != kindAbsolutePath {
		t.Errorf("root, kind = %q, %q; want proj, %s", got.root, got.kind, kindAbsolutePath)
	}
	if want := "--- $ROOT/a.txt\n+++ $ROOT/a.txt\n@@ -1 +1 @@\n-x\n+y\n"; string(got.patch) != want {
		t.Errorf("patch = %q, want %q", got.patch, want)
	}
	if diff := cmp.Diff(bc.before, got.before); diff != "" {
		t.Errorf("before files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(bc.after, got.after); diff != "" {
		t.Errorf("after files (-want +got):\n%s", diff)
	}
}

func TestDecodeName(t *testing.T) {
	for _, tt := range []struct{ name, data, wantName, wantData string }{
		{"in/f", "a\n", "in/f", "a\n"},
		{"in/f.nonl", "a\n", "in/f", "a"},
		{"in/f.crlf", "a\nb\n", "in/f", "a\r\nb\r\n"},
		{"in/f.crlf.nonl", "a\nb\n", "in/f", "a\r\nb"},
	} {
		name, data := decodeName(tt.name, []byte(tt.data))
		if name != tt.wantName || string(data) != tt.wantData {
			t.Errorf("decodeName(%q, %q) = %q, %q; want %q, %q", tt.name, tt.data, name, data, tt.wantName, tt.wantData)
		}
	}
}
