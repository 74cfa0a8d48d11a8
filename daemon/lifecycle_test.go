package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smith-dev/smith/protocol"
)

// TestUndoneStaysUndone: apply c1, undo it, apply c2 to the same file; c1
// is re-validated against the new text (as the watcher or an editor's
// didChange does) and stays undone, hunks included: it is not offered again
// as pending.
func TestUndoneStaysUndone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"f.txt": twentyLines()}, mutate: func(c *Config) { c.NoWatch = true }})
	p := f.e.Attach(nil)
	ctx := context.Background()
	c1, err := f.e.Propose(WithPeer(context.Background(), p), "", protocol.Change{Path: "f.txt", Diff: "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n l2\n-l3\n+L3\n l4\n"})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := f.e.Propose(WithPeer(context.Background(), p), "", protocol.Change{Path: "f.txt", Diff: "--- a/f.txt\n+++ b/f.txt\n@@ -14,3 +14,3 @@\n l14\n-l15\n+L15\n l16\n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Apply(WithPeer(ctx, p), c1.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Undo(WithPeer(ctx, p), c1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Apply(WithPeer(ctx, p), c2.ID, nil); err != nil {
		t.Fatal(err)
	}
	f.e.Revalidate(f.path("f.txt"))
	got, err := f.e.Change(c1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusUndone || got.Hunks[0].Status != StatusUndone {
		t.Fatalf("c1 after undo and another apply: status %s, hunk %s; want undone, undone", got.Status, got.Hunks[0].Status)
	}
	if pend := f.e.list(ChangeFilter{Status: StatusPending}); len(pend) != 0 {
		t.Fatalf("pending changes %v, want none", pend)
	}
	if strings.Contains(f.read("f.txt"), "L3") {
		t.Fatalf("c1 was written again:\n%s", f.read("f.txt"))
	}
	// Applying it on purpose still works.
	if _, err := f.e.Apply(WithPeer(ctx, p), c1.ID, nil); err != nil {
		t.Fatalf("apply the undone change again: %v", err)
	}
	if !strings.Contains(f.read("f.txt"), "L3\n") {
		t.Fatalf("c1 not applied:\n%s", f.read("f.txt"))
	}
}

// TestResetFileIsNotListedApplied: after the file of an applied change is
// put back (git checkout, a session reset), listing the change says it is
// no longer there; once the file holds it again, it is applied again.
func TestResetFileIsNotListedApplied(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"f.txt": twentyLines()}, mutate: func(c *Config) { c.NoWatch = true }})
	p := f.e.Attach(nil)
	c, err := f.e.Propose(WithPeer(context.Background(), p), "", protocol.Change{Path: "f.txt", Diff: "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n l2\n-l3\n+L3\n l4\n"})
	if err != nil {
		t.Fatal(err)
	}
	f.mustApply(p, c.ID)
	applied := f.read("f.txt")
	f.write("f.txt", twentyLines()) // git checkout .
	list := f.e.list(ChangeFilter{})
	if len(list) != 1 || list[0].Status != StatusStale || !strings.Contains(list[0].Reason, "no longer holds") {
		t.Fatalf("after the reset: %+v; want stale, saying the file no longer holds it", list)
	}
	if h := list[0].Hunks[0]; h.Status == StatusApplied || h.OldStart != 2 {
		t.Fatalf("hunk after the reset: %+v; want not applied, placed at line 2 again", h)
	}
	if n := len(f.e.list(ChangeFilter{Status: StatusApplied})); n != 0 {
		t.Fatalf("%d changes listed as applied after the reset", n)
	}
	if n := len(f.e.list(ChangeFilter{Status: StatusStale})); n != 1 {
		t.Fatalf("%d changes listed as stale after the reset, want 1", n)
	}
	f.write("f.txt", applied)
	if got, _ := f.e.Change(c.ID); got.Status != StatusApplied {
		t.Fatalf("file holding the change again: %s, want applied", got.Status)
	}
}

// TestNullStateFileWarns: a state.json holding null starts an empty state
// with a warning, never silently (and never with change ids from c0).
func TestNullStateFileWarns(t *testing.T) {
	t.Parallel()
	ws, stateRoot := t.TempDir(), t.TempDir()
	cfg := Config{Workspace: ws, StateDir: stateRoot, NoWatch: true}
	dir, err := StateDirOf(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte("null\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "null") {
		t.Errorf("no warning about the null state file; log:\n%s", logs.String())
	}
	c, err := e.Propose(context.Background(), "", protocol.Change{Path: "new.txt", Kind: protocol.ChangeCreate, Content: "x\n", HasContent: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != "c1" {
		t.Errorf("first change after a null state is %s, want c1", c.ID)
	}
}

// TestUpstreamErrorsAreTheEngines: an unreachable upstream comes back as
// the engine's ErrUpstreamUnreachable (the fronts map the engine's errors
// only), still carrying the client's error and text.
func TestUpstreamErrorsAreTheEngines(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2", mutate: func(c *Config) { c.NoWatch = true; c.Upstream = "http://" + closedAddr(t) }})
	_, err := f.e.Dialogs(context.Background())
	if !errors.Is(err, ErrUpstreamUnreachable) || !errors.Is(err, protocol.ErrUnreachable) {
		t.Fatalf("dialogs of an unreachable upstream: %v, want ErrUpstreamUnreachable wrapping the client's", err)
	}
}

// TestUndoKeepsALaterReject: h1 of a change is applied, then h2 (still
// pending) is rejected; undoing the apply takes back h1 only. h2 stays
// rejected: undo restores what the apply did, not the user's later
// decision on a hunk it did not write.
func TestUndoKeepsALaterReject(t *testing.T) {
	t.Parallel()
	f, c := twoHunkChange(t)
	ctx := context.Background()
	if len(c.Hunks) != 2 {
		t.Fatalf("proposed change has %d hunks, want 2", len(c.Hunks))
	}
	if _, err := f.e.Apply(ctx, c.ID, []string{"h1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Reject(ctx, c.ID, []string{"h2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got := f.read("f.txt"); got != twentyLines() {
		t.Fatalf("f.txt after the undo:\n%s\nwant the original", got)
	}
	got, err := f.e.Change(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if h1, h2 := got.Hunks[0].Status, got.Hunks[1].Status; h1 != StatusUndone || h2 != StatusRejected {
		t.Fatalf("hunks after the undo: h1 %s, h2 %s; want undone, rejected", h1, h2)
	}
	if pend := f.e.list(ChangeFilter{Status: StatusPending}); len(pend) != 0 {
		t.Fatalf("pending changes after the undo: %+v, want none", pend)
	}
}

// TestUndoOfAPartialApplyReopensTheChange: undoing an apply that left the
// change in review puts the hunks it wrote back in review: the change is
// pending, every hunk pending, and each can be decided again. Applying the
// rest later and undoing that step goes back to the step before (h2 still
// applied, h1 pending), not to an "undone" change whose file holds h2.
func TestUndoOfAPartialApplyReopensTheChange(t *testing.T) {
	t.Parallel()
	f, c := twoHunkChange(t)
	ctx := context.Background()
	statuses := func() string {
		t.Helper()
		got, err := f.e.Change(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		s := got.Status
		for _, h := range got.Hunks {
			s += " " + h.ID + ":" + h.Status
		}
		return s
	}
	if _, err := f.e.Apply(ctx, c.ID, []string{"h2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(), "pending h1:pending h2:pending"; got != want {
		t.Fatalf("after apply h2, undo: %s; want %s", got, want)
	}
	if got := f.read("f.txt"); got != twentyLines() {
		t.Fatalf("f.txt after the undo:\n%s\nwant the original", got)
	}
	if _, err := f.e.Apply(ctx, c.ID, []string{"h2"}); err != nil {
		t.Fatalf("apply h2 again after the undo: %v", err)
	}
	if _, err := f.e.Apply(ctx, c.ID, []string{"h1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Undo(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(), "pending h1:pending h2:applied"; got != want {
		t.Fatalf("after apply h2, apply h1, undo: %s; want %s", got, want)
	}
	if got := f.read("f.txt"); strings.Contains(got, "L3\n") || !strings.Contains(got, "L15\n") {
		t.Fatalf("f.txt after undoing h1 should hold h2 only:\n%s", got)
	}
	if _, err := f.e.Undo(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(), "pending h1:pending h2:pending"; got != want {
		t.Fatalf("after the second undo: %s; want %s", got, want)
	}
}

// TestUnusableStateDirSaysWhatToDo: a state folder that cannot be made (its
// root is a file) is refused by New with a message that names the path and
// the setting to change: an editor shows it as it is.
func TestUnusableStateDirSaysWhatToDo(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Config{Workspace: t.TempDir(), StateDir: file, NoWatch: true})
	if err == nil {
		t.Fatal("New with a file as its state folder: no error")
	}
	for _, want := range []string{file, "not a directory", "--state-dir", "a directory smith can create and write"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// twoHunkChange is a fixture (v0, no watcher) whose f.txt (twentyLines)
// has a change proposed with two hunks: l3 and l15 capitalised.
func twoHunkChange(t *testing.T) (*fixture, *Change) {
	t.Helper()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"f.txt": twentyLines()}, mutate: func(c *Config) { c.NoWatch = true }})
	c, err := f.e.Propose(context.Background(), "", protocol.Change{Path: "f.txt", Diff: "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n l2\n-l3\n+L3\n l4\n@@ -14,3 +14,3 @@\n l14\n-l15\n+L15\n l16\n"})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}
