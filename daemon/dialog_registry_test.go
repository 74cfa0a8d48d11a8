package daemon

import (
	"testing"
)

// TestDialogRegistryTurnsAndLocks: turn ids count up, a dialog's
// single-flight lock is held until the turn that took it ends, and only
// that turn releases it.
func TestDialogRegistryTurnsAndLocks(t *testing.T) {
	t.Parallel()
	s, _, dr := newTestStores(t)
	t1 := &turn{id: dr.nextTurnID()}
	t2 := &turn{id: dr.nextTurnID()}
	if t1.id != "t1" || t2.id != "t2" {
		t.Fatalf("turn ids %s, %s; want t1, t2", t1.id, t2.id)
	}
	e := &Engine{dr: dr}
	if err := e.lockDialog(t1, "d1"); err != nil {
		t.Fatal(err)
	}
	if err := e.lockDialog(t2, "d1"); err == nil {
		t.Fatal("a second turn took a busy dialog's lock")
	}
	if !dr.isBusy("d1") {
		t.Fatal("d1 not busy while t1 holds it")
	}
	if err := dr.unlockTurn(t2); err != nil {
		t.Fatal(err)
	}
	if !dr.isBusy("d1") {
		t.Fatal("t2, which never held d1, released its lock")
	}
	if err := dr.unlockTurn(t1); err != nil {
		t.Fatal(err)
	}
	if dr.isBusy("d1") {
		t.Fatal("d1 still busy after t1 ended")
	}
	p, err := s.load(workspace{root: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	if p.NextTurn != 3 {
		t.Fatalf("nextTurn saved as %d, want 3 (ids are never reused after a restart)", p.NextTurn)
	}
}

// TestDialogRegistryLocalDialogs: a new local dialog becomes current, is
// found by id, and the current dialog survives in the file.
func TestDialogRegistryLocalDialogs(t *testing.T) {
	t.Parallel()
	s, _, dr := newTestStores(t)
	dr.mu.Lock()
	d := dr.newLocalDialog("first")
	found := dr.localDialog(d.ID)
	err := dr.saveLocked()
	dr.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if found != d || dr.current() != d.ID {
		t.Fatalf("new dialog %s: found %v, current %q", d.ID, found, dr.current())
	}
	p, err := s.load(workspace{root: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	if p.CurrentDialog != d.ID || len(p.Dialogs) != 1 || p.Dialogs[0].Title != "first" {
		t.Fatalf("read back current %q, dialogs %+v", p.CurrentDialog, p.Dialogs)
	}
}
