package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smith-dev/smith/protocol"
)

// mainGo has two uses of Foo far enough apart to make two hunks.
const mainGo = `package main

func Foo() int {
	return 1
}

// one
// two
// three
// four
// five
// six
// seven
// eight

func main() {
	println(Foo())
}
`

func TestV2TurnRecordsAppliedUpstreamAndRejectsOneHunk(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2", files: map[string]string{"main.go": mainGo}})
	ed := newTestEditor()
	p := f.e.Attach(ed)
	res, evs := f.mustChat(p, "rename Foo to Bar in main.go")

	if res.DialogID == "" {
		t.Fatal("no dialog id on the result")
	}
	for _, ev := range evs {
		if ev.TurnID != res.TurnID || ev.DialogID != res.DialogID {
			t.Fatalf("event %d tagged %s/%s, want %s/%s", ev.Seq, ev.DialogID, ev.TurnID, res.DialogID, res.TurnID)
		}
	}
	if last := evs[len(evs)-1]; last.Type != protocol.KindTurnEnd {
		t.Fatalf("last event is %s, want turnEnd", last.Type)
	}
	c := f.change(res)
	if c.Status != StatusAppliedUpstream || len(c.Hunks) != 2 {
		t.Fatalf("change %+v: want appliedUpstream with 2 hunks", c)
	}
	after := strings.ReplaceAll(mainGo, "Foo", "Bar")
	if got := f.read("main.go"); got != after {
		t.Fatalf("the upstream did not write main.go:\n%s", got)
	}
	// Notifications are delivered asynchronously (Engine's doc).
	waitFor(t, "fileChanged for main.go", func() bool {
		return slices.ContainsFunc(ed.notifications(), func(n Notification) bool {
			return n.Kind == NoteFileChanged && n.Path == f.path("main.go")
		})
	})

	// Reject the second hunk: exactly that hunk is reverse-applied.
	got, err := f.e.Reject(WithPeer(context.Background(), p), c.ID, []string{c.Hunks[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(mainGo, "func Foo", "func Bar", 1)
	if disk := f.read("main.go"); disk != want {
		t.Fatalf("after rejecting hunk 2 main.go is\n%s\nwant\n%s", disk, want)
	}
	if got.Status != StatusAppliedUpstream || got.Hunks[0].Status != StatusAppliedUpstream || got.Hunks[1].Status != StatusRejected {
		t.Fatalf("after reject: %+v", got)
	}
}

func TestV0ProposalAppliedToDisk(t *testing.T) {
	t.Parallel()
	f, p, c := renameProposed(t)
	if c.Status != StatusPending || len(c.Hunks) != 2 {
		t.Fatalf("change %+v: want pending with 2 hunks", c)
	}
	if f.read("main.go") != mainGo {
		t.Fatal("a proposal was written before Apply")
	}
	got, err := f.e.Apply(WithPeer(context.Background(), p), c.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusApplied {
		t.Fatalf("status %s, want applied", got.Status)
	}
	if disk := f.read("main.go"); disk != strings.ReplaceAll(mainGo, "Foo", "Bar") {
		t.Fatalf("main.go after apply:\n%s", disk)
	}
}

func TestV0ProposalAppliedToOpenBufferWithItsVersion(t *testing.T) {
	t.Parallel()
	f, ed, p, c := renameProposedInEditor(t, 7)
	f.mustApply(p, c.ID)
	calls := ed.applyCalls()
	if len(calls) != 1 || len(calls[0].Edits) != 1 {
		t.Fatalf("ApplyEdit calls %+v, want one with one edit", calls)
	}
	fe := calls[0].Edits[0]
	if fe.Path != f.path("main.go") || fe.Version != 7 || string(fe.OldText) != mainGo {
		t.Fatalf("edit for %s version %d; want %s version 7 planned against the buffer", fe.Path, fe.Version, f.path("main.go"))
	}
	if text, v := ed.text(f.path("main.go")); text != strings.ReplaceAll(mainGo, "Foo", "Bar") || v != 8 {
		t.Fatalf("buffer (version %d):\n%s", v, text)
	}
	if f.read("main.go") != mainGo {
		t.Fatal("disk was written although the file is open in the editor")
	}
}

func TestPlanUsesTheOpenBufferNotDisk(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo}})
	ed := newTestEditor()
	// The user has unsaved edits that break the first hunk's context.
	ed.open(f.path("main.go"), strings.Replace(mainGo, "return 1", "return 2", 1), 3)
	p := f.e.Attach(ed)
	res, _ := f.mustChat(p, "rename Foo to Bar in main.go")
	c := f.change(res)
	if c.Status != StatusPending || c.Hunks[0].Status != StatusConflict || c.Hunks[1].Status != StatusPending {
		t.Fatalf("change planned against disk, not the buffer: %+v", c)
	}
}

func TestPerHunkApplyThenTheRest(t *testing.T) {
	t.Parallel()
	f, p, c := renameProposed(t)
	got, err := f.e.Apply(WithPeer(context.Background(), p), c.ID, []string{c.Hunks[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(mainGo, "println(Foo", "println(Bar", 1); f.read("main.go") != want {
		t.Fatalf("after applying hunk 2:\n%s", f.read("main.go"))
	}
	if got.Status != StatusPending || got.Hunks[0].Status != StatusPending || got.Hunks[1].Status != StatusApplied {
		t.Fatalf("after one hunk: %+v", got)
	}
	if _, err := f.e.Apply(WithPeer(context.Background(), p), c.ID, []string{c.Hunks[1].ID}); err == nil {
		t.Fatal("applying an applied hunk again succeeded")
	}
	got, err = f.e.Apply(WithPeer(context.Background(), p), c.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusApplied || f.read("main.go") != strings.ReplaceAll(mainGo, "Foo", "Bar") {
		t.Fatalf("after the rest: %+v\n%s", got, f.read("main.go"))
	}
}

func TestRejectPendingWritesNothing(t *testing.T) {
	t.Parallel()
	f, p, c := renameProposed(t)
	got, err := f.e.Reject(WithPeer(context.Background(), p), c.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusRejected || f.read("main.go") != mainGo {
		t.Fatalf("after reject: %+v\n%s", got, f.read("main.go"))
	}
	if _, err := f.e.Apply(WithPeer(context.Background(), p), c.ID, nil); err == nil {
		t.Fatal("a rejected change was applied")
	}
	if f.read("main.go") != mainGo {
		t.Fatal("main.go was written")
	}
}

func TestUndoAfterRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo, "b.txt": "one\n"}})
	p := f.e.Attach(nil)
	res, _ := f.mustChat(p, "rename Foo to Bar in main.go")
	c := f.change(res)
	f.mustApply(p, c.ID)
	res2, _ := f.mustChat(p, "create b.txt with two")
	c2 := f.change(res2)
	if _, err := f.e.Apply(WithPeer(context.Background(), p), c2.ID, nil); err != nil {
		t.Fatal(err)
	}
	// Someone edits b.txt after smith wrote it.
	f.write("b.txt", "three\n")
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}

	f.e = f.open()
	p = f.e.Attach(nil)
	applied := f.e.list(ChangeFilter{Status: StatusApplied})
	if len(applied) != 1 || applied[0].ID != c.ID {
		t.Fatalf("after restart the applied changes are %+v", applied)
	}
	// b.txt no longer holds c2: it is listed stale, not applied.
	if stale := f.e.list(ChangeFilter{Status: StatusStale}); len(stale) != 1 || stale[0].ID != c2.ID {
		t.Fatalf("after restart the stale changes are %+v", stale)
	}
	got, err := f.e.Undo(WithPeer(context.Background(), p), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f.read("main.go") != mainGo {
		t.Fatalf("undo did not restore the exact bytes:\n%s", f.read("main.go"))
	}
	if got.Status != StatusUndone {
		t.Fatalf("status after undo: %s", got.Status)
	}
	_, err = f.e.Undo(WithPeer(context.Background(), p), c2.ID)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "b.txt") {
		t.Fatalf("undo over a changed file: %v, want ErrConflict naming b.txt", err)
	}
	if f.read("b.txt") != "three\n" {
		t.Fatal("a refused undo wrote b.txt")
	}
}

func TestConflictWhenFileChangedBetweenPlanAndApply(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo},
		mutate: func(c *Config) { c.NoWatch = true }})
	p := f.e.Attach(nil)
	res, _ := f.mustChat(p, "rename Foo to Bar in main.go")
	c := f.change(res)
	edited := strings.Replace(mainGo, "return 1", "return 42", 1)
	f.write("main.go", edited)
	_, err := f.e.Apply(WithPeer(context.Background(), p), c.ID, nil)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "main.go") {
		t.Fatalf("apply over a changed file: %v, want ErrConflict naming main.go", err)
	}
	if f.read("main.go") != edited {
		t.Fatal("main.go was written despite the conflict")
	}
}

func TestStaleBufferVersionIsAConflict(t *testing.T) {
	t.Parallel()
	f, ed, p, c := renameProposedInEditor(t, 1)
	ed.refuse = errRefused // the buffer moved on between our read and the edit
	_, err := f.e.Apply(WithPeer(context.Background(), p), c.ID, nil)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("refused edit: %v, want ErrConflict", err)
	}
	if now, _ := f.e.Change(c.ID); now.Status != StatusPending {
		t.Fatalf("status after a refused edit: %s", now.Status)
	}
}

func TestWatcherRevalidatesPendingChanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo}})
	ed := newTestEditor()
	p := f.e.Attach(ed)
	res, _ := f.mustChat(p, "rename Foo to Bar in main.go")
	c := f.change(res)

	// Lines added above: the hunks still match, further down.
	f.write("main.go", "// header\n// header\n"+mainGo)
	waitFor(t, "re-anchored hunks", func() bool {
		now, _ := f.e.Change(c.ID)
		return now.Status == StatusPending && now.Hunks[0].Offset != c.Hunks[0].Offset
	})
	// The code the hunks change is gone: conflict.
	f.write("main.go", "package main\n")
	waitFor(t, "conflict", func() bool {
		now, _ := f.e.Change(c.ID)
		return now.Status == StatusConflict && now.Reason != ""
	})
	// The notification follows the status change.
	waitFor(t, "changeUpdated announcing the conflict", func() bool {
		return slices.ContainsFunc(ed.notifications(), func(n Notification) bool {
			return n.Kind == NoteChangeUpdated && n.Change != nil && n.Change.ID == c.ID && n.Change.Status == StatusConflict
		})
	})
	if _, err := f.e.Apply(WithPeer(context.Background(), p), c.ID, nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("apply of a conflicting change: %v", err)
	}
}

func TestMessageLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2", mutate: func(c *Config) { c.MaxMessage = 10 }})
	p := f.e.Attach(nil)
	_, evs, err := f.chat(context.Background(), p, ChatRequest{Message: strings.Repeat("é", 11)})
	if !errors.Is(err, ErrMessageTooLong) || len(evs) != 0 {
		t.Fatalf("11 characters: %v (%d events), want ErrMessageTooLong", err, len(evs))
	}
	if _, _, err := f.chat(context.Background(), p, ChatRequest{Message: strings.Repeat("é", 10)}); err != nil {
		t.Fatalf("10 characters: %v", err)
	}
	if n := DefaultMaxMessage; n != 5000 {
		t.Fatalf("default message limit %d", n)
	}
}

func TestOutsideWorkspaceFileEditIsRefused(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	replay := []byte(`data: {"dialog_id": "d1", "type": "user", "content": "x"}` + "\r\n\r\n" +
		`data: {"dialog_id": "d1", "type": "tool_call", "name": "write_to_file", "args": {"path": "` + secret + `", "content": "pwned\n"}}` + "\r\n\r\n" +
		`data: {"dialog_id": "d1", "type": "file_edit", "file": "` + secret + `"}` + "\r\n\r\n" +
		`data: {"dialog_id": "d1", "type": "file_edit", "file": "link/secret.txt", "diff": "--- a/link/secret.txt\n+++ b/link/secret.txt\n@@ -1 +1 @@\n-keep\n+pwned\n"}` + "\r\n\r\n" +
		`data: {"dialog_id": "d1", "type": "done", "done": true}` + "\r\n\r\n")
	f := newFixture(t, fixtureOpts{protocol: "v2", replay: replay})
	if err := os.Symlink(outside, f.path("link")); err != nil {
		t.Fatal(err)
	}
	p := f.e.Attach(nil)
	res, evs := f.mustChat(p, "anything")
	if len(res.Changes) != 2 {
		t.Fatalf("changes %v, want 2", res.Changes)
	}
	violations := 0
	for _, ev := range evs {
		if ev.Type == protocol.KindViolation && ev.Violation.Kind == "outsideWorkspace" {
			violations++
		}
	}
	if violations != 2 {
		t.Fatalf("%d outsideWorkspace violations, want 2: %+v", violations, evs)
	}
	for _, id := range res.Changes {
		c, _ := f.e.Change(id)
		if c.Status != StatusRejected || !strings.Contains(c.Reason, "outside") {
			t.Fatalf("change %+v: want rejected as outside the workspace", c)
		}
		if _, err := f.e.Apply(WithPeer(context.Background(), p), id, nil); err == nil {
			t.Fatal("an outside change was applied")
		}
		if _, err := f.e.Reject(WithPeer(context.Background(), p), id, nil); err == nil {
			t.Fatal("an outside change was reverse-applied")
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "keep\n" {
		t.Fatalf("the file outside the workspace was touched: %q", b)
	}
}

// TestWatcherRescansAfterAnOverflow: when the kernel queue overflows,
// events are lost; the watcher must then re-validate every open change.
func TestWatcherRescansAfterAnOverflow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo},
		mutate: func(c *Config) { c.NoWatch = true }})
	res, _ := f.mustChat(f.e.Attach(nil), "rename Foo to Bar in main.go")
	c := f.change(res)
	// The edit happens while nothing watches: its events are "lost".
	f.write("main.go", "package main\n")
	w, err := newWatcher(f.e)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if now, _ := f.e.Change(c.ID); now.Status != StatusPending {
		t.Fatalf("status %s before the overflow", now.Status)
	}
	// What the reader does on fsnotify.ErrEventOverflow.
	w.mu.Lock()
	w.rescan = true
	w.mu.Unlock()
	w.wake()
	waitFor(t, "conflict after the rescan", func() bool {
		now, _ := f.e.Change(c.ID)
		return now.Status == StatusConflict
	})
}
