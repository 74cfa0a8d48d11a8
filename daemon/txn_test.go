package daemon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

// TestRestartSettlesAnApplyCutShort: an apply whose disk commit keeps its
// journal in the state file (Txn) is cut short at each point where the
// files can be found: after its write-ahead save, with the temp files
// written and nothing renamed; after its first rename; and after its first
// rename with the other temp file lost (a system crash that kept no entry
// of it). The next start leaves the files all before or all after, no
// temp file and no journal, the changes as the files say (applied, and
// undone by Undo; or pending, and applied again by ApplyChanges).
func TestRestartSettlesAnApplyCutShort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		renamed bool // a.txt was renamed over
		temps   bool // the temp files not renamed are there
		after   bool // the state the files must end in
		edited  bool // every file renamed over, the last edited since
	}{
		{"journal saved, nothing renamed", false, true, false, false},
		{"one file renamed", true, true, true, false},
		{"one file renamed, the other's temp file lost", true, false, false, false},
		{"every file renamed, one edited since", true, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, names, before, after, ids, statePath := appliedPair(t)
			ctx := context.Background()

			// Rewind state.json to its write-ahead save: the changes
			// pending, their undo records pending, the commit's journal.
			b, err := os.ReadFile(statePath)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `"txn"`) {
				t.Errorf("the state file keeps a finished commit's journal:\n%s", b)
			}
			var st map[string]any
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			for _, x := range st["changes"].([]any) {
				ch := x.(map[string]any)
				ch["status"], ch["baseHash"] = StatusPending, hashBytes([]byte(before[ch["path"].(string)]))
				for _, h := range ch["hunks"].([]any) {
					h.(map[string]any)["status"] = StatusPending
				}
			}
			realWS, err := filepath.EvalSymlinks(f.ws)
			if err != nil {
				t.Fatal(err)
			}
			tx := map[string]any{"root": realWS}
			var entries, seqs []any
			for i, x := range st["undo"].([]any) {
				r := x.(map[string]any)
				r["state"], r["via"] = undoPending, ""
				n := names[i]
				if r["rel"] != filepath.FromSlash(n) {
					t.Fatalf("undo record %d is of %v, want %s", i, r["rel"], n)
				}
				if _, ok := r["before"].(map[string]any)["inline"]; !ok {
					t.Errorf("the undo record of %s keeps its small text before elsewhere: %v", n, r["before"])
				}
				seqs = append(seqs, r["seq"])
				entries = append(entries, map[string]any{
					"path": n, "temp": tempOf(n), "existed": true, "mode": 0o644,
					"before": diffapply.Hash([]byte(before[n])), "after": diffapply.Hash([]byte(after[n])),
				})
			}
			tx["entries"], tx["undo"] = entries, seqs
			st["txn"] = tx
			writeStateJSON(t, statePath, st)
			// The files as the cut left them.
			edited := names[len(names)-1]
			for _, n := range names {
				text := before[n]
				if n == "a.txt" && tc.renamed || tc.edited {
					text = after[n]
				} else if tc.temps {
					f.write(tempOf(n), after[n])
				}
				if tc.edited && n == edited {
					text = "edited since\n"
				}
				f.write(n, text)
			}

			f.e = f.open()
			p := f.e.Attach(nil)
			want := before
			if tc.after {
				want = after
			}
			if tc.edited {
				// The commit was done: the files the user did not edit
				// keep it, beside the one edited on its text.
				want = map[string]string{}
				for n, text := range after {
					want[n] = text
				}
				want[edited] = "edited since\n"
			}
			for _, n := range names {
				if got := f.read(n); got != want[n] {
					t.Errorf("%s after the restart holds %q, want %q", n, got, want[n])
				}
				if _, err := os.Stat(f.path(tempOf(n))); !os.IsNotExist(err) {
					t.Errorf("the temp file of %s is left", n)
				}
			}
			if b, _ := os.ReadFile(statePath); strings.Contains(string(b), `"txn"`) {
				t.Errorf("the journal is left in the state file after the restart")
			}
			wantStatus := StatusPending
			if tc.after {
				wantStatus = StatusApplied
			}
			for _, id := range ids {
				c, err := f.e.Change(id)
				if err != nil {
					t.Fatal(err)
				}
				if tc.edited && c.Path == edited {
					continue // its file is in neither state: the user's
				}
				if c.Status != wantStatus {
					t.Errorf("change %s (%s) is %s after the restart, want %s", id, c.Path, c.Status, wantStatus)
				}
			}
			if tc.edited {
				return
			}
			if tc.after {
				if _, err := f.e.Undo(WithPeer(ctx, p), ""); err != nil {
					t.Fatalf("undo after the restart: %v", err)
				}
				for _, n := range names {
					if got := f.read(n); got != before[n] {
						t.Errorf("undo left %s holding %q", n, got)
					}
				}
				return
			}
			if _, err := f.e.ApplyChanges(WithPeer(ctx, p), ids); err != nil {
				t.Fatalf("applying again after the restart: %v", err)
			}
			for _, n := range names {
				if got := f.read(n); got != after[n] {
					t.Errorf("applied again, %s holds %q", n, got)
				}
			}
		})
	}
}

// tempOf is the temp file name the rewound journal gives n.
func tempOf(n string) string {
	dir, base := filepath.Split(n)
	return filepath.ToSlash(filepath.Join(dir, "."+base+".smith-0123456789ab"))
}

// TestSmallApplyMakesNoPack: the text a small write replaces stays in its
// undo record, so that an apply of a small file makes no pack (nor the
// blobs folder) and no transaction folder: its journal is the state file
// alone. Undo after a restart restores the bytes.
func TestSmallApplyMakesNoPack(t *testing.T) {
	t.Parallel()
	before, after := "x one\nx two\n", "x one\nx 2\n"
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"x.txt": before}, mutate: func(c *Config) { c.NoWatch = true }})
	ctx := context.Background()
	if _, err := f.e.ApplyPatchIDs(ctx, "", []protocol.Change{{Path: "x.txt", Kind: protocol.ChangeModify, Diff: unifiedDiff("x.txt", []byte(before), []byte(after))}}); err != nil {
		t.Fatal(err)
	}
	dir := f.e.StateDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "lock state.json" {
		t.Errorf("the state folder holds %v, want the lock and state.json only", names)
	}
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	if _, err := f.e.Undo(WithPeer(ctx, f.e.Attach(nil)), ""); err != nil {
		t.Fatal(err)
	}
	if got := f.read("x.txt"); got != before {
		t.Errorf("undo left %q", got)
	}
}

// TestInlineTextsMoveToAPack: the small texts kept in undo records stay
// under inlineTotal in all: past it they go to one pack together, and
// undo still restores every one of them.
func TestInlineTextsMoveToAPack(t *testing.T) {
	t.Parallel()
	const files = 12 // of 10 KiB: 120 KiB of texts before, past inlineTotal
	orig := map[string]string{}
	var names []string
	for i := range files {
		n := filepathName(i)
		names = append(names, n)
		orig[n] = bigFile(n, 10<<10/48)
	}
	f := newFixture(t, fixtureOpts{protocol: "v0", files: orig, mutate: func(c *Config) { c.NoWatch = true }})
	ctx := context.Background()
	for _, n := range names {
		next := editEvery(orig[n], "X", 1<<20) // one line: a small diff, kept in the state file
		if _, err := f.e.ApplyPatchIDs(ctx, "", []protocol.Change{{Path: n, Kind: protocol.ChangeModify, Diff: unifiedDiff(n, []byte(orig[n]), []byte(next))}}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(f.e.StateDir(), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Undo []*undoRecord `json:"undo"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	inline := 0
	for _, r := range st.Undo {
		inline += len(r.Before.Inline)
	}
	if inline > inlineTotal {
		t.Errorf("state.json keeps %d bytes of texts before inline, over %d", inline, inlineTotal)
	}
	if packs := blobFiles(t, f.e.StateDir()); len(packs) == 0 || len(packs) > files/2 {
		t.Errorf("packs after %d small applies: %v", files, packs)
	}
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	p := f.e.Attach(nil)
	for range names {
		if _, err := f.e.Undo(WithPeer(ctx, p), ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		if got := f.read(n); got != orig[n] {
			t.Errorf("undo left %s not as it was", n)
		}
	}
}

func filepathName(i int) string { return "f" + string(rune('a'+i)) + ".txt" }

// TestRestartSettlesAnUndoCutShort: the undo of a patch of two files,
// whose disk commit keeps its journal in the state file (Txn, as an
// undo's), cut short at each point where the files can be found: after
// its write-ahead save with nothing renamed; after its first rename; after
// every rename, before the save that records the undo (the files were
// restored, and the changes listed as stale, a second undo refused); and
// after its first rename with the other temp file lost (a system crash
// that kept no entry of it: what smith wrote is not journalled, so that
// file cannot be put back, and each change says what its file holds).
// The next start leaves no temp file and no journal, and the changes as
// the files say: undone (and applied again by ApplyChanges) or applied
// (and undone by Undo).
func TestRestartSettlesAnUndoCutShort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		restored []bool // each file was renamed over (holds its text before)
		temps    bool   // the temp files not renamed are there
		want     []bool // each file must end restored, its change undone
	}{
		{"journal saved, nothing renamed", []bool{false, false}, true, []bool{false, false}},
		{"one file renamed", []bool{true, false}, true, []bool{true, true}},
		{"every file renamed, the undo not recorded", []bool{true, true}, false, []bool{true, true}},
		{"one file renamed, the other's temp file lost", []bool{true, false}, false, []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, names, before, after, ids, statePath := appliedPair(t)
			ctx := context.Background()
			// The state file as the undo's write-ahead save left it: the
			// apply recorded, with the undo's journal.
			st := readStateJSON(t, statePath)
			realWS, err := filepath.EvalSymlinks(f.ws)
			if err != nil {
				t.Fatal(err)
			}
			var entries, seqs []any
			for i, x := range st["undo"].([]any) {
				r := x.(map[string]any)
				if r["state"] != undoDone || r["rel"] != filepath.FromSlash(names[i]) {
					t.Fatalf("undo record %d: %v", i, r)
				}
				n := names[i]
				seqs = append(seqs, r["seq"])
				entries = append(entries, map[string]any{
					"path": n, "temp": tempOf(n), "existed": true, "mode": 0o644,
					"before": diffapply.Hash([]byte(after[n])), "after": diffapply.Hash([]byte(before[n])),
				})
			}
			st["txn"] = map[string]any{"root": realWS, "entries": entries, "undo": seqs, "action": "undo"}
			writeStateJSON(t, statePath, st)
			for i, n := range names {
				if tc.restored[i] {
					f.write(n, before[n])
					continue
				}
				if tc.temps {
					f.write(tempOf(n), before[n])
				}
			}

			f.e = f.open()
			p := f.e.Attach(nil)
			for i, n := range names {
				want, status := after[n], StatusApplied
				if tc.want[i] {
					want, status = before[n], StatusUndone
				}
				if got := f.read(n); got != want {
					t.Errorf("%s after the restart holds %q, want %q", n, got, want)
				}
				if _, err := os.Stat(f.path(tempOf(n))); !os.IsNotExist(err) {
					t.Errorf("the temp file of %s is left", n)
				}
				c, err := f.e.Change(ids[i])
				if err != nil {
					t.Fatal(err)
				}
				if c.Status != status {
					t.Errorf("change %s (%s) is %s after the restart, want %s", ids[i], n, c.Status, status)
				}
			}
			if b, _ := os.ReadFile(statePath); strings.Contains(string(b), `"txn"`) {
				t.Errorf("the journal is left in the state file after the restart")
			}
			// What is left to do can be done.
			var applied []string
			for i := range names {
				if !tc.want[i] {
					applied = append(applied, ids[i])
				}
			}
			for _, id := range applied {
				if _, err := f.e.Undo(WithPeer(ctx, p), id); err != nil {
					t.Fatalf("undo of %s after the restart: %v", id, err)
				}
			}
			for _, n := range names {
				if got := f.read(n); got != before[n] {
					t.Errorf("undone, %s holds %q", n, got)
				}
			}
			if _, err := f.e.ApplyChanges(WithPeer(ctx, p), ids); err != nil {
				t.Fatalf("applying again after the restart: %v", err)
			}
			for _, n := range names {
				if got := f.read(n); got != after[n] {
					t.Errorf("applied again, %s holds %q", n, got)
				}
			}
		})
	}
}

// appliedPair applies a patch of two files (a.txt, sub/b.txt) with the
// engine of a new fixture and closes it, for the restart tests to rewind:
// the fixture, the files, their texts before and after, the changes' ids
// and the state file's path.
func appliedPair(t *testing.T) (f *fixture, names []string, before, after map[string]string, ids []string, statePath string) {
	t.Helper()
	names = []string{"a.txt", "sub/b.txt"}
	before = map[string]string{"a.txt": "a one\na two\n", "sub/b.txt": "b one\nb two\n"}
	after = map[string]string{"a.txt": "a one\na TWO\n", "sub/b.txt": "b ONE\nb two\n"}
	f = newFixture(t, fixtureOpts{protocol: "v0", files: before, mutate: func(c *Config) { c.NoWatch = true }})
	var chs []protocol.Change
	for _, n := range names {
		chs = append(chs, protocol.Change{Path: n, Kind: protocol.ChangeModify, Diff: unifiedDiff(n, []byte(before[n]), []byte(after[n]))})
	}
	ids, err := f.e.ApplyPatchIDs(context.Background(), "", chs)
	if err != nil {
		t.Fatal(err)
	}
	statePath = filepath.Join(f.e.StateDir(), "state.json")
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	return f, names, before, after, ids, statePath
}

// TestRestartSettlesAnUndoThatRemovesAFile: the undo of a patch that
// changed a.txt and created new.txt removes new.txt (no temp file, no
// rename). Its write-ahead record cut after new.txt was removed and before
// a.txt's rename is rolled forward: both files restored, both changes
// undone; with a.txt's temp file lost too, new.txt stays removed (its
// change undone) and a.txt as applied (its change applied, and undone by
// a second Undo). Never a change that says the opposite of its file.
func TestRestartSettlesAnUndoThatRemovesAFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		temp     bool // a.txt's temp file is there
		aRestore bool // a.txt must end restored, its change undone
	}{
		{"new.txt removed, a.txt's temp file there", true, true},
		{"new.txt removed, a.txt's temp file lost", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const aBefore, aAfter, created = "a one\na two\n", "a one\na TWO\n", "created\n"
			f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"a.txt": aBefore}, mutate: func(c *Config) { c.NoWatch = true }})
			ctx := context.Background()
			ids, err := f.e.ApplyPatchIDs(ctx, "", []protocol.Change{
				{Path: "a.txt", Kind: protocol.ChangeModify, Diff: unifiedDiff("a.txt", []byte(aBefore), []byte(aAfter))},
				{Path: "new.txt", Kind: protocol.ChangeCreate, Content: created, HasContent: true},
			})
			if err != nil {
				t.Fatal(err)
			}
			statePath := filepath.Join(f.e.StateDir(), "state.json")
			if err := f.e.Close(); err != nil {
				t.Fatal(err)
			}
			st := readStateJSON(t, statePath)
			realWS, err := filepath.EvalSymlinks(f.ws)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []any
			for _, x := range st["undo"].([]any) {
				seqs = append(seqs, x.(map[string]any)["seq"])
			}
			if len(seqs) != 2 {
				t.Fatalf("the apply left %d undo records, want 2", len(seqs))
			}
			st["txn"] = map[string]any{"root": realWS, "undo": seqs, "action": "undo", "entries": []any{
				map[string]any{"path": "a.txt", "temp": tempOf("a.txt"), "existed": true, "mode": 0o644,
					"before": diffapply.Hash([]byte(aAfter)), "after": diffapply.Hash([]byte(aBefore))},
				map[string]any{"path": "new.txt", "existed": true, "mode": 0o644,
					"before": diffapply.Hash([]byte(created)), "after": diffapply.HashAbsent},
			}}
			writeStateJSON(t, statePath, st)
			if err := os.Remove(f.path("new.txt")); err != nil {
				t.Fatal(err)
			}
			if tc.temp {
				f.write(tempOf("a.txt"), aBefore)
			}

			f.e = f.open()
			p := f.e.Attach(nil)
			wantA, wantStatus := aAfter, StatusApplied
			if tc.aRestore {
				wantA, wantStatus = aBefore, StatusUndone
			}
			if got := f.read("a.txt"); got != wantA {
				t.Errorf("a.txt after the restart holds %q, want %q", got, wantA)
			}
			if _, err := os.Stat(f.path("new.txt")); !os.IsNotExist(err) {
				t.Errorf("new.txt is back after the restart (%v)", err)
			}
			if _, err := os.Stat(f.path(tempOf("a.txt"))); !os.IsNotExist(err) {
				t.Errorf("the temp file of a.txt is left")
			}
			for i, want := range []string{wantStatus, StatusUndone} {
				c, err := f.e.Change(ids[i])
				if err != nil {
					t.Fatal(err)
				}
				if c.Status != want {
					t.Errorf("change %s (%s) is %s after the restart, want %s", ids[i], c.Path, c.Status, want)
				}
			}
			if !tc.aRestore {
				if _, err := f.e.Undo(WithPeer(ctx, p), ids[0]); err != nil {
					t.Fatalf("undo of a.txt after the restart: %v", err)
				}
				if got := f.read("a.txt"); got != aBefore {
					t.Errorf("undone after the restart, a.txt holds %q", got)
				}
			}
			if _, err := f.e.ApplyChanges(WithPeer(ctx, p), ids); err != nil {
				t.Fatalf("applying again after the restart: %v", err)
			}
			if f.read("a.txt") != aAfter || f.read("new.txt") != created {
				t.Errorf("applied again, a.txt %q, new.txt %q", f.read("a.txt"), f.read("new.txt"))
			}
		})
	}
}

// readStateJSON reads the state file at path as plain JSON, for a test to
// rewind it to a moment of a cut.
func readStateJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// writeStateJSON writes st (readStateJSON's, rewound) to the state file
// at path.
func writeStateJSON(t *testing.T, path string, st map[string]any) {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
