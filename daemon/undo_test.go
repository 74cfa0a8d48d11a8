package daemon

import (
	"context"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/smith-dev/smith/protocol"
)

// The undo of a patch takes large files back one at a time (undoWrite):
// these tests run it with every file held, as before (holdBelow
// math.MaxInt), and with the files above a few KiB streamed, and want the
// same files, views, notifications, refusals and state from both.

// undoSmall is the size from which the streamed runs stream a file.
const undoSmall = 2 << 10

// patchFixture applies, through ApplyPatchIDs as smith apply does, a
// patch of four files: a large and a small file changed, a large file
// deleted and a large file created. It returns the files before the
// patch and after it ("" for a file that does not exist). ed, when given,
// is attached once the patch is applied.
func patchFixture(t *testing.T, holdBelow int, ed Editor) (f *fixture, before, after map[string]string) {
	t.Helper()
	big, small, gone := bigFile("big.txt", 200), "one\ntwo\nthree\n", bigFile("gone.txt", 150)
	if len(big) < undoSmall || len(gone) < undoSmall {
		t.Fatalf("the large files are %d and %d bytes, below %d", len(big), len(gone), undoSmall)
	}
	f = newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"big.txt": big, "small.txt": small, "gone.txt": gone}, mutate: func(c *Config) { c.NoWatch = true }})
	f.e.holdBelow = holdBelow
	created := bigFile("new.txt", 120)
	after = map[string]string{"big.txt": editEvery(big, "x", 7), "small.txt": "one\nTWO\nthree\n", "gone.txt": "", "new.txt": created}
	chs := []protocol.Change{
		{Path: "big.txt", Kind: protocol.ChangeModify, Diff: unifiedDiff("big.txt", []byte(big), []byte(after["big.txt"]))},
		{Path: "small.txt", Kind: protocol.ChangeModify, Diff: unifiedDiff("small.txt", []byte(small), []byte(after["small.txt"]))},
		{Path: "gone.txt", Kind: protocol.ChangeDelete},
		{Path: "new.txt", Kind: protocol.ChangeCreate, Content: created, HasContent: true},
	}
	if _, err := f.e.ApplyPatchIDs(context.Background(), "", chs); err != nil {
		t.Fatal(err)
	}
	before = map[string]string{"big.txt": big, "small.txt": small, "gone.txt": gone, "new.txt": ""}
	assertTexts(t, f, "after the patch", after)
	if ed != nil {
		// Attached after the apply, so that it gets only the undo's
		// notifications (the apply's were sent before it was there).
		f.e.Attach(ed)
	}
	return f, before, after
}

// assertTexts checks every file of want ("": absent) byte for byte.
func assertTexts(t *testing.T, f *fixture, when string, want map[string]string) {
	t.Helper()
	for name, text := range want {
		b, err := os.ReadFile(f.path(name))
		switch {
		case text == "" && !errors.Is(err, os.ErrNotExist):
			t.Errorf("%s: %s exists (%v), want it absent", when, name, err)
		case text != "" && string(b) != text:
			t.Errorf("%s: %s is not the expected text (%d bytes, want %d; %v)", when, name, len(b), len(text), err)
		}
	}
}

// stateLeft lists what an undo may leave in the state folder besides
// state.json, the lock and the blobs: temporary files, transactions.
func stateLeft(t *testing.T, f *fixture) []string {
	t.Helper()
	var out []string
	dir := f.e.StateDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range ents {
		if strings.HasPrefix(de.Name(), ".") {
			out = append(out, de.Name())
		}
	}
	txn, _ := os.ReadDir(filepath.Join(dir, "txn"))
	for _, de := range txn {
		out = append(out, "txn/"+de.Name())
	}
	return out
}

// undoRun is what one run of an undo shows.
type undoRun struct {
	Err     string
	Last    *Change
	Changes []Change
	Notes   []Notification
	State   []undoRecord // without their times
}

// observe runs Undo("") on f and records what it shows; with ed, the
// notifications it got (paths relative to the workspace).
func observe(t *testing.T, f *fixture, ed *testEditor) undoRun {
	t.Helper()
	n0 := 0
	if ed != nil {
		n0 = len(ed.notifications())
	}
	var run undoRun
	last, err := f.e.Undo(context.Background(), "")
	if err != nil {
		run.Err = err.Error()
	}
	run.Last = last
	run.Changes = f.e.list(ChangeFilter{})
	if ed != nil && err == nil {
		// One changeUpdated and one fileChanged per file.
		waitFor(t, "the undo's notifications", func() bool { return len(ed.notifications()) >= n0+8 })
		for _, n := range ed.notifications()[n0:] {
			if n.Path != "" {
				n.Path, _ = filepath.Rel(f.ws, n.Path)
			}
			run.Notes = append(run.Notes, n)
		}
	}
	f.e.cs.mu.Lock()
	for _, r := range f.e.cs.st.Undo {
		rr := *r
		rr.At, rr.Path, rr.Before.Pack, rr.Before.Off = "", "", "", 0
		run.State = append(run.State, rr)
	}
	f.e.cs.mu.Unlock()
	return run
}

// TestStreamedUndoIsTheUndoHeld: the undo of a patch with large files
// streamed restores every file byte for byte (the changed ones, the
// deleted one, the created one gone) and shows exactly what the undo with
// every file held shows: the change it returns, the changes listed after,
// the notifications a listening editor gets, the journal's records; it
// leaves nothing in the state folder. Without a listener as with one.
func TestStreamedUndoIsTheUndoHeld(t *testing.T) {
	t.Parallel()
	for _, listening := range []bool{false, true} {
		var runs [2]undoRun
		for i, hold := range []int{math.MaxInt, undoSmall} {
			var ed *testEditor
			var edi Editor
			if listening {
				ed = newTestEditor()
				edi = ed
			}
			f, before, _ := patchFixture(t, hold, edi)
			runs[i] = observe(t, f, ed)
			if runs[i].Err != "" {
				t.Fatalf("listening %v, hold below %d: %s", listening, hold, runs[i].Err)
			}
			assertTexts(t, f, "after the undo", before)
			if left := stateLeft(t, f); len(left) != 0 {
				t.Errorf("listening %v, hold below %d: the undo left %v in the state folder", listening, hold, left)
			}
		}
		if runs[0].Last == nil || runs[0].Last.Status != StatusUndone || runs[0].Last.Path != "new.txt" {
			t.Errorf("the undo returned %+v, want new.txt's change, undone", runs[0].Last)
		} else if len(runs[0].Last.Restored) != 4 || runs[0].Last.Restored[3] != (RestoredFile{ChangeID: runs[0].Last.ID, Path: "new.txt"}) {
			t.Errorf("the undo returned Restored %+v, want the patch's 4 files, new.txt's last", runs[0].Last.Restored)
		}
		for _, n := range runs[0].Notes {
			if n.Change != nil && n.Change.Restored != nil {
				t.Errorf("a notification of the undo carries Restored (only what Undo returns does): %+v", n.Change)
			}
		}
		// The records' unexported members are what a save kept of them.
		if d := cmp.Diff(runs[0], runs[1], cmpopts.IgnoreUnexported(undoRecord{})); d != "" {
			t.Errorf("listening %v: the streamed undo differs from the undo held (-held +streamed):\n%s", listening, d)
		}
	}
}

// TestUndoOfAPatchWithAFileChangedIsRefused: when one file of a patch
// was changed since smith wrote it (each of the four in turn: edited,
// deleted after its creation, re-created after its deletion), undo is
// refused with ErrConflict naming that file, and nothing is written:
// every file, the state file and the changes are as they were, and the
// state folder holds nothing more. The same refusal, word for word,
// whether the large files are held or streamed. Once the file is put
// back, the undo goes through.
func TestUndoOfAPatchWithAFileChangedIsRefused(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"big.txt", "small.txt", "gone.txt", "new.txt"} {
		var errs [2]string
		for i, hold := range []int{math.MaxInt, undoSmall} {
			f, before, after := patchFixture(t, hold, nil)
			theirs := maps.Clone(after)
			switch after[name] {
			case "":
				theirs[name] = "someone put it back\n"
				f.write(name, theirs[name])
			default:
				theirs[name] = strings.Replace(after[name], "line 3:", "line three:", 1)
				if name == "small.txt" {
					theirs[name] = "one\nTWO\n3\n"
				}
				f.write(name, theirs[name])
			}
			state, err := os.ReadFile(filepath.Join(f.e.StateDir(), "state.json"))
			if err != nil {
				t.Fatal(err)
			}
			views := f.e.list(ChangeFilter{})
			_, err = f.e.Undo(context.Background(), "")
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s changed, hold below %d: undo = %v, want ErrConflict naming it", name, hold, err)
			}
			errs[i] = regexp.MustCompile(`at [0-9]{4}-[^)]*\)`).ReplaceAllString(err.Error(), "at TIME)")
			assertTexts(t, f, "after the refused undo", theirs)
			if now, _ := os.ReadFile(filepath.Join(f.e.StateDir(), "state.json")); string(now) != string(state) {
				t.Errorf("%s changed, hold below %d: the refused undo rewrote the state file", name, hold)
			}
			if d := cmp.Diff(views, f.e.list(ChangeFilter{})); d != "" {
				t.Errorf("%s changed, hold below %d: the changes after the refused undo (-before +after):\n%s", name, hold, d)
			}
			if left := stateLeft(t, f); len(left) != 0 {
				t.Errorf("%s changed, hold below %d: the refused undo left %v in the state folder", name, hold, left)
			}
			// Put back as smith wrote it, the patch can be undone.
			if after[name] == "" {
				if err := os.Remove(f.path(name)); err != nil {
					t.Fatal(err)
				}
			} else {
				f.write(name, after[name])
			}
			if _, err := f.e.Undo(context.Background(), ""); err != nil {
				t.Fatalf("%s put back, hold below %d: %v", name, hold, err)
			}
			assertTexts(t, f, "after the undo", before)
		}
		if errs[0] != errs[1] {
			t.Errorf("%s changed: the refusals differ:\nheld:     %s\nstreamed: %s", name, errs[0], errs[1])
		}
	}
}

// TestUndoWriteOfALargeFileHoldsNoText: the undo of a large file on disk
// holds neither its text nor the text it restores until the commit: the
// disk write gives the commit the text to restore (read from the journal
// when the commit writes the file, Write.ContentFrom) and, should it roll
// back, the text smith wrote (Write.Before, from a spare file), each byte
// for byte. A small file is held as before.
func TestUndoWriteOfALargeFileHoldsNoText(t *testing.T) {
	t.Parallel()
	f, before, after := patchFixture(t, undoSmall, nil)
	recs, err := f.e.cs.undoTargets("")
	if err != nil {
		t.Fatal(err)
	}
	spare := newSpareFile(f.e.StateDir())
	defer spare.Close()
	seen := 0
	for _, r := range recs {
		w, err := f.e.undoWrite(f.e.local, r, spare)
		if err != nil {
			t.Fatal(err)
		}
		dw, err := f.e.diskWrite(w)
		if err != nil {
			t.Fatal(err)
		}
		large := len(before[r.Rel]) >= undoSmall || len(after[r.Rel]) >= undoSmall
		if !large {
			if w.next == nil || dw.ContentFrom != nil || dw.Before != nil || string(dw.Content) != before[r.Rel] {
				t.Errorf("%s (small): the undo's write %+v, want the text held", r.Rel, dw)
			}
			continue
		}
		seen++
		if w.tg.text != nil || w.next != nil || dw.Content != nil {
			t.Errorf("%s (large): the undo holds %d bytes of the file and %d of what it restores", r.Rel, len(w.tg.text), len(w.next))
		}
		if before[r.Rel] != "" {
			b, err := dw.ContentFrom()
			if err != nil || string(b) != before[r.Rel] || dw.ContentHash == "" {
				t.Errorf("%s: the text to restore given to the commit: %d bytes, %v, hash %q; want the text before", r.Rel, len(b), err, dw.ContentHash)
			}
		} else if dw.ContentFrom != nil {
			t.Errorf("%s: a file the undo removes is given a content", r.Rel)
		}
		if after[r.Rel] != "" {
			if dw.Before == nil {
				t.Fatalf("%s: the commit is not given the text smith wrote to roll back", r.Rel)
			}
			b, err := dw.Before()
			if err != nil || string(b) != after[r.Rel] {
				t.Errorf("%s: the text to roll back to: %d bytes, %v; want what smith wrote", r.Rel, len(b), err)
			}
		}
	}
	if seen != 3 {
		t.Fatalf("%d large files among the undo's writes, want 3", seen)
	}
	spare.Close()
	if left := stateLeft(t, f); len(left) != 0 {
		t.Errorf("the spare file left %v in the state folder", left)
	}
}

// TestUndoWithADamagedJournalWritesNothing: when the journal's copy of a
// file's text before is damaged, the undo of the patch is refused with
// the journal's error, the same whether that file is held (read before
// the commit) or streamed (read while the commit writes it), naming the
// file, saying that nothing was written and where its text can come from
// instead; and nothing is written: files, state file and state folder are
// as they were (a streamed file's undo saves its write-ahead record before
// it reads that text, and takes it back: the state file holds what it
// held).
func TestUndoWithADamagedJournalWritesNothing(t *testing.T) {
	t.Parallel()
	var errs [2]string
	for i, hold := range []int{math.MaxInt, undoSmall} {
		f, _, after := patchFixture(t, hold, nil)
		f.e.cs.mu.Lock()
		var ref blobRef
		for _, r := range f.e.cs.st.Undo {
			if r.Rel == "big.txt" {
				ref = r.Before
			}
		}
		f.e.cs.mu.Unlock()
		switch {
		case ref.Inline != nil:
			// Kept in its record (a small text): damaged there, and in
			// the state file, as a damage found at start would be.
			ref.Inline[len(ref.Inline)/2] = '#'
			f.e.cs.mu.Lock()
			err := f.e.cs.saveLocked()
			f.e.cs.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
		case ref.Pack != "":
			pack, err := os.OpenFile(filepath.Join(f.e.store.packDir(), ref.Pack), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pack.WriteAt([]byte("#"), ref.Off+ref.Len/2); err != nil {
				t.Fatal(err)
			}
			pack.Close()
		default:
			t.Fatalf("big.txt's text before is neither in its record nor in a pack: %+v", ref)
		}
		state, err := os.ReadFile(filepath.Join(f.e.StateDir(), "state.json"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.e.Undo(context.Background(), "")
		if err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("hold below %d: undo with a damaged journal = %v, want the damage said", hold, err)
		}
		errs[i] = err.Error()
		// The user must learn which file's copy is damaged, that nothing
		// was written, and what to do next.
		for _, want := range []string{"big.txt", "nothing was written", "version control"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("hold below %d: the refusal does not say %q: %v", hold, want, err)
			}
		}
		assertTexts(t, f, "after the refused undo", after)
		if now, _ := os.ReadFile(filepath.Join(f.e.StateDir(), "state.json")); string(now) != string(state) {
			t.Errorf("hold below %d: the refused undo left the state file changed:\n%s\n%s", hold, state, now)
		}
		if left := stateLeft(t, f); len(left) != 0 {
			t.Errorf("hold below %d: the refused undo left %v in the state folder", hold, left)
		}
	}
	if errs[0] != errs[1] {
		t.Errorf("the refusals differ:\nheld:     %s\nstreamed: %s", errs[0], errs[1])
	}
}
