package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

// bigFile is a text of n numbered lines.
func bigFile(name string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s line %d: some text to make the diff long\n", name, i)
	}
	return b.String()
}

// bigFilesFixture is a fixture (v0, no watcher) whose workspace holds
// names, each a bigFile of lines lines, which it returns by name.
func bigFilesFixture(t *testing.T, lines int, names []string) (*fixture, map[string]string) {
	t.Helper()
	files := map[string]string{}
	for _, n := range names {
		files[n] = bigFile(n, lines)
	}
	return newFixture(t, fixtureOpts{protocol: "v0", files: files, mutate: func(c *Config) { c.NoWatch = true }}), files
}

// editEvery changes every step-th line of text, marking it with tag.
func editEvery(text, tag string, step int) string {
	lines := strings.SplitAfter(text, "\n")
	for i := 0; i < len(lines); i += step {
		if lines[i] != "" {
			lines[i] = tag + " " + lines[i]
		}
	}
	return strings.Join(lines, "")
}

// blobFiles lists the files under the state folder's blobs/, relative.
func blobFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(dir, "blobs")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestApplyPatchKeepsDiffsOutOfTheStateFile: the diffs of a patch applied
// through the engine go to the blob store once, with the bytes before,
// in one pack per apply; state.json keeps references and does not grow
// with the diffs of later applies. After a restart the changes read the
// same and undo restores every byte.
func TestApplyPatchKeepsDiffsOutOfTheStateFile(t *testing.T) {
	t.Parallel()
	names := []string{"a.txt", "sub/b.txt", "sub/c.txt"}
	f, orig := bigFilesFixture(t, 600, names)
	ctx := context.Background()
	stateFile := filepath.Join(f.e.StateDir(), "state.json")

	apply := func(tag string) (map[string]string, int) {
		t.Helper()
		var chs []protocol.Change
		next, size := map[string]string{}, 0
		for _, n := range names {
			before := f.read(n)
			next[n] = editEvery(before, tag, 5)
			d := unifiedDiff(n, []byte(before), []byte(next[n]))
			size += len(d)
			chs = append(chs, protocol.Change{Path: n, Kind: protocol.ChangeModify, Diff: d})
		}
		ids, err := f.e.ApplyPatchIDs(ctx, "", chs)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != len(names) {
			t.Fatalf("ApplyPatchIDs returned %v, want %d ids", ids, len(names))
		}
		for _, n := range names {
			if got := f.read(n); got != next[n] {
				t.Fatalf("%s after the apply is not the patched text", n)
			}
		}
		return next, size
	}

	_, diffs := apply("one")
	st1, err := os.ReadFile(stateFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(st1), "one a.txt line") {
		t.Errorf("state.json holds the text of a diff")
	}
	if len(st1) > diffs/10 {
		t.Errorf("state.json is %d bytes for %d bytes of diffs: it keeps them", len(st1), diffs)
	}
	if got := blobFiles(t, f.e.StateDir()); len(got) != 1 || !strings.HasPrefix(got[0], "pack-") {
		t.Errorf("blobs after one apply of %d files: %v, want one pack", len(names), got)
	}

	views := f.e.list(ChangeFilter{})
	for _, v := range views {
		if v.Status != StatusApplied || len(v.Hunks) == 0 || v.Diff == "" {
			t.Fatalf("change %s after the apply: status %s, %d hunks, diff %d bytes", v.ID, v.Status, len(v.Hunks), len(v.Diff))
		}
	}

	apply("two")
	st2, err := os.ReadFile(stateFile)
	if err != nil {
		t.Fatal(err)
	}
	if grown := len(st2) - len(st1); grown > 4<<10 {
		t.Errorf("a second apply grew state.json by %d bytes (%d bytes of diffs)", grown, diffs)
	}

	// A restart reads the same changes back (the diffs from the blobs).
	views = f.e.list(ChangeFilter{})
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	if diff := cmp.Diff(views, f.e.list(ChangeFilter{})); diff != "" {
		t.Errorf("the changes after a restart (-before +after):\n%s", diff)
	}

	for range 2 {
		if _, err := f.e.Undo(ctx, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		if got := f.read(n); got != orig[n] {
			t.Errorf("%s after two undos is not the original text", n)
		}
	}
}

// TestStateVersion1IsRead: a state file of the layout before blobs of
// diffs (version 1, every diff inline) still loads, and its changes plan.
func TestStateVersion1IsRead(t *testing.T) {
	t.Parallel()
	s := store{dir: t.TempDir()}
	diff := unifiedDiff("a.go", []byte(bigFile("a", 300)), []byte(editEvery(bigFile("a", 300), "x", 3)))
	old := fmt.Sprintf(`{"version":1,"workspace":"/ws","nextChange":2,"nextUndo":1,"changes":[{"id":"c1","path":"a.go","kind":"modify","status":"pending","hunks":[],"src":{"path":"a.go"},"abs":"/ws/a.go","content":null,"diff":%q,"baseHash":"x"}],"undo":[],"nextTurn":1,"dialogs":[]}`, diff)
	if err := os.MkdirAll(filepath.Join(s.dir, "blobs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.statePath(), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := s.load(workspace{root: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	file, err := newStateFile(s, p)
	if err != nil {
		t.Fatal(err)
	}
	cs := newChangeStore(p.changesState, file)
	_, snap, err := cs.recordSnapshot("c1")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Diff != diff {
		t.Fatalf("the inline diff read back is %d bytes, want %d", len(snap.Diff), len(diff))
	}
	// The next save moves it to the blob store; it reads back the same.
	cs.mu.Lock()
	err = cs.saveLocked()
	cs.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.statePath())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "x a line") || !strings.Contains(string(b), fmt.Sprintf(`"version":%d`, stateVersion)) {
		t.Errorf("state.json after a save:\n%.300s", b)
	}
	if _, snap, _ = cs.recordSnapshot("c1"); snap.Diff != diff || snap.diffErr != nil {
		t.Errorf("the diff read back from its blob is %d bytes (err %v), want %d", len(snap.Diff), snap.diffErr, len(diff))
	}
}

// TestDamagedDiffBlobIsNamed: a diff whose blob is damaged is not planned
// as "no diff": planning says the diff cannot be read.
func TestDamagedDiffBlobIsNamed(t *testing.T) {
	t.Parallel()
	s, cs, _ := newTestStores(t)
	diff := unifiedDiff("a.go", []byte(bigFile("a", 300)), []byte(editEvery(bigFile("a", 300), "x", 3)))
	if err := cs.add(&changeRecord{Change: Change{ID: cs.nextID(), Path: "a.go", Status: StatusPending}, Abs: "/ws/a.go", Diff: diff}, true); err != nil {
		t.Fatal(err)
	}
	packs, err := os.ReadDir(s.packDir())
	if err != nil || len(packs) != 1 || !strings.HasPrefix(packs[0].Name(), "pack-") {
		t.Fatalf("packs: %v %v", packs, err)
	}
	p := filepath.Join(s.packDir(), packs[0].Name())
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, snap, err := cs.recordSnapshot("c1")
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{}
	_, err = e.planChange(&snap, nil, false)
	if err == nil || !strings.Contains(err.Error(), "diff cannot be read") || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("planning a change whose diff blob is damaged: %v", err)
	}
}

// TestSaveMovesTheWatcherOnlyWhenOpenFilesChange: saves that leave the
// files with open changes as they were do not make the watcher recompute
// its folders.
func TestSaveMovesTheWatcherOnlyWhenOpenFilesChange(t *testing.T) {
	t.Parallel()
	_, cs, _ := newTestStores(t)
	moved := 0
	cs.setMoved(func() { moved++ })
	c := &changeRecord{Change: Change{ID: cs.nextID(), DialogID: "d1", Path: "a.go", Status: StatusPending}, Abs: "/ws/a.go"}
	if err := cs.add(c, true); err != nil {
		t.Fatal(err)
	}
	if moved != 1 {
		t.Fatalf("recording an open change told the watcher %d times, want 1", moved)
	}
	if err := cs.renameDialog("d1", "d2"); err != nil {
		t.Fatal(err)
	}
	if moved != 1 {
		t.Fatalf("a save that kept the open files told the watcher again (%d)", moved)
	}
	cs.mu.Lock()
	c.Status = StatusApplied
	err := cs.saveLocked()
	cs.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if moved != 2 {
		t.Fatalf("closing the only open change told the watcher %d times in all, want 2", moved)
	}
}

// TestHashStringIsHashBytes: a diff staged as a string is named by the
// same hash as its bytes (getBlob checks the bytes against it).
func TestHashStringIsHashBytes(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 32<<10 - 1, 32 << 10, 100_000} {
		s := strings.Repeat("x", n/2) + strings.Repeat("y", n-n/2)
		if got, want := hashString(s), hashBytes([]byte(s)); got != want {
			t.Errorf("hashString of %d bytes is %s, want %s", n, got, want)
		}
	}
}

// TestPackReusesLooseBlobs: bytes an older smith stored as a loose blob
// (blobs/xx/<sha256>) are not packed again; the reference names the loose
// blob, and it reads back.
func TestPackReusesLooseBlobs(t *testing.T) {
	t.Parallel()
	s := store{dir: t.TempDir()}
	old, fresh := []byte("bytes an older smith kept\n"), []byte("new bytes\n")
	h := hashBytes(old)
	if err := os.MkdirAll(filepath.Dir(s.blobPath(h)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.blobPath(h), old, 0o600); err != nil {
		t.Fatal(err)
	}
	bs := s.newBlobStage()
	refOld, err := bs.put(old, true, "")
	if err != nil {
		t.Fatal(err)
	}
	refNew, err := bs.put(fresh, true, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := bs.commit(); err != nil {
		t.Fatal(err)
	}
	if refOld.Pack != "" || refNew.Pack == "" || refNew.Off != 0 || refNew.Len != int64(len(fresh)) {
		t.Fatalf("references: loose %+v, new %+v", refOld, refNew)
	}
	for _, c := range []struct {
		ref  blobRef
		want []byte
	}{{refOld, old}, {refNew, fresh}} {
		got, err := s.getBlob(c.ref)
		if err != nil || string(got) != string(c.want) {
			t.Errorf("getBlob(%+v) = %q, %v; want %q", c.ref, got, err, c.want)
		}
	}
}

// TestPackRangeOutsideThePackIsAnError: a reference whose range the pack
// does not hold (a damaged state file) is refused, not read or allocated.
func TestPackRangeOutsideThePackIsAnError(t *testing.T) {
	t.Parallel()
	s := store{dir: t.TempDir()}
	bs := s.newBlobStage()
	ref, err := bs.put([]byte("some bytes\n"), true, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := bs.commit(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []blobRef{
		{Exists: true, Hash: ref.Hash, Pack: ref.Pack, Off: 0, Len: 1 << 40},
		{Exists: true, Hash: ref.Hash, Pack: ref.Pack, Off: -1, Len: 3},
		{Exists: true, Hash: ref.Hash, Pack: ref.Pack, Off: 2, Len: -1},
	} {
		if _, err := s.getBlob(bad); err == nil || !strings.Contains(err.Error(), "not in") {
			t.Errorf("getBlob(%+v): %v, want an error naming the range", bad, err)
		}
	}
}

// TestKeptPlanRendersAsTheApplyWould: the text a kept plan holds for its
// pending hunks is, byte for byte, what rendering them would give, with
// every hunk matching, with one hunk moved (offset) and with one that no
// longer matches (a conflict, left out).
func TestKeptPlanRendersAsTheApplyWould(t *testing.T) {
	t.Parallel()
	base := bigFile("a.txt", 200)
	next := editEvery(base, "x", 40)
	diff := unifiedDiff("a.txt", []byte(base), []byte(next))
	lines := strings.SplitAfter(base, "\n")
	moved := strings.Join(append([]string{"new first line\n", "and a second\n"}, lines...), "")
	broken := strings.Replace(base, "a.txt line 81:", "a.txt line 81 (edited):", 1)
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"a.txt": base}, mutate: func(c *Config) { c.NoWatch = true }})
	for name, text := range map[string]string{"as planned": base, "moved": moved, "one hunk gone": broken} {
		c := &changeRecord{Change: Change{ID: "c1", Path: "a.txt", Kind: protocol.ChangeModify, Hunks: []Hunk{}}, Abs: f.path("a.txt"), Diff: diff}
		fp, err := f.e.planChange(c, []byte(text), true)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c.Hunks = slices.Clone(fp.hunks)
		k := keepPlan(c, fp, []byte(text), true)
		if k == nil {
			t.Fatalf("%s: nothing kept", name)
		}
		want, _, err := fp.render(k.ids)
		if err != nil {
			t.Fatal(err)
		}
		if string(k.next) != string(want) {
			t.Errorf("%s: the kept text differs from rendering hunks %v", name, k.ids)
		}
		if name == "one hunk gone" && len(k.ids) != len(fp.hunks)-1 {
			t.Errorf("%s: kept hunks %v of %d, want all but one", name, k.ids, len(fp.hunks))
		}
	}
}

// TestKeptPlanIsTrimmed: the text a kept plan holds is no larger in memory
// than it is: rendering sizes its buffer for the text before plus every
// added line, twice the result for a diff that rewrites the whole file
// (what go-udiff makes of a large file), and an apply keeps every file's
// until it writes them all.
func TestKeptPlanIsTrimmed(t *testing.T) {
	t.Parallel()
	base := bigFile("a.txt", 2000)
	next := strings.ReplaceAll(base, "line", "LINE")
	var b strings.Builder
	n := strings.Count(base, "\n")
	fmt.Fprintf(&b, "--- a/a.txt\n+++ b/a.txt\n@@ -1,%d +1,%d @@\n", n, n)
	for _, l := range strings.SplitAfter(strings.TrimSuffix(base, "\n"), "\n") {
		b.WriteString("-" + strings.TrimSuffix(l, "\n") + "\n")
	}
	for _, l := range strings.SplitAfter(strings.TrimSuffix(next, "\n"), "\n") {
		b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"a.txt": base}, mutate: func(c *Config) { c.NoWatch = true }})
	c := &changeRecord{Change: Change{ID: "c1", Path: "a.txt", Kind: protocol.ChangeModify, Hunks: []Hunk{}}, Abs: f.path("a.txt"), Diff: b.String()}
	fp, err := f.e.planChange(c, []byte(base), true)
	if err != nil {
		t.Fatal(err)
	}
	c.Hunks = slices.Clone(fp.hunks)
	k := keepPlan(c, fp, []byte(base), true)
	if k == nil {
		t.Fatal("nothing kept")
	}
	if string(k.next) != next {
		t.Fatalf("the kept text is not the rewritten file")
	}
	if c := cap(k.next); c > len(k.next)+len(k.next)/4 {
		t.Errorf("the kept text of %d bytes holds %d bytes of memory", len(k.next), c)
	}
}

// TestApplyPatchIDsHoldsEachDiffOnce: ApplyPatchIDs takes the caller's
// changes (their entries are cleared once recorded), so that a large diff
// lives only in its record, which lets go of it once the journal's pack
// has it; the applied change still shows that diff, read back from the
// pack, before and after a restart.
func TestApplyPatchIDsHoldsEachDiffOnce(t *testing.T) {
	t.Parallel()
	names := []string{"a.txt", "sub/b.txt"}
	f, files := bigFilesFixture(t, 600, names)
	ctx := context.Background()
	var chs []protocol.Change
	diffs := map[string]string{}
	for _, n := range names {
		d := unifiedDiff(n, []byte(files[n]), []byte(editEvery(files[n], "x", 7)))
		if len(d) < largeDiff {
			t.Fatalf("the diff of %s is %d bytes, below largeDiff: the test needs a large one", n, len(d))
		}
		diffs[n] = d
		chs = append(chs, protocol.Change{Path: n, Kind: protocol.ChangeModify, Diff: d})
	}
	ids, err := f.e.ApplyPatchIDs(ctx, "", chs)
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range chs {
		if ch.Diff != "" || ch.Path != "" {
			t.Errorf("change %d given to ApplyPatchIDs still holds its diff (%d bytes) after it returned", i, len(ch.Diff))
		}
	}
	f.e.cs.mu.Lock()
	for _, id := range ids {
		c := f.e.cs.byID[id]
		if c == nil {
			t.Fatalf("no record of change %s", id)
		}
		if c.Diff != "" || c.DiffRef == nil || c.planned != nil {
			t.Errorf("record of change %s after the apply: diff in memory %d bytes, reference %v, kept plan %v", id, len(c.Diff), c.DiffRef, c.planned != nil)
		}
	}
	f.e.cs.mu.Unlock()
	check := func(when string) {
		t.Helper()
		for _, v := range f.e.list(ChangeFilter{}) {
			if v.Status != StatusApplied || v.Diff != diffs[v.Path] {
				t.Errorf("%s: change %s of %s: status %s, diff of %d bytes, want the %d bytes given", when, v.ID, v.Path, v.Status, len(v.Diff), len(diffs[v.Path]))
			}
		}
	}
	check("after the apply")
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	check("after a restart")
}

// TestWriteWithoutTheTextBeforeIsGuarded: once the journal holds a
// file's text before, a disk write of a large file lets go of it and is
// guarded by its hash alone; a smaller one keeps it, and the disk commit
// takes it as the file's bytes instead of reading and hashing the file
// again (diffapply's Write.Expect). Either way a file changed since it
// was read, to another size or to the same size, is still a conflict and
// left as it is, and an unchanged one is written.
func TestWriteWithoutTheTextBeforeIsGuarded(t *testing.T) {
	t.Parallel()
	for _, held := range []bool{true, false} {
		for _, edit := range []string{"one, edited\n", "ONE!\n"} {
			t.Run(fmt.Sprintf("held %v, edited to %q", held, edit), func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"a.txt": "one\n", "b.txt": "two\n"}, mutate: func(c *Config) { c.NoWatch = true }})
				ctx := context.Background()
				write := func(rel, before, after string) *fileWrite {
					w := &fileWrite{abs: f.path(rel), rel: rel, tg: target{text: []byte(before), exists: true, hash: hashBytes([]byte(before))}, next: []byte(after), nextExists: true}
					w.dropBefore()
					if w.tg.text == nil {
						t.Fatalf("%s: a disk write of a small file lets go of its text before", rel)
					}
					if !held {
						w.tg.text = nil // as dropBefore does for a large file
					}
					return w
				}
				f.write("a.txt", edit)
				err := f.e.writeBatch(ctx, "test", []*fileWrite{write("b.txt", "two\n", "TWO\n"), write("a.txt", "one\n", "ONE\n")})
				if !errors.Is(err, ErrConflict) {
					t.Errorf("writing over a file changed since it was read: %v, want ErrConflict", err)
				}
				if got := f.read("a.txt") + f.read("b.txt"); got != edit+"two\n" {
					t.Errorf("after the refused batch the files hold %q", got)
				}
				if err := f.e.writeBatch(ctx, "test", []*fileWrite{write("b.txt", "two\n", "TWO\n")}); err != nil {
					t.Fatal(err)
				}
				if got := f.read("b.txt"); got != "TWO\n" {
					t.Errorf("b.txt after the write: %q", got)
				}
			})
		}
	}
	w := &fileWrite{tg: target{text: make([]byte, keepTextBelow), exists: true, hash: "x"}}
	if w.dropBefore(); w.tg.text != nil {
		t.Errorf("a disk write of %d bytes whose hash is known keeps its text before", keepTextBelow)
	}
}

// TestLargePatchFlushesItsDiffsWhileRecording: a patch whose diffs pass
// flushDiffsAt makes them durable in packs of their own while it records
// its changes (here after every change), and the records let go of them:
// the apply writes the same files, every change shows its diff after a
// restart, undo restores every byte; and when the patch cannot be
// applied, its rejected changes still show their diffs.
func TestLargePatchFlushesItsDiffsWhileRecording(t *testing.T) {
	t.Parallel()
	names := []string{"a.txt", "sub/b.txt", "sub/c.txt"}
	f, orig := bigFilesFixture(t, 600, names)
	f.e.flushDiffsAt = 1
	ctx := context.Background()
	patch := func(tag string, broken string) ([]protocol.Change, map[string]string, map[string]string) {
		var chs []protocol.Change
		diffs, next := map[string]string{}, map[string]string{}
		for _, n := range names {
			before := f.read(n)
			next[n] = editEvery(before, tag, 5)
			if n == broken {
				before = strings.Replace(before, "line 3:", "line three:", 1) // the diff no longer matches
			}
			diffs[n] = unifiedDiff(n, []byte(before), []byte(next[n]))
			chs = append(chs, protocol.Change{Path: n, Kind: protocol.ChangeModify, Diff: diffs[n]})
		}
		return chs, diffs, next
	}
	shows := func(when string, ids []string, diffs map[string]string, status string) {
		t.Helper()
		for _, v := range f.e.list(ChangeFilter{}) {
			if !slices.Contains(ids, v.ID) {
				continue
			}
			if v.Status != status || v.Diff != diffs[v.Path] {
				t.Errorf("%s: change %s of %s: status %s, diff of %d bytes, want %s and the %d bytes given", when, v.ID, v.Path, v.Status, len(v.Diff), status, len(diffs[v.Path]))
			}
		}
	}

	chs, diffs, next := patch("one", "")
	ids, err := f.e.ApplyPatchIDs(ctx, "", chs)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if f.read(n) != next[n] {
			t.Fatalf("%s after the apply is not the patched text", n)
		}
	}
	if got := blobFiles(t, f.e.StateDir()); len(got) != len(names)+1 {
		t.Errorf("blobs after an apply of %d files that flushes after each: %v, want a pack per diff and one of the texts before", len(names), got)
	}
	shows("after the apply", ids, diffs, StatusApplied)
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	f.e.flushDiffsAt = 1
	shows("after a restart", ids, diffs, StatusApplied)
	if _, err := f.e.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if got := f.read(n); got != orig[n] {
			t.Errorf("%s after undo is not the original text", n)
		}
	}

	chs, diffs, _ = patch("two", "sub/c.txt")
	if _, err := f.e.ApplyPatchIDs(ctx, "", chs); !errors.Is(err, ErrConflict) {
		t.Fatalf("a patch with a file that does not match: %v, want ErrConflict", err)
	}
	for _, n := range names {
		if got := f.read(n); got != orig[n] {
			t.Errorf("%s was written by a patch that was not applied", n)
		}
	}
	var rejected []string
	for _, v := range f.e.list(ChangeFilter{}) {
		if v.Status == StatusRejected {
			rejected = append(rejected, v.ID)
		}
	}
	if len(rejected) != len(names) {
		t.Fatalf("changes rejected after the failed patch: %v, want %d", rejected, len(names))
	}
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	shows("the failed patch after a restart", rejected, diffs, StatusRejected)
}

// TestKeptPlanOfALargeFileHoldsItsHash: a change of a file of
// keepTextBelow or more recorded for an apply keeps its plan without the
// file's text, only its hash; the apply that follows writes the planned
// text, and refuses, writing nothing, when the file changed in between.
func TestKeptPlanOfALargeFileHoldsItsHash(t *testing.T) {
	t.Parallel()
	base := bigFile("a.txt", keepTextBelow/20+100)
	if len(base) < keepTextBelow {
		t.Fatalf("the file is %d bytes, below keepTextBelow", len(base))
	}
	next := editEvery(base, "x", 500)
	diff := unifiedDiff("a.txt", []byte(base), []byte(next))
	for _, edited := range []bool{false, true} {
		f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"a.txt": base}, mutate: func(c *Config) { c.NoWatch = true }})
		c, _ := f.e.recordChange(f.e.local, "", "", protocol.Change{Path: "a.txt", Kind: protocol.ChangeModify, Diff: diff}, nil, true, nil)
		f.e.cs.mu.Lock()
		k := c.planned
		f.e.cs.mu.Unlock()
		if k == nil || !k.hashOnly || k.text != nil || k.base != hashBytes([]byte(base)) {
			t.Fatalf("kept plan of a %d-byte file: %+v, want its hash only", len(base), k)
		}
		want := next
		if edited {
			want = strings.Replace(base, "line 2:", "line two:", 1) // same hunks still match: only the hash tells
			f.write("a.txt", want)
		}
		_, err := f.e.applyChanges(context.Background(), []string{c.ID}, false)
		switch {
		case edited && !errors.Is(err, ErrConflict):
			t.Errorf("applying after the file changed: %v, want ErrConflict", err)
		case !edited && err != nil:
			t.Fatal(err)
		}
		if got := f.read("a.txt"); got != want {
			t.Errorf("edited %v: a.txt after the apply is not %s", edited, map[bool]string{true: "the edited file", false: "the planned text"}[edited])
		}
	}
}

// TestLargeWriteRollsBackFromTheJournal: once the journal holds a large
// file's text before, the disk write hands the commit a way to take it
// back from the journal's pack (diffapply.Write.Before) instead of the
// commit holding it: what it gives is the text before, byte for byte. A
// small file's commit keeps its own copy, as before.
func TestLargeWriteRollsBackFromTheJournal(t *testing.T) {
	t.Parallel()
	large := bigFile("a.txt", keepTextBelow/20+100)
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"a.txt": large, "b.txt": "small\n"}, mutate: func(c *Config) { c.NoWatch = true }})
	for _, tc := range []struct {
		rel, before string
		given       bool
	}{{"a.txt", large, true}, {"b.txt", "small\n", false}} {
		w := &fileWrite{abs: f.path(tc.rel), rel: tc.rel, tg: target{text: []byte(tc.before), exists: true, hash: hashBytes([]byte(tc.before))}, next: []byte("after\n"), nextExists: true}
		if _, err := f.e.beginUndo(&changeRecord{Change: Change{ID: "c1"}}, "apply", w, 0, nil); err != nil {
			t.Fatal(err)
		}
		w.dropBefore()
		dw, err := f.e.diskWrite(w)
		if err != nil {
			t.Fatal(err)
		}
		if (dw.Before != nil) != tc.given {
			t.Fatalf("%s (%d bytes): the commit is given the text before: %v, want %v", tc.rel, len(tc.before), dw.Before != nil, tc.given)
		}
		if dw.Before == nil {
			continue
		}
		b, err := dw.Before()
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.before {
			t.Errorf("%s: the text before given back from the journal is not the file's (%d bytes, want %d)", tc.rel, len(b), len(tc.before))
		}
	}
}

// TestBlobStageWritesAsItStages: a blob is in the pack as soon as it is
// staged (the caller may let go of it), readable once the stage is
// committed; a stage that is aborted leaves no pack.
func TestBlobStageWritesAsItStages(t *testing.T) {
	t.Parallel()
	s := store{dir: t.TempDir()}
	b := []byte(bigFile("a.txt", 100))
	bs := s.newBlobStage()
	ref, err := bs.put(b, true, "")
	if err != nil {
		t.Fatal(err)
	}
	d := bs.putString("a diff\n")
	if got := blobFiles(t, s.dir); len(got) != 1 {
		t.Fatalf("blobs once staged: %v, want the pack", got)
	}
	if st, err := os.Stat(filepath.Join(s.packDir(), ref.Pack)); err != nil || st.Size() != int64(len(b))+int64(len("a diff\n")) {
		t.Fatalf("the pack before commit: %v, %v; want both blobs written", st, err)
	}
	if err := bs.commit(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ref  blobRef
		want string
	}{{ref, string(b)}, {d, "a diff\n"}} {
		if got, err := s.getBlob(c.ref); err != nil || string(got) != c.want {
			t.Errorf("blob %+v read back: %q, %v", c.ref, got, err)
		}
	}

	bs = s.newBlobStage()
	if _, err := bs.put([]byte("never committed\n"), true, ""); err != nil {
		t.Fatal(err)
	}
	bs.abort()
	if got := blobFiles(t, s.dir); len(got) != 1 {
		t.Errorf("blobs after an aborted stage: %v, want only the committed pack", got)
	}
}

// TestFailedPatchLeavesNoPackBehind: an apply whose last change does not
// match stages the texts before of the others as it prepares them, then
// refuses; what it staged is removed: every pack in the store is one a
// record refers to.
func TestFailedPatchLeavesNoPackBehind(t *testing.T) {
	t.Parallel()
	names := []string{"a.txt", "b.txt", "c.txt"}
	f, files := bigFilesFixture(t, 600, names)
	var chs []protocol.Change
	for _, n := range names {
		base := files[n]
		if n == "c.txt" {
			base = strings.Replace(base, "line 3:", "line three:", 1)
		}
		chs = append(chs, protocol.Change{Path: n, Kind: protocol.ChangeModify, Diff: unifiedDiff(n, []byte(base), []byte(editEvery(files[n], "x", 5)))})
	}
	if _, err := f.e.ApplyPatchIDs(context.Background(), "", chs); !errors.Is(err, ErrConflict) {
		t.Fatalf("a patch with a file that does not match: %v, want ErrConflict", err)
	}
	refs := map[string]bool{}
	f.e.cs.mu.Lock()
	for _, c := range f.e.cs.st.Changes {
		if c.DiffRef != nil {
			refs[c.DiffRef.Pack] = true
		}
	}
	for _, r := range f.e.cs.st.Undo {
		refs[r.Before.Pack] = true
	}
	f.e.cs.mu.Unlock()
	for _, b := range blobFiles(t, f.e.StateDir()) {
		if !refs[b] {
			t.Errorf("%s is in the blob store, and nothing refers to it", b)
		}
	}
	for _, n := range names {
		if got := f.read(n); got != files[n] {
			t.Errorf("%s was written by a patch that was not applied", n)
		}
	}
}

// TestApplyPatchSeqTakesOneAtATime: ApplyPatchSeq records each change
// before it asks for the next (so that its caller holds one diff at a
// time) and applies them together; an error the sequence gives stops the
// patch: nothing is written and the changes recorded so far are rejected.
func TestApplyPatchSeqTakesOneAtATime(t *testing.T) {
	t.Parallel()
	names := []string{"a.txt", "b.txt", "c.txt"}
	f, files := bigFilesFixture(t, 300, names)
	ctx := context.Background()
	recorded := func() int {
		f.e.cs.mu.Lock()
		defer f.e.cs.mu.Unlock()
		return len(f.e.cs.st.Changes)
	}
	seq := func(tag string, failAt int) iter.Seq2[protocol.Change, error] {
		return func(yield func(protocol.Change, error) bool) {
			start := recorded()
			for i, n := range names {
				if got := recorded() - start; got != i {
					t.Errorf("%s: asked for change %d with %d recorded, want %d", tag, i, got, i)
				}
				if i == failAt {
					yield(protocol.Change{}, errors.New("cannot read it back"))
					return
				}
				d := unifiedDiff(n, []byte(files[n]), []byte(editEvery(files[n], tag, 7)))
				if !yield(protocol.Change{Path: n, Kind: protocol.ChangeModify, Diff: d}, nil) {
					return
				}
			}
		}
	}
	if _, err := f.e.ApplyPatchSeq(ctx, "", seq("broken", 2)); err == nil || !strings.Contains(err.Error(), "cannot read it back") {
		t.Fatalf("a sequence that fails at its third change: %v, want its error", err)
	}
	for _, n := range names {
		if f.read(n) != files[n] {
			t.Errorf("%s was written by a patch whose sequence failed", n)
		}
	}
	for _, v := range f.e.list(ChangeFilter{}) {
		if v.Status != StatusRejected {
			t.Errorf("change %s of the failed patch is %s, want rejected", v.ID, v.Status)
		}
	}
	ids, err := f.e.ApplyPatchSeq(ctx, "", seq("x", -1))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(names) {
		t.Fatalf("ids %v, want %d", ids, len(names))
	}
	for _, n := range names {
		if got := f.read(n); got != editEvery(files[n], "x", 7) {
			t.Errorf("%s after the apply is not the patched text", n)
		}
	}
}

// TestApplyPlannedSeqTakesThePlanOnlyForItsText: a change handed with
// the caller's plan of its diff is not planned again when the file holds
// the text the plan was made against (the engine writes what the plan
// says: here a plan whose result was altered, to see it taken), and is
// planned as any change when the file changed since (the plan's result
// would be wrong there: the engine must not write it).
func TestApplyPlannedSeqTakesThePlanOnlyForItsText(t *testing.T) {
	t.Parallel()
	text := bigFile("a.txt", 60)
	d := unifiedDiff("a.txt", []byte(text), []byte(editEvery(text, "x", 7)))
	planOf := func(t *testing.T, against string) *diffapply.File {
		p, err := diffapply.Plan(t.TempDir(), []byte(d), diffapply.Options{Target: "a.txt", ReadFile: func(string) ([]byte, bool, error) {
			return []byte(against), true, nil
		}})
		if err != nil || len(p.Files) != 1 {
			t.Fatalf("plan: %v", err)
		}
		return p.Files[0]
	}
	apply := func(t *testing.T, f *fixture, plan *diffapply.File) {
		t.Helper()
		_, err := f.e.ApplyPlannedSeq(context.Background(), "", func(yield func(PlannedChange, error) bool) {
			yield(PlannedChange{Change: protocol.Change{Path: "a.txt", Kind: protocol.ChangeModify, Diff: d}, Plan: plan}, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Run("same text", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"a.txt": text}, mutate: func(c *Config) { c.NoWatch = true }})
		plan := planOf(t, text)
		plan.After = []byte("what the plan says\n")
		apply(t, f, plan)
		if got := f.read("a.txt"); got != "what the plan says\n" {
			t.Errorf("a.txt is %q: the engine planned the change again instead of taking the plan", got)
		}
		// The bytes before are journalled under their own hash (the
		// plan's, not computed again), so that undo can check them.
		f.e.cs.mu.Lock()
		before := f.e.cs.st.Undo[0].Before.Hash
		f.e.cs.mu.Unlock()
		if before != hashBytes([]byte(text)) {
			t.Errorf("the journal's bytes before are under %q, want the hash of the text before", before)
		}
	})
	t.Run("changed text", func(t *testing.T) {
		moved := "a new first line\n" + text
		f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"a.txt": moved}, mutate: func(c *Config) { c.NoWatch = true }})
		apply(t, f, planOf(t, text))
		if got, want := f.read("a.txt"), "a new first line\n"+editEvery(text, "x", 7); got != want {
			t.Errorf("a.txt after the apply:\n%s\nwant the diff applied to the text on disk:\n%s", got, want)
		}
	})
}

// TestPatchOfPlannedFilesReadsIntoOneBuffer: a patch of files of
// different sizes, each handed with its plan, is read into one buffer
// file after file (when recorded, and again when applied); each file's
// kept text must still be its own. Each plan's result is altered to see
// it taken (a text mixed up with another file's makes the engine plan
// again, or refuse), and the undo that follows must restore every file's
// bytes exactly (the journal keeps the kept text).
func TestPatchOfPlannedFilesReadsIntoOneBuffer(t *testing.T) {
	t.Parallel()
	sizes := []int{40, 300, 10, 120, 301, 2}
	files := map[string]string{}
	var names []string
	for i, n := range sizes {
		name := fmt.Sprintf("f%d.txt", i)
		names = append(names, name)
		files[name] = bigFile(name, n)
	}
	f := newFixture(t, fixtureOpts{protocol: "v0", files: files, mutate: func(c *Config) { c.NoWatch = true }})
	ctx := context.Background()
	_, err := f.e.ApplyPlannedSeq(ctx, "", func(yield func(PlannedChange, error) bool) {
		for _, name := range names {
			d := unifiedDiff(name, []byte(files[name]), []byte(editEvery(files[name], "x", 7)))
			p, err := diffapply.Plan(t.TempDir(), []byte(d), diffapply.Options{Target: name, ReadFile: func(string) ([]byte, bool, error) {
				return []byte(files[name]), true, nil
			}})
			if err != nil || len(p.Files) != 1 {
				t.Fatalf("plan %s: %v", name, err)
			}
			p.Files[0].After = []byte("what the plan says for " + name + "\n")
			if !yield(PlannedChange{Change: protocol.Change{Path: name, Kind: protocol.ChangeModify, Diff: d}, Plan: p.Files[0]}, nil) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if got, want := f.read(name), "what the plan says for "+name+"\n"; got != want {
			t.Errorf("%s is %.60q after the apply, want its plan's result %q", name, got, want)
		}
	}
	if _, err := f.e.Undo(ctx, ""); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if got := f.read(name); got != files[name] {
			t.Errorf("%s after the undo is not its text before (%d bytes, want %d)", name, len(got), len(files[name]))
		}
	}
}

// TestApplyPlannedSeqTakesThePlanOfCreationAndDeletion: a creation and a
// deletion by a diff, handed with the caller's plan, are not planned again
// when the file is as the plan found it (absent, or holding the plan's
// text before): each plan's hunk header is altered to see it taken (the
// engine's own plan of the diff would give the diff's), and the created
// file holds the plan's result. The undo after it takes both back. A
// deletion whose plan was made against another text is planned as any
// change: the file changed since, so it is not deleted.
func TestApplyPlannedSeqTakesThePlanOfCreationAndDeletion(t *testing.T) {
	t.Parallel()
	const old = "one\ntwo\nthree\n"
	create := "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
	del := "--- a/old.txt\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-one\n-two\n-three\n"
	planOf := func(t *testing.T, d, name string, text []byte, exists bool) *diffapply.File {
		t.Helper()
		p, err := diffapply.Plan(t.TempDir(), []byte(d), diffapply.Options{Target: name, ReadFile: func(string) ([]byte, bool, error) {
			return text, exists, nil
		}})
		if err != nil || len(p.Files) != 1 || len(p.Files[0].Hunks) != 1 {
			t.Fatalf("plan %s: %v", name, err)
		}
		p.Files[0].Hunks[0].Header = "@@ the plan's own @@"
		return p.Files[0]
	}
	apply := func(t *testing.T, f *fixture, chs ...PlannedChange) []string {
		t.Helper()
		ids, err := f.e.ApplyPlannedSeq(context.Background(), "", func(yield func(PlannedChange, error) bool) {
			for _, ch := range chs {
				if !yield(ch, nil) {
					return
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	t.Run("as planned", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"old.txt": old}, mutate: func(c *Config) { c.NoWatch = true }})
		cp := planOf(t, create, "new.txt", nil, false)
		cp.After = []byte("what the plan says\n")
		ids := apply(t, f,
			PlannedChange{Change: protocol.Change{Path: "new.txt", Kind: protocol.ChangeCreate, Diff: create}, Plan: cp},
			PlannedChange{Change: protocol.Change{Path: "old.txt", Kind: protocol.ChangeDelete, Diff: del}, Plan: planOf(t, del, "old.txt", []byte(old), true)})
		if len(ids) != 2 {
			t.Fatalf("ids %v, want 2", ids)
		}
		for _, id := range ids {
			_, v, err := f.e.cs.recordSnapshot(id) // as recorded: the altered result is not the diff's
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Hunks) != 1 || v.Hunks[0].Header != "@@ the plan's own @@" {
				t.Errorf("%s (%s): hunks %+v: the engine planned the diff again instead of taking the plan", v.Path, v.Kind, v.Hunks)
			}
			if v.Status != StatusApplied {
				t.Errorf("%s: status %s, want applied", v.Path, v.Status)
			}
		}
		if got := f.read("new.txt"); got != "what the plan says\n" {
			t.Errorf("new.txt is %q, want the plan's result", got)
		}
		if _, err := os.Stat(f.path("old.txt")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("old.txt after the apply: %v, want it deleted", err)
		}
		if _, err := f.e.Undo(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		if got := f.read("old.txt"); got != old {
			t.Errorf("old.txt after the undo is %q, want %q", got, old)
		}
		if _, err := os.Stat(f.path("new.txt")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("new.txt after the undo: %v, want it gone", err)
		}
	})
	t.Run("deletion of a changed text", func(t *testing.T) {
		changed := "one\ntwo\nthree and more\n"
		f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"old.txt": changed}, mutate: func(c *Config) { c.NoWatch = true }})
		ids, err := f.e.ApplyPlannedSeq(context.Background(), "", func(yield func(PlannedChange, error) bool) {
			yield(PlannedChange{Change: protocol.Change{Path: "old.txt", Kind: protocol.ChangeDelete, Diff: del}, Plan: planOf(t, del, "old.txt", []byte(old), true)}, nil)
		})
		if err == nil {
			t.Errorf("the apply of a deletion of a changed file succeeded (ids %v)", ids)
		}
		if got := f.read("old.txt"); got != changed {
			t.Errorf("old.txt is %q, want it untouched", got)
		}
	})
	t.Run("creation over a file", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"new.txt": "already here\n"}, mutate: func(c *Config) { c.NoWatch = true }})
		_, err := f.e.ApplyPlannedSeq(context.Background(), "", func(yield func(PlannedChange, error) bool) {
			yield(PlannedChange{Change: protocol.Change{Path: "new.txt", Kind: protocol.ChangeCreate, Diff: create}, Plan: planOf(t, create, "new.txt", nil, false)}, nil)
		})
		if err == nil {
			t.Error("the creation of a file that exists succeeded")
		}
		if got := f.read("new.txt"); got != "already here\n" {
			t.Errorf("new.txt is %q, want it untouched", got)
		}
	})
}
