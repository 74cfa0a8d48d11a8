package daemon

import (
	"context"
	"errors"
	"testing"

	"github.com/smith-dev/smith/protocol"
)

// TestLocalDialogPrefixes: local dialogs (a dialect without a dialog API)
// take a unique prefix of their id everywhere an id is taken; an unknown
// id and an ambiguous prefix are refused, and no dialog is created.
func TestLocalDialogPrefixes(t *testing.T) {
	e, err := New(context.Background(), Config{Workspace: t.TempDir(), Upstream: "http://127.0.0.1:9", Dialect: protocol.DialectRAG, StateDir: t.TempDir(), NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	var ds []Dialog
	for len(ds) < 2 || ds[0].ID[0] == ds[1].ID[0] { // two ids that differ in their first character
		ds = nil
		for _, title := range []string{"one", "two"} {
			d, err := e.NewDialog(ctx, title)
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		}
		if ds[0].ID[0] == ds[1].ID[0] {
			for _, d := range ds {
				e.DeleteDialog(ctx, d.ID)
			}
		}
	}
	if err := e.RenameDialog(ctx, ds[0].ID[:6], "renamed"); err != nil {
		t.Fatalf("rename by a prefix: %v", err)
	}
	if err := e.SelectDialog(ctx, ds[0].ID[:6]); err != nil {
		t.Fatalf("select by a prefix: %v", err)
	}
	if _, err := e.History(ctx, ds[0].ID[:6], 10, -1); err != nil {
		t.Fatalf("history by a prefix: %v", err)
	}
	if err := e.RenameDialog(ctx, "zzzz", "ghost"); !errors.Is(err, ErrUnknownDialog) {
		t.Fatalf("rename of an unknown id: %v, want ErrUnknownDialog", err)
	}
	if err := e.RenameDialog(ctx, "", "ghost"); !errors.Is(err, ErrUnknownDialog) {
		t.Fatalf("rename of an empty id: %v, want ErrUnknownDialog", err)
	}
	got, err := e.Dialogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("dialogs %+v; want the two, no ghost", got)
	}
	for _, d := range got {
		if d.ID == ds[0].ID && (d.Title != "renamed" || !d.Current) {
			t.Errorf("dialog %+v: want renamed and current", d)
		}
	}
	// Both kinds match; the text is what happened and what to do, without
	// "unknown dialog: ambiguous dialog id: " in front.
	_, err = matchDialogID("a", []string{"ab1", "ab2"})
	if !errors.Is(err, ErrAmbiguousDialog) || !errors.Is(err, ErrUnknownDialog) || err.Error() != "a starts 2 dialog ids (ab1, ab2); type more of it" {
		t.Errorf("ambiguous prefix: %v", err)
	}
}
