package diffapply

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWritesRefusalsReadWithoutTheirKind: a file refused whole says what
// happened and to which file, once; errors.Is finds ErrConflict, and the
// text does not end in its name (": conflict"), which a caller that names
// the file too would otherwise make read "f: f: ...: conflict".
func TestWritesRefusalsReadWithoutTheirKind(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "e.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "d.txt"), []byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		diff string
		ids  []int
		want string
	}{
		{"renaming onto a file that exists", "diff --git a/d.txt b/e.txt\nsimilarity index 100%\nrename from d.txt\nrename to e.txt\n", nil,
			"the diff renames d.txt to e.txt, but e.txt already exists"},
		{"a deletion in part", "--- a/d.txt\n+++ /dev/null\n@@ -1,5 +0,0 @@\n-1\n-2\n-3\n-4\n-5\n@@ -6,5 +0,0 @@\n-6\n-7\n-8\n-9\n-10\n", []int{1},
			"the diff deletes d.txt whole, so its hunks cannot be applied in part: choose all of them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Plan(root, []byte(tt.diff), Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Writes(tt.ids)
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("err = %v, want ErrConflict", err)
			}
			if err.Error() != tt.want {
				t.Errorf("err text\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}
