package editor_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// TestFailedDiskWriteTakesBackTheEditorsDeletion: a patch deletes a.txt
// and edits b.txt, both open in an editor that deletes files through
// workspace/applyEdit, and edits d.txt, which is closed and written on
// disk. Another tool changes d.txt while the editor applies its part, so
// the disk write fails after the editor deleted a.txt and edited b.txt:
// a.txt is written back on disk (the editor has no buffer of it any
// more), b.txt is put back through the editor, and the error says what
// became of each. When the editor refuses the take-back, the error names
// b.txt as left, instead of saying nothing was written.
func TestFailedDiskWriteTakesBackTheEditorsDeletion(t *testing.T) {
	t.Parallel()
	const tool = "d changed by another tool\n"
	files := map[string]string{"a.txt": "a1\na2\n", "b.txt": "b1\nb2\n", "d.txt": "d1\nd2\n"}
	patch := []protocol.Change{
		{Path: "a.txt", Kind: protocol.ChangeDelete, Diff: "--- a/a.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a1\n-a2\n"},
		{Path: "b.txt", Kind: protocol.ChangeModify, Diff: "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n-b1\n+B1\n b2\n"},
		{Path: "d.txt", Kind: protocol.ChangeModify, Diff: "--- a/d.txt\n+++ b/d.txt\n@@ -1,2 +1,2 @@\n-d1\n+D1\n d2\n"},
	}
	for _, tt := range []struct {
		name    string
		refuse  bool   // the editor refuses the take-back
		b       string // what b.txt's buffer holds at the end
		said    []string
		notSaid []string
	}{
		{
			name:    "taken back",
			b:       "b1\nb2\n",
			said:    []string{"a.txt was written back on disk (the editor had deleted it)", "b.txt was put back"},
			notSaid: []string{"left as it is", "nothing was written"},
		},
		{
			name: "the editor refuses the take-back", refuse: true,
			b:       "B1\nb2\n",
			said:    []string{"a.txt was written back on disk (the editor had deleted it)", "b.txt cannot be taken back: the editor refused", "left as it is", "Review the files left as they are"},
			notSaid: []string{"nothing was written"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := workspace(t, files)
			up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV0})
			s := serve(t, ws, up, t.TempDir())
			ctx := testCtx(t)
			a, b, d := filepath.Join(ws, "a.txt"), filepath.Join(ws, "b.txt"), filepath.Join(ws, "d.txt")
			for _, p := range []string{a, b} {
				if err := s.Open(ctx, p, files[filepath.Base(p)]); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			var labels []string
			s.OnApplyEdit(func(label string) {
				mu.Lock()
				labels = append(labels, label)
				first := len(labels) == 1
				mu.Unlock()
				if !first {
					return
				}
				if err := os.WriteFile(d, []byte(tool), 0o644); err != nil {
					t.Error(err)
				}
				s.RefuseEdits(tt.refuse) // from the next edit: the take-back
			})
			err := s.Call(ctx, editor.MethodPatchApply, &editor.PatchApplyParams{Changes: patch}, nil)
			if got := rpcCode(t, err); got != editor.CodeConflict {
				t.Fatalf("apply: %v (code %d), want the conflict of d.txt (%d)", err, got, editor.CodeConflict)
			}
			mu.Lock()
			n := len(labels)
			mu.Unlock()
			if n == 0 {
				t.Fatalf("no workspace/applyEdit reached the editor: the test does not test the take-back (%v)", err)
			}
			msg := err.Error()
			for _, want := range append([]string{"a file changed while smith was writing it", "d.txt"}, tt.said...) {
				if !strings.Contains(msg, want) {
					t.Errorf("the error does not say %q:\n%s", want, msg)
				}
			}
			for _, not := range tt.notSaid {
				if strings.Contains(msg, not) {
					t.Errorf("the error says %q:\n%s", not, msg)
				}
			}
			if got := readFile(t, a); got != files["a.txt"] {
				t.Errorf("a.txt holds %q on disk, want it written back as %q", got, files["a.txt"])
			}
			if buf, ok := s.Buffer(b); !ok || buf.Text != tt.b {
				t.Errorf("b.txt's buffer holds %q (open %v), want %q", buf.Text, ok, tt.b)
			}
			if got := readFile(t, d); got != tool {
				t.Errorf("d.txt holds %q, want what the other tool wrote", got)
			}
		})
	}
}
