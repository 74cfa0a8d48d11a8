//go:build unix

package diffapply

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// loggedCommit runs CommitLogged in root with the test hook; the journal
// it logs is kept as JSON in *logged, as a caller would store it.
func loggedCommit(t *testing.T, root string, writes []Write, logged *[]byte, hook func(string) error) error {
	t.Helper()
	ws, err := OpenWorkspace(root)
	if err != nil {
		return err
	}
	defer ws.Close()
	return ws.run(context.Background(), writes, "", hook, func(j *Journal) error {
		b, err := json.Marshal(j)
		*logged = b
		return err
	})
}

// settleLogged runs Settle on the journal a killed loggedCommit kept,
// with the bytes before from the fixture.
func settleLogged(t *testing.T, root string, logged []byte, before map[string]string, hook func(string) error) (bool, error) {
	t.Helper()
	var j Journal
	must(t, json.Unmarshal(logged, &j))
	ws, err := OpenWorkspace(root)
	must(t, err)
	defer ws.Close()
	return ws.settle(&j, func(i int) ([]byte, error) {
		b, ok := before[j.Entries[i].Path]
		if !ok {
			return nil, errors.New("no bytes before")
		}
		return []byte(b), nil
	}, hook)
}

// noTemps fails the test if a temp file of a commit is left in root.
func noTemps(t *testing.T, root, what string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".smith-") {
			t.Errorf("%s: temp file %s left", what, p)
		}
		return nil
	})
}

// TestCommitLoggedNoJournalDir: a commit whose caller keeps the journal
// writes every file and makes nothing in any journal folder; its journal
// names each target with the hashes of its two states and its temp file.
func TestCommitLoggedNoJournalDir(t *testing.T) {
	root := t.TempDir()
	writes, _, after := commitFixture(t, root)
	var logged []byte
	must(t, loggedCommit(t, root, writes, &logged, nil))
	assertFiles(t, root, after)
	noTemps(t, root, "after the commit")
	var j Journal
	must(t, json.Unmarshal(logged, &j))
	if len(j.Entries) != len(writes) {
		t.Fatalf("journal has %d entries, want %d: %s", len(j.Entries), len(writes), logged)
	}
	if e := j.Entries[0]; e.Path != "a.txt" || e.Before != Hash([]byte("a before\n")) || e.After != Hash([]byte("a after\n")) || e.Temp == "" {
		t.Errorf("entry of a.txt = %+v", e)
	}
	if e := j.Entries[3]; e.Path != "gone.txt" || e.After != HashAbsent || e.Temp != "" {
		t.Errorf("entry of gone.txt = %+v", e)
	}
}

// TestCommitLoggedLogFails: a journal that cannot be made durable ends
// the commit with nothing written and nothing created.
func TestCommitLoggedLogFails(t *testing.T) {
	root := t.TempDir()
	writes, before, _ := commitFixture(t, root)
	ws, err := OpenWorkspace(root)
	must(t, err)
	defer ws.Close()
	injected := errors.New("disk full")
	if err := ws.CommitLogged(context.Background(), writes, func(*Journal) error { return injected }); !errors.Is(err, injected) {
		t.Fatalf("CommitLogged = %v, want the log's error", err)
	}
	if got := treeState(t, root, before, nil); got != "before" {
		t.Errorf("tree %s", got)
	}
}

// TestCommitLoggedKilledThenSettled kills a logged commit at each of its
// steps, then Settle at each of its own, then settles again: before the
// journal was logged nothing exists to settle and the tree is before;
// after it, the tree ends all after when a rename had happened (every
// temp file was complete) and all before otherwise, with no temp file
// and no directory made for one; a further Settle changes nothing.
func TestCommitLoggedKilledThenSettled(t *testing.T) { testCommitLoggedKilledThenSettled(t, nil) }

// TestCommitLoggedKilledThenSettledExpectGiven is
// TestCommitLoggedKilledThenSettled with Write.Expect set, as smith's
// engine commits the files it holds.
func TestCommitLoggedKilledThenSettledExpectGiven(t *testing.T) {
	testCommitLoggedKilledThenSettled(t, byExpect)
}

func testCommitLoggedKilledThenSettled(t *testing.T, given givenBy) {
	pairs := 0
	defer func() { t.Logf("%d (commit kill, settle kill) pairs", pairs) }()
	for n := 1; ; n++ {
		root := t.TempDir()
		writes, before, after := commitFixture(t, root)
		if given != nil {
			writes = given(writes, before)
		}
		var logged []byte
		steps, killed, _ := runKilledAt(n, true, func(hook func(string) error) error {
			return loggedCommit(t, root, writes, &logged, hook)
		})
		if !killed {
			if n < 4 {
				t.Fatalf("only %d steps: %q", n-1, steps)
			}
			break
		}
		if logged == nil {
			if got := treeState(t, root, before, after); got != "before" {
				t.Errorf("killed at %d (%s) before the journal: tree %s", n, steps[n-1], got)
			}
			noTemps(t, root, "killed before the journal")
			continue
		}
		want := "before"
		if slices.ContainsFunc(steps[:n-1], func(s string) bool { return strings.HasPrefix(s, "rename ") || strings.HasPrefix(s, "remove ") }) {
			want = "after"
		}
		for m := 1; ; m++ {
			r2 := t.TempDir()
			copyTree(t, root, r2)
			j2 := strings.ReplaceAll(string(logged), jsonString(t, realPath(t, root)), jsonString(t, realPath(t, r2)))
			pairs++
			rsteps, rkilled, _ := runKilledAt(m, true, func(hook func(string) error) error {
				_, err := settleLogged(t, r2, []byte(j2), before, hook)
				return err
			})
			written, err := settleLogged(t, r2, []byte(j2), before, nil)
			if err != nil {
				t.Errorf("commit killed at %d (%s), settle at %d: %v", n, steps[n-1], m, err)
			}
			if got := treeState(t, r2, before, after); got != want {
				t.Errorf("commit killed at %d (%s), settle killed at %d (%v): tree %s, want %s", n, steps[n-1], m, rsteps, got, want)
			}
			if written != (want == "after") {
				t.Errorf("commit killed at %d (%s): Settle says written = %v, tree %s", n, steps[n-1], written, want)
			}
			noTemps(t, r2, "settled")
			if w2, err := settleLogged(t, r2, []byte(j2), before, nil); err != nil || w2 != written || treeState(t, r2, before, after) != want {
				t.Errorf("commit killed at %d: a third Settle = %v, %v; tree %s", n, w2, err, treeState(t, r2, before, after))
			}
			if !rkilled {
				break
			}
		}
	}
}

// TestSettleRollsBackWhenATempIsLost: killed after its first rename, a
// commit whose other temp file is then lost (a crash of the system that
// kept no entry of it) cannot be finished: Settle puts back the file it
// had renamed, from the bytes before, and the tree is all before.
func TestSettleRollsBackWhenATempIsLost(t *testing.T) {
	root := t.TempDir()
	writes, before, after := commitFixture(t, root)
	logged := killedAtStep(t, root, writes, "rename run.sh")
	var j Journal
	must(t, json.Unmarshal(logged, &j))
	must(t, os.Remove(filepath.Join(root, filepath.FromSlash(j.Entries[1].Temp))))
	written, err := settleLogged(t, root, logged, before, nil)
	if err == nil || written {
		t.Errorf("Settle = %v, %v; want an error saying run.sh was not written, and written false", written, err)
	}
	if got := treeState(t, root, before, after); got != "before" {
		t.Errorf("tree %s, want before", got)
	}
	noTemps(t, root, "rolled back")
}

// TestSettleRefusesAnotherWorkspace: a journal that records another
// workspace is not acted on.
func TestSettleRefusesAnotherWorkspace(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	writes, before, _ := commitFixture(t, root)
	logged := killedAtStep(t, root, writes, "rename run.sh")
	commitFixture(t, other)
	if _, err := settleLogged(t, other, logged, before, nil); err == nil {
		t.Error("Settle of another workspace's journal succeeded")
	}
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	must(t, err)
	return r
}

func jsonString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	must(t, err)
	return string(b)
}

// TestSettleRenamesNoTempCutShort: a logged commit cut short before its
// first rename (killed while it wrote its temp files: run.sh's is left
// half written), whose first target was then given its new text by
// someone else (the user wrote the same text, or restored it from
// version control), renamed nothing: Settle must not take that target
// for a sign that the temp files were complete and rename run.sh's half
// temp file over run.sh. The temps go, run.sh keeps its bytes before, and
// a.txt keeps what was written there.
func TestSettleRenamesNoTempCutShort(t *testing.T) {
	root := t.TempDir()
	writes, before, _ := commitFixture(t, root)
	logged := killedAtStep(t, root, writes, "rename a.txt")
	var j Journal
	must(t, json.Unmarshal(logged, &j))
	// What a kill in the middle of writing run.sh's temp file leaves.
	must(t, os.Truncate(filepath.Join(root, filepath.FromSlash(j.Entries[1].Temp)), 3))
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a after\n"), 0o644))
	written, _ := settleLogged(t, root, logged, before, nil)
	if written {
		t.Error("Settle says the commit's writes are in place; none was renamed")
	}
	got := snapshot(t, root)
	if got["run.sh"] != before["run.sh"] {
		t.Errorf("run.sh holds %q after Settle, want its bytes before %q", got["run.sh"], before["run.sh"])
	}
	if got["a.txt"] != "a after\n" || got["gone.txt"] != before["gone.txt"] {
		t.Errorf("a.txt %q, gone.txt %q: want what was written there and the bytes before", got["a.txt"], got["gone.txt"])
	}
	if _, ok := got["new/dir/b.txt"]; ok {
		t.Error("new/dir/b.txt created by a commit that renamed nothing")
	}
	noTemps(t, root, "settled")
}

// TestSettleRefusesATempNotItsNewText: a commit whose deletion is found
// done (the file to delete gone, by someone else, while its temp files
// were being written) is taken as begun; a temp file that does not hold
// its target's new text is not renamed over the target, and the files end
// as before.
func TestSettleRefusesATempNotItsNewText(t *testing.T) {
	root := t.TempDir()
	writes, before, after := commitFixture(t, root)
	logged := killedAtStep(t, root, writes, "rename a.txt")
	var j Journal
	must(t, json.Unmarshal(logged, &j))
	must(t, os.Truncate(filepath.Join(root, filepath.FromSlash(j.Entries[1].Temp)), 3))
	must(t, os.Remove(filepath.Join(root, "gone.txt")))
	written, err := settleLogged(t, root, logged, before, nil)
	if written || err == nil {
		t.Errorf("Settle = %v, %v; want an error saying run.sh's temp file is not its new text", written, err)
	}
	if got := snapshot(t, root); got["run.sh"] != before["run.sh"] {
		t.Errorf("run.sh holds %q after Settle (tree %s), want its bytes before", got["run.sh"], treeState(t, root, before, after))
	}
	noTemps(t, root, "settled")
}

// TestSettleKeepsACommitDoneWhenAFileIsEditedSince: a logged commit cut
// short after its last rename (before its caller recorded it), one of
// whose files the user then edited, was done: every temp file is gone.
// Settle leaves the edited file alone and reports it, and does not put
// the other files back to their bytes before, which would leave the
// user's edit (made on the commit's text) beside files without the
// commit.
func TestSettleKeepsACommitDoneWhenAFileIsEditedSince(t *testing.T) {
	root := t.TempDir()
	writes, before, after := commitFixture(t, root)
	var logged []byte
	must(t, loggedCommit(t, root, writes, &logged, nil))
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a after, edited\n"), 0o644))
	written, err := settleLogged(t, root, logged, before, nil)
	if err == nil || !strings.Contains(err.Error(), "a.txt") {
		t.Errorf("Settle's error = %v, want a.txt named as changed since", err)
	}
	if !written {
		t.Error("Settle says the commit's writes are not in place")
	}
	want := maps.Clone(after)
	want["a.txt"] = "a after, edited\n"
	if got := snapshot(t, root); !maps.Equal(got, want) {
		t.Errorf("tree after Settle %v, want %v", got, want)
	}
	noTemps(t, root, "settled")
}

// TestSettleKilledWithAFileEditedBeforeItsRename: a logged commit cut
// short after its first rename, whose second file (not yet renamed over:
// its temp file is there) the user then edited, is rolled back; a Settle
// killed at any of its steps and run again still ends all before, with
// the user's edit, never with the other files written beside the edit.
func TestSettleKilledWithAFileEditedBeforeItsRename(t *testing.T) {
	root := t.TempDir()
	writes, before, _ := commitFixture(t, root)
	logged := killedAtStep(t, root, writes, "rename run.sh")
	must(t, os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\nedited\n"), 0o755))
	want := maps.Clone(before)
	want["run.sh"] = "#!/bin/sh\nedited\n"
	for m := 1; ; m++ {
		r2 := t.TempDir()
		copyTree(t, root, r2)
		j2 := strings.ReplaceAll(string(logged), jsonString(t, realPath(t, root)), jsonString(t, realPath(t, r2)))
		steps, killed, _ := runKilledAt(m, true, func(hook func(string) error) error {
			_, err := settleLogged(t, r2, []byte(j2), before, hook)
			return err
		})
		written, err := settleLogged(t, r2, []byte(j2), before, nil)
		if written {
			t.Errorf("settle killed at %d (%v), then again: written (%v); want not written", m, steps, err)
		}
		if got := snapshot(t, r2); !maps.Equal(got, want) {
			t.Errorf("settle killed at %d (%v), then again: tree %v, want %v", m, steps, got, want)
		}
		noTemps(t, r2, "settled")
		if !killed {
			break
		}
	}
}

// killedAtStep runs a logged commit of writes in root until the step
// named step, where it is killed, and returns the journal it logged.
func killedAtStep(t *testing.T, root string, writes []Write, step string) []byte {
	t.Helper()
	var logged []byte
	_, killed, _ := runKilledAt(0, true, func(func(string) error) error {
		return loggedCommit(t, root, writes, &logged, func(s string) error {
			if s == step {
				panic(errKilled{})
			}
			return nil
		})
	})
	if !killed {
		t.Fatalf("the commit was not killed at %q", step)
	}
	return logged
}
