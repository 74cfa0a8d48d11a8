package editor_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/editor/editortest"
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
			said:    []string{"a.txt was written back on disk (the editor had deleted it)", "b.txt cannot be taken back: the editor refused the edit (refused by the test); left as it is, holding smith's edit", "Review the files left as they are"},
			notSaid: []string{"nothing was written", "list the change again", "the buffer changed since the plan"},
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
			// Files are named relative to the workspace, in the whole error.
			for _, not := range append(tt.notSaid, ws) {
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

// TestFailedBatchTakesBackTwoEditors: two editors share one workspace's
// engine; a patch edits a.txt, open in the first, b.txt, open in the
// second, and d.txt, closed. The first editor accepts its part; then the
// second refuses its take-back, refuses its edit, or cannot express its
// part (a deletion without the delete resource operation), which then
// goes to disk and fails there. In each case a.txt is put back through
// the first editor, and the error names every file and what became of it.
func TestFailedBatchTakesBackTwoEditors(t *testing.T) {
	t.Parallel()
	const tool = "changed by another tool\n"
	files := map[string]string{"a.txt": "a1\na2\n", "b.txt": "b1\nb2\n", "d.txt": "d1\nd2\n"}
	editA := protocol.Change{Path: "a.txt", Kind: protocol.ChangeModify, Diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-a1\n+A1\n a2\n"}
	editB := protocol.Change{Path: "b.txt", Kind: protocol.ChangeModify, Diff: "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n-b1\n+B1\n b2\n"}
	deleteB := protocol.Change{Path: "b.txt", Kind: protocol.ChangeDelete, Diff: "--- a/b.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-b1\n-b2\n"}
	editD := protocol.Change{Path: "d.txt", Kind: protocol.ChangeModify, Diff: "--- a/d.txt\n+++ b/d.txt\n@@ -1,2 +1,2 @@\n-d1\n+D1\n d2\n"}
	for _, tt := range []struct {
		name     string
		patch    []protocol.Change
		refuse   bool   // the second editor refuses every edit
		refuseTB bool   // the second editor refuses its take-back
		noDelete bool   // the second editor cannot delete a file
		changed  string // the file another tool changes while the first editor applies
		b        string // what b.txt's buffer holds at the end
		bDisk    string // what b.txt holds on disk at the end
		d        string // what d.txt holds at the end
		said     []string
		left     int // files said to be left as they are
	}{
		{
			name:  "the second editor refuses its take-back",
			patch: []protocol.Change{editA, editB, editD}, refuseTB: true, changed: "d.txt",
			b: "B1\nb2\n", bDisk: files["b.txt"], d: tool,
			said: []string{"a file changed while smith was writing it", "d.txt", "a.txt was put back", "b.txt cannot be taken back: the editor refused the edit (refused by the test); left as it is, holding smith's edit", "Review the files left as they are"},
			left: 1,
		},
		{
			name:  "the second editor refuses the edit",
			patch: []protocol.Change{editA, editB, editD}, refuse: true,
			b: files["b.txt"], bDisk: files["b.txt"], d: files["d.txt"],
			said: []string{"the editor refused the edit of b.txt (refused by the test); the buffer may have changed since smith read it: review the change and apply again", "a.txt was put back"},
		},
		{
			name:  "the second editor's file goes to disk and fails there",
			patch: []protocol.Change{editA, deleteB, editD}, noDelete: true, changed: "b.txt",
			b: files["b.txt"], bDisk: tool, d: files["d.txt"],
			said: []string{"a file changed while smith was writing it", "b.txt", "a.txt was put back"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newClientFixture(t, "")
			for name, text := range files {
				if err := os.WriteFile(filepath.Join(f.ws, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx := testCtx(t)
			first, second := editortest.New(t, f.connect(t)), editortest.New(t, f.connect(t))
			if tt.noDelete {
				second.ResourceOperations()
			}
			a, b, d := filepath.Join(f.ws, "a.txt"), filepath.Join(f.ws, "b.txt"), filepath.Join(f.ws, "d.txt")
			for _, o := range []struct {
				ed   *editortest.Editor
				path string
			}{{first, a}, {second, b}} {
				if _, err := o.ed.Initialize(ctx, f.ws, nil); err != nil {
					t.Fatal(err)
				}
				if err := o.ed.Open(ctx, o.path, files[filepath.Base(o.path)]); err != nil {
					t.Fatal(err)
				}
				// A request after the didOpen: the engine has the buffer
				// before the patch arrives on the other connection.
				var all []daemon.Change
				if err := o.ed.Call(ctx, editor.MethodChanges, map[string]any{}, &all); err != nil {
					t.Fatal(err)
				}
			}
			if f.starts.Load() != 1 {
				t.Fatalf("%d engines started, want one shared by both editors", f.starts.Load())
			}
			var once sync.Once
			first.OnApplyEdit(func(string) {
				once.Do(func() {
					if tt.changed != "" {
						if err := os.WriteFile(filepath.Join(f.ws, tt.changed), []byte(tool), 0o644); err != nil {
							t.Error(err)
						}
					}
				})
			})
			second.RefuseEdits(tt.refuse)
			var secondEdits sync.Once
			second.OnApplyEdit(func(string) {
				secondEdits.Do(func() { second.RefuseEdits(tt.refuseTB) }) // from its take-back
			})
			err := first.Call(ctx, editor.MethodPatchApply, &editor.PatchApplyParams{Changes: tt.patch}, nil)
			if got := rpcCode(t, err); got != editor.CodeConflict {
				t.Fatalf("apply: %v (code %d), want a conflict (%d)", err, got, editor.CodeConflict)
			}
			if n := len(first.Edits()); n != 2 {
				t.Fatalf("the first editor got %d workspace/applyEdit, want its edit and its take-back: the test does not test the take-back (%v)", n, err)
			}
			msg := err.Error()
			for _, want := range tt.said {
				if !strings.Contains(msg, want) {
					t.Errorf("the error does not say %q:\n%s", want, msg)
				}
			}
			if strings.Contains(msg, "nothing was written") {
				t.Errorf("the error says nothing was written, although the first editor wrote a.txt:\n%s", msg)
			}
			// The apply's advice belongs to the apply: a take-back has no
			// plan to list again. Files are named relative to the
			// workspace, in the whole error.
			for _, not := range []string{"list the change again", "the buffer changed since the plan", f.ws} {
				if strings.Contains(msg, not) {
					t.Errorf("the error says %q:\n%s", not, msg)
				}
			}
			if got := strings.Count(msg, "left as it is"); got != tt.left {
				t.Errorf("the error says %d files are left as they are, want %d:\n%s", got, tt.left, msg)
			}
			if buf, ok := first.Buffer(a); !ok || buf.Text != files["a.txt"] {
				t.Errorf("a.txt's buffer holds %q (open %v), want it put back as %q", buf.Text, ok, files["a.txt"])
			}
			if buf, ok := second.Buffer(b); !ok || buf.Text != tt.b {
				t.Errorf("b.txt's buffer holds %q (open %v), want %q", buf.Text, ok, tt.b)
			}
			for path, want := range map[string]string{a: files["a.txt"], b: tt.bDisk, d: tt.d} {
				if got := readFile(t, path); got != want {
					t.Errorf("%s holds %q on disk, want %q", filepath.Base(path), got, want)
				}
			}
		})
	}
}
