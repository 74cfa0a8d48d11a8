package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/smith-dev/smith/protocol"
)

// newTestStores opens the two parts on a fresh state folder, as New does.
func newTestStores(t *testing.T) (store, *changeStore, *dialogRegistry) {
	t.Helper()
	s := store{dir: t.TempDir()}
	ws := workspace{root: "/ws"}
	p, err := s.load(ws)
	if err != nil {
		t.Fatal(err)
	}
	file, err := newStateFile(s, p)
	if err != nil {
		t.Fatal(err)
	}
	return s, newChangeStore(p.changesState, file), newDialogRegistry(p.dialogsState, file)
}

// TestStateFileKeepsBothParts: each part saves only its own half, and the
// file read back holds the latest of both, in the layout New loads.
func TestStateFileKeepsBothParts(t *testing.T) {
	t.Parallel()
	s, cs, dr := newTestStores(t)
	if err := cs.add(&changeRecord{Change: Change{ID: cs.nextID(), DialogID: "d1", Path: "a.go", Status: StatusPending}}, true); err != nil {
		t.Fatal(err)
	}
	if err := dr.setCurrent("d1"); err != nil {
		t.Fatal(err)
	}
	if err := cs.add(&changeRecord{Change: Change{ID: cs.nextID(), DialogID: "d1", Path: "b.go", Status: StatusApplied}}, true); err != nil {
		t.Fatal(err)
	}
	tid := dr.nextTurnID()
	if err := dr.unlockTurn(&turn{id: tid}); err != nil {
		t.Fatal(err)
	}
	p, err := s.load(workspace{root: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != stateVersion || p.Workspace != "/ws" {
		t.Errorf("header: version %d workspace %q", p.Version, p.Workspace)
	}
	var ids []string
	for _, c := range p.Changes {
		ids = append(ids, c.ID+":"+c.Path)
	}
	if diff := cmp.Diff([]string{"c1:a.go", "c2:b.go"}, ids); diff != "" {
		t.Errorf("changes read back (-want +got):\n%s", diff)
	}
	if p.NextChange != 3 || p.NextTurn != 2 || p.CurrentDialog != "d1" {
		t.Errorf("read back nextChange %d nextTurn %d current %q; want 3, 2, d1", p.NextChange, p.NextTurn, p.CurrentDialog)
	}
}

// TestChangeStoreRecords: ids are handed out in order, an unknown id is
// ErrUnknownChange, and a snapshot is a copy the record does not share.
func TestChangeStoreRecords(t *testing.T) {
	t.Parallel()
	_, cs, _ := newTestStores(t)
	for i := 1; i <= 3; i++ {
		id := cs.nextID()
		if want := fmt.Sprintf("c%d", i); id != want {
			t.Fatalf("id %s, want %s", id, want)
		}
		if err := cs.add(&changeRecord{Change: Change{ID: id, DialogID: "old", Status: StatusPending, Hunks: []Hunk{{ID: "h1", Status: StatusPending}}}}, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.record("c9"); !errors.Is(err, ErrUnknownChange) {
		t.Fatalf("record c9: %v, want ErrUnknownChange", err)
	}
	c, snap, err := cs.recordSnapshot("c2")
	if err != nil {
		t.Fatal(err)
	}
	snap.Hunks[0].Status = StatusApplied
	if c.Hunks[0].Status != StatusPending {
		t.Fatal("changing a snapshot's hunk changed the record")
	}
	if n := cs.count(StatusPending); n != 3 {
		t.Fatalf("%d pending, want 3", n)
	}
	if err := cs.renameDialog("old", "new"); err != nil {
		t.Fatal(err)
	}
	got := cs.snapshots(func(c *changeRecord) bool { return c.DialogID == "new" })
	if len(got) != 3 {
		t.Fatalf("%d changes filed under the new dialog id, want 3", len(got))
	}
	if g1, g2 := cs.newUndoGroup(), cs.newUndoGroup(); g1 == g2 {
		t.Fatalf("two undo groups numbered %d", g1)
	}
}

// TestChangeStoreConcurrentAdds: changes recorded from many goroutines
// (turns of several fronts) all get distinct ids and all reach the file.
func TestChangeStoreConcurrentAdds(t *testing.T) {
	t.Parallel()
	s, cs, dr := newTestStores(t)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := cs.add(&changeRecord{Change: Change{ID: cs.nextID(), Status: StatusPending}}, true); err != nil {
				t.Error(err)
			}
		}()
		go func() { // the other part saving at the same time
			defer wg.Done()
			if err := dr.setCurrent(fmt.Sprintf("d%d", i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	p, err := s.load(workspace{root: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range p.Changes {
		seen[c.ID] = true
	}
	if len(seen) != 16 || p.NextChange != 17 {
		t.Fatalf("file holds %d distinct changes, nextChange %d; want 16, 17", len(seen), p.NextChange)
	}
	if p.CurrentDialog == "" {
		t.Fatal("the dialog registry's part was lost from the file")
	}
}

// TestPartsHaveTheirOwnLocks: while the change store's lock is held (a
// long save, a re-plan), the dialog registry and the engine's dialog calls
// go on. With one lock for both, this test would never finish.
func TestPartsHaveTheirOwnLocks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", mutate: func(c *Config) { c.NoWatch = true }})
	ctx := context.Background()
	f.e.cs.mu.Lock()
	d, err := f.e.NewDialog(ctx, "while the changes are locked")
	if err == nil {
		var ds []Dialog
		ds, err = f.e.Dialogs(ctx)
		if err == nil && (len(ds) != 1 || ds[0].ID != d.ID || !ds[0].Current) {
			err = fmt.Errorf("dialogs %+v, want the new one, current", ds)
		}
	}
	f.e.cs.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	// And the other way round: changes are recorded while the registry is locked.
	f.e.dr.mu.Lock()
	c, err := f.e.Propose(ctx, "", protocol.Change{Path: "new.txt", Kind: protocol.ChangeCreate, Content: "x\n", HasContent: true})
	f.e.dr.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != StatusPending {
		t.Fatalf("proposed while the registry was locked: %s, want pending", c.Status)
	}
}

// TestChangeStoreUndoneKeepsLaterDecisions: undoing an apply of h1 puts
// h1 back as undone (not pending) and leaves h2, rejected after the apply,
// rejected; the change is undone. The journal's record is undone and is
// not offered to the next undo.
func TestChangeStoreUndoneKeepsLaterDecisions(t *testing.T) {
	t.Parallel()
	_, cs, _ := newTestStores(t)
	c := &changeRecord{Change: Change{ID: cs.nextID(), Status: StatusApplied, Hunks: []Hunk{
		{ID: "h1", Status: StatusApplied}, {ID: "h2", Status: StatusRejected},
	}}, Abs: "/ws/f.txt"}
	if err := cs.add(c, true); err != nil {
		t.Fatal(err)
	}
	cs.mu.Lock()
	r := &undoRecord{Seq: 1, ChangeID: c.ID, Action: "apply", Path: "/ws/f.txt", State: undoDone,
		Prev: map[string]string{"h1": StatusPending, "h2": StatusPending}, PrevStat: StatusPending, Hunks: []string{"h1"}}
	cs.st.Undo = append(cs.st.Undo, r)
	cs.mu.Unlock()
	recs, err := cs.undoTargets("")
	if err != nil || len(recs) != 1 || recs[0] != r {
		t.Fatalf("undo targets %v, %v; want the one record", recs, err)
	}
	if err := cs.undone(recs, []string{"hash-before"}); err != nil {
		t.Fatal(err)
	}
	_, got, err := cs.recordSnapshot(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusUndone || got.Hunks[0].Status != StatusUndone || got.Hunks[1].Status != StatusRejected || got.BaseHash != "hash-before" {
		t.Fatalf("after undo: %s, h1 %s, h2 %s, base %q; want undone, undone, rejected, hash-before", got.Status, got.Hunks[0].Status, got.Hunks[1].Status, got.BaseHash)
	}
	if _, err := cs.undoTargets(""); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("a second undo: %v, want ErrInvalidState (everything undone)", err)
	}
}

// TestChangeStoreAppliedAndRejected: an apply of h1 marks h1 applied and
// its journal record done (undo then offers it); rejecting h2 after it
// leaves the change applied, h2 rejected; a failed write's record is never
// offered to undo.
func TestChangeStoreAppliedAndRejected(t *testing.T) {
	t.Parallel()
	_, cs, _ := newTestStores(t)
	c := &changeRecord{Change: Change{ID: cs.nextID(), Status: StatusPending, Hunks: []Hunk{
		{ID: "h1", Status: StatusPending}, {ID: "h2", Status: StatusPending},
	}}, Abs: "/ws/f.txt"}
	if err := cs.add(c, true); err != nil {
		t.Fatal(err)
	}
	failed := &undoRecord{Seq: 1, ChangeID: c.ID, Action: "apply", State: undoPending}
	done := &undoRecord{Seq: 2, ChangeID: c.ID, Action: "apply", State: undoPending}
	cs.mu.Lock()
	cs.st.Undo = append(cs.st.Undo, failed, done)
	cs.mu.Unlock()
	if err := cs.failed([]*undoRecord{failed}); err != nil {
		t.Fatal(err)
	}
	w := &fileWrite{abs: "/ws/f.txt", next: []byte("new\n"), nextExists: true, via: "disk"}
	if err := cs.applied([]*applyStep{{c: c, ids: []string{"h1"}, ws: []*fileWrite{w}, recs: []*undoRecord{done}}}); err != nil {
		t.Fatal(err)
	}
	cs.rejected(c, []string{"h2"})
	_, got, _ := cs.recordSnapshot(c.ID)
	if got.Status != StatusApplied || got.Hunks[0].Status != StatusApplied || got.Hunks[1].Status != StatusRejected {
		t.Fatalf("after apply h1, reject h2: %s, h1 %s, h2 %s; want applied, applied, rejected", got.Status, got.Hunks[0].Status, got.Hunks[1].Status)
	}
	if got.BaseHash != contentHash([]byte("new\n"), true) {
		t.Fatal("the change is not planned against what the apply wrote")
	}
	recs, err := cs.undoTargets(c.ID)
	if err != nil || len(recs) != 1 || recs[0] != done {
		t.Fatalf("undo targets %v, %v; want only the done record", recs, err)
	}
}

// TestAppliedMarksTheHunksApplied: the hunks an apply wrote are marked
// applied, and only those, whatever the order the ids come in (selectHunks
// gives them in the change's order; a caller may not).
func TestAppliedMarksTheHunksApplied(t *testing.T) {
	t.Parallel()
	for _, ids := range [][]string{nil, {"h1", "h3", "h5"}, {"h4", "h2"}, {"h5", "h1", "h3"}, {"h2"}} {
		_, cs, _ := newTestStores(t)
		c := &changeRecord{Change: Change{ID: cs.nextID(), Status: StatusPending}, Abs: "/ws/f.txt"}
		for i := 1; i <= 5; i++ {
			c.Hunks = append(c.Hunks, Hunk{ID: hunkID(i), Status: StatusPending})
		}
		if err := cs.add(c, true); err != nil {
			t.Fatal(err)
		}
		w := &fileWrite{abs: "/ws/f.txt", next: []byte("new\n"), nextExists: true, via: "disk"}
		if err := cs.applied([]*applyStep{{c: c, ids: ids, ws: []*fileWrite{w}, recs: []*undoRecord{{}}}}); err != nil {
			t.Fatal(err)
		}
		_, got, _ := cs.recordSnapshot(c.ID)
		for _, h := range got.Hunks {
			want := StatusPending
			if ids == nil || slices.Contains(ids, h.ID) {
				want = StatusApplied
			}
			if h.Status != want {
				t.Errorf("ids %v: %s is %s, want %s", ids, h.ID, h.Status, want)
			}
		}
	}
}
