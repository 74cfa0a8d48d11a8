package diffapply

import (
	"testing"
)

// A tool's output carries no line-end information: PlanContent keeps a
// file's own convention, unlike a byte-exact diff (see the eol-exact-*
// cases), and a pure line-end change plans nothing.
func TestPlanContentLineEnds(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"crlf.txt": "a\r\nb\r\nc\r\n", "lf.txt": "a\nb\nc\n"})
	for _, tc := range []struct {
		name, path, content, want string
		files                     int
	}{
		{"LF edit of a CRLF file", "crlf.txt", "a\nB\nc\nd\n", "a\r\nB\r\nc\r\nd\r\n", 1},
		{"CRLF edit of an LF file", "lf.txt", "a\r\nB\r\nc\r\n", "a\nB\nc\n", 1},
		{"CRLF to LF only", "crlf.txt", "a\nb\nc\n", "", 0},
		{"new file keeps its CRLF", "new.txt", "x\r\ny\n", "x\r\ny\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanContent(root, tc.path, []byte(tc.content), Options{})
			must(t, err)
			if len(p.Files) != tc.files {
				t.Fatalf("%d files, want %d", len(p.Files), tc.files)
			}
			if tc.files > 0 && string(p.Files[0].After) != tc.want {
				t.Errorf("After = %q, want %q", p.Files[0].After, tc.want)
			}
		})
	}
}
