package daemon

import (
	"context"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/smith-dev/smith/protocol"
)

// modeOf is the permission bits of the workspace's file rel.
func (f *fixture) modeOf(rel string) fs.FileMode {
	f.t.Helper()
	fi, err := os.Lstat(f.path(rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func (f *fixture) chmod(rel string, mode fs.FileMode) {
	f.t.Helper()
	if err := os.Chmod(f.path(rel), mode); err != nil {
		f.t.Fatal(err)
	}
}

// modes is the permission bits of the files that exist among names.
func (f *fixture) modes(names ...string) map[string]fs.FileMode {
	f.t.Helper()
	out := map[string]fs.FileMode{}
	for _, n := range names {
		if fi, err := os.Lstat(f.path(n)); err == nil {
			out[n] = fi.Mode().Perm()
		}
	}
	return out
}

// modePatch is a patch whose every file sets a mode (protocol.Change.Mode):
// a.txt made executable with an edit, b.txt made executable alone,
// tool.sh made a plain file (from 0755), run.sh created executable, c.txt
// renamed to d.txt and made executable.
func modePatch(t *testing.T) (*fixture, []protocol.Change) {
	t.Helper()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{
		"a.txt": "a\n", "b.txt": "b\n", "tool.sh": "echo\n", "c.txt": "c\n",
	}, mutate: func(c *Config) { c.NoWatch = true }})
	f.chmod("tool.sh", 0o755)
	return f, []protocol.Change{
		{Path: "a.txt", Kind: protocol.ChangeModify, Diff: unifiedDiff("a.txt", []byte("a\n"), []byte("a\nb\n")), Mode: 0o755},
		{Path: "b.txt", Kind: protocol.ChangeModify, Mode: 0o755},
		{Path: "tool.sh", Kind: protocol.ChangeModify, Mode: 0o644},
		{Path: "run.sh", Kind: protocol.ChangeCreate, Content: "#!/bin/sh\n", HasContent: true, Mode: 0o755},
		{Path: "d.txt", OldPath: "c.txt", Kind: protocol.ChangeRename, Mode: 0o755},
	}
}

var modeFiles = []string{"a.txt", "b.txt", "tool.sh", "run.sh", "c.txt", "d.txt"}

// TestPatchThatSetsModesIsUndone: a patch whose files set modes (a mode
// change with an edit, one alone, one that takes the executable bit away,
// a file created executable, a rename that changes the mode) is written
// with those modes; its undo records keep each file's bits before (0644
// too, which a deletion's record leaves out), and smith's undo after a
// restart gives every file its text and its mode before. Applied again,
// the undone changes set the modes again: the mode travels with the
// change through the state file.
func TestPatchThatSetsModesIsUndone(t *testing.T) {
	t.Parallel()
	f, chs := modePatch(t)
	before := f.modes(modeFiles...)
	if _, err := f.e.ApplyPatch(context.Background(), "", chs); err != nil {
		t.Fatal(err)
	}
	applied := map[string]fs.FileMode{"a.txt": 0o755, "b.txt": 0o755, "tool.sh": 0o644, "run.sh": 0o755, "d.txt": 0o755}
	if diff := cmp.Diff(applied, f.modes(modeFiles...)); diff != "" {
		t.Errorf("modes after the apply (-want +got):\n%s", diff)
	}
	assertTexts(t, f, "after the apply", map[string]string{"a.txt": "a\nb\n", "b.txt": "b\n", "tool.sh": "echo\n", "run.sh": "#!/bin/sh\n", "c.txt": "", "d.txt": "c\n"})

	f.e.cs.mu.Lock()
	recorded := map[string]fs.FileMode{}
	for _, r := range f.e.cs.st.Undo {
		recorded[r.Rel] = r.Mode
	}
	f.e.cs.mu.Unlock()
	// The created file and the rename's target are removed by the undo,
	// the source (0644) is created with smith's bits: none of them needs one.
	want := map[string]fs.FileMode{"a.txt": 0o644, "b.txt": 0o644, "tool.sh": 0o755, "run.sh": 0, "c.txt": 0, "d.txt": 0}
	if diff := cmp.Diff(want, recorded); diff != "" {
		t.Errorf("modes in the undo records (-want +got):\n%s", diff)
	}

	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	if _, err := f.e.Undo(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, f.modes(modeFiles...)); diff != "" {
		t.Errorf("modes after the undo (-want +got):\n%s", diff)
	}
	assertTexts(t, f, "after the undo", map[string]string{"a.txt": "a\n", "b.txt": "b\n", "tool.sh": "echo\n", "run.sh": "", "c.txt": "c\n", "d.txt": ""})

	var ids []string
	for _, c := range f.e.list(ChangeFilter{}) {
		if c.Status != StatusUndone {
			t.Errorf("change %s of %s is %s after the undo, want undone", c.ID, c.Path, c.Status)
		}
		ids = append(ids, c.ID)
	}
	if _, err := f.e.ApplyChanges(context.Background(), ids); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(applied, f.modes(modeFiles...)); diff != "" {
		t.Errorf("modes after the undone changes were applied again (-want +got):\n%s", diff)
	}
}

// TestStateWithoutModesLoads: a state file written before changes and
// undo records carried modes (no "mode" member where they are 0644 or
// unchanged) loads; its undo restores the texts and, having no mode to
// give, leaves the files' bits as they are.
func TestStateWithoutModesLoads(t *testing.T) {
	t.Parallel()
	f, chs := modePatch(t)
	if _, err := f.e.ApplyPatch(context.Background(), "", chs[:1]); err != nil {
		t.Fatal(err)
	}
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	path := f.e.StateDir() + "/state.json"
	st, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mode := regexp.MustCompile(`,"mode":[0-9]+`)
	if n := len(mode.FindAll(st, -1)); n != 2 {
		t.Fatalf("state.json has %d modes, want 2 (the change's, its undo record's):\n%s", n, st)
	}
	if err := os.WriteFile(path, mode.ReplaceAll(st, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	cs := f.e.list(ChangeFilter{})
	if len(cs) != 1 || cs[0].Status != StatusApplied {
		t.Fatalf("changes after loading a state without modes: %+v, want one applied", cs)
	}
	if _, err := f.e.Undo(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	assertTexts(t, f, "after the undo", map[string]string{"a.txt": "a\n"})
	if m := f.modeOf("a.txt"); m != 0o755 {
		t.Errorf("a.txt's mode after an undo without a recorded mode: %o, want 755 (left as it is)", m)
	}
}

// TestModeOfAFileOpenInAnEditor: a change that sets the mode of a file an
// editor holds open goes to the editor's buffer (the file on disk keeps
// its text until the buffer is saved) and sets the mode of the file on
// disk; its undo takes the buffer back and gives the file its mode
// before. A buffer that is not on disk cannot take a mode: the apply is
// refused, saying what to do, and the buffer is left as it was.
func TestModeOfAFileOpenInAnEditor(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"a.txt": "a\n"}, mutate: func(c *Config) { c.NoWatch = true }})
	ed := newTestEditor()
	ed.open(f.path("a.txt"), "a\n", 3)
	ed.open(f.path("n.txt"), "x\n", 1) // a buffer never saved
	ctx := WithPeer(context.Background(), f.e.Attach(ed))

	if _, err := f.e.ApplyPatch(ctx, "", []protocol.Change{
		{Path: "a.txt", Kind: protocol.ChangeModify, Diff: unifiedDiff("a.txt", []byte("a\n"), []byte("a\nb\n")), Mode: 0o755},
	}); err != nil {
		t.Fatal(err)
	}
	if text, _ := ed.text(f.path("a.txt")); text != "a\nb\n" {
		t.Errorf("a.txt's buffer after the apply: %q, want the change's text", text)
	}
	if got := f.read("a.txt"); got != "a\n" {
		t.Errorf("a.txt on disk after an apply through its editor: %q, want its text before (the buffer is not saved)", got)
	}
	if m := f.modeOf("a.txt"); m != 0o755 {
		t.Errorf("a.txt's mode on disk after the apply: %o, want 755", m)
	}
	if _, err := f.e.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if text, _ := ed.text(f.path("a.txt")); text != "a\n" {
		t.Errorf("a.txt's buffer after the undo: %q, want its text before", text)
	}
	if m := f.modeOf("a.txt"); m != 0o644 {
		t.Errorf("a.txt's mode on disk after the undo: %o, want 644", m)
	}

	_, err := f.e.ApplyPatch(ctx, "", []protocol.Change{
		{Path: "n.txt", Kind: protocol.ChangeModify, Diff: unifiedDiff("n.txt", []byte("x\n"), []byte("x\ny\n")), Mode: 0o755},
	})
	if err == nil || !strings.Contains(err.Error(), "n.txt cannot be given mode 755: it is open in an editor but not on disk; save it to disk and apply again") {
		t.Errorf("apply of a mode change to a buffer not on disk: %v, want a refusal that says to save it", err)
	}
	if text, _ := ed.text(f.path("n.txt")); text != "x\n" {
		t.Errorf("n.txt's buffer after the refused apply: %q, want its text before", text)
	}
	if _, err := os.Lstat(f.path("n.txt")); err == nil {
		t.Errorf("n.txt exists on disk after the refused apply")
	}
}

// TestRejectOfAChangeThatSetAModeTakesItBack: rejecting an applied change
// that set a mode takes back its text and its mode, one with an edit as
// one without; the reject's own undo sets the mode again.
func TestRejectOfAChangeThatSetAModeTakesItBack(t *testing.T) {
	t.Parallel()
	f, chs := modePatch(t)
	ids, err := f.e.ApplyPatchIDs(context.Background(), "", chs[:2]) // a.txt with an edit, b.txt alone
	if err != nil {
		t.Fatal(err)
	}
	for i, rel := range []string{"a.txt", "b.txt"} {
		if _, err := f.e.Reject(context.Background(), ids[i], nil); err != nil {
			t.Fatal(err)
		}
		if m := f.modeOf(rel); m != 0o644 {
			t.Errorf("%s's mode after its change was rejected: %o, want 644", rel, m)
		}
	}
	assertTexts(t, f, "after the rejects", map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	if _, err := f.e.Undo(context.Background(), ids[0]); err != nil {
		t.Fatal(err)
	}
	if m := f.modeOf("a.txt"); m != 0o755 {
		t.Errorf("a.txt's mode after the undo of its reject: %o, want 755", m)
	}
	assertTexts(t, f, "after the undo of the reject", map[string]string{"a.txt": "a\nb\n"})
}

// TestEmptyFileCreatedAndUndone: a change that creates an empty file (its
// content "", which no diff can say: git's "new file mode" without a
// hunk) creates it, with its mode when it has one, and its undo removes
// it.
func TestEmptyFileCreatedAndUndone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"a.txt": "a\n"}, mutate: func(c *Config) { c.NoWatch = true }})
	if _, err := f.e.ApplyPatch(context.Background(), "", []protocol.Change{
		{Path: "empty.txt", Kind: protocol.ChangeCreate, HasContent: true},
		{Path: "empty.sh", Kind: protocol.ChangeCreate, HasContent: true, Mode: 0o755},
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]fs.FileMode{"empty.txt": 0o644, "empty.sh": 0o755}, f.modes("empty.txt", "empty.sh")); diff != "" {
		t.Errorf("the empty files created (-want +got):\n%s", diff)
	}
	if got := f.read("empty.txt") + f.read("empty.sh"); got != "" {
		t.Errorf("the files created hold %q, want nothing", got)
	}
	if _, err := f.e.Undo(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if got := f.modes("empty.txt", "empty.sh"); len(got) != 0 {
		t.Errorf("files left after the undo: %v", got)
	}
}
