package editor_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
)

// An editor that reports its edits late (eglot: didChange from an idle
// timer) accepts two hunks in a row: the second apply is planned against
// the text the first one left, not refused for the old version.
func TestApplyBeforeTheEditorReportsThePreviousEdit(t *testing.T) {
	ws, s := serveCalc(t)
	ctx := testCtx(t)
	path := filepath.Join(ws, "calc.go")
	if err := s.Open(ctx, path, calcGo); err != nil {
		t.Fatal(err)
	}
	s.DeferChanges(true)
	res := s.mustChat("rename total to sum in calc.go")
	c := s.change(res.Changes[0])
	if len(c.Hunks) != 2 {
		t.Fatalf("want 2 hunks, got %+v", c.Hunks)
	}
	for _, h := range c.Hunks {
		var after daemon.Change
		if err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": c.ID, "hunks": []string{h.ID}}, &after); err != nil {
			t.Fatalf("apply %s before the editor reported the previous edit: %v", h.ID, err)
		}
	}
	want := strings.ReplaceAll(calcGo, "total", "sum")
	if b, _ := s.Buffer(path); b.Text != want {
		t.Fatalf("buffer after both applies:\n%s\nwant:\n%s", b.Text, want)
	}
	// The late reports then bring the mirror to the same text: undo works on it.
	if err := s.FlushChanges(ctx); err != nil {
		t.Fatal(err)
	}
	var undone daemon.Change
	if err := s.Call(ctx, editor.MethodUndo, map[string]any{"changeId": c.ID}, &undone); err != nil {
		t.Fatalf("undo after the late didChange: %v", err)
	}
	if b, _ := s.Buffer(path); strings.Count(b.Text, "sum") != 1 {
		t.Fatalf("buffer after undoing the last apply:\n%s", b.Text)
	}
}
