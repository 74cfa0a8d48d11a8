//go:build unix

package diffapply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// commitFixture is a workspace with two existing files and the writes that
// change one, create one in a new directory, and delete the other.
func commitFixture(t *testing.T, root string) (writes []Write, before, after map[string]string) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a before\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "gone.txt"), []byte("gone before\n"), 0o600))
	writes = []Write{
		{Path: "a.txt", Content: []byte("a after\n"), ExpectHash: Hash([]byte("a before\n"))},
		{Path: "run.sh", Content: []byte("#!/bin/sh\necho hi\n")},
		{Path: "new/dir/b.txt", Content: []byte("b after\n"), ExpectHash: HashAbsent},
		{Path: "gone.txt", ExpectHash: Hash([]byte("gone before\n"))},
	}
	before = map[string]string{"a.txt": "a before\n", "run.sh": "#!/bin/sh\n", "gone.txt": "gone before\n"}
	after = map[string]string{"a.txt": "a after\n", "run.sh": "#!/bin/sh\necho hi\n", "new/dir/b.txt": "b after\n"}
	return writes, before, after
}

func TestCommitWritesAllAndKeepsModes(t *testing.T) {
	root, journal := t.TempDir(), t.TempDir()
	writes, _, after := commitFixture(t, root)
	must(t, Commit(context.Background(), root, writes, journal))
	assertFiles(t, root, after)
	fi, err := os.Stat(filepath.Join(root, "run.sh"))
	must(t, err)
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode %o, want 755 kept", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(journal); len(ents) != 0 {
		t.Errorf("journal not cleaned: %v", ents)
	}
}

// commitWithHook is Commit with the test hook, called before every change
// the commit makes to the file system.
func commitWithHook(root string, writes []Write, journal string, hook func(string) error) error {
	ws, err := OpenWorkspace(root)
	if err != nil {
		return err
	}
	defer ws.Close()
	return ws.commit(context.Background(), writes, journal, hook)
}

// errKilled is what a hook panics with to stop a commit or a recovery
// right there, as a kill -9 would (nothing after it runs).
type errKilled struct{}

// runKilledAt runs f with a hook that fails (fail) or kills (panics) at
// step n (1-based) and reports the steps seen and whether it was killed.
func runKilledAt(n int, kill bool, f func(hook func(string) error) error) (steps []string, killed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(errKilled); !ok {
				panic(r)
			}
			killed = true
		}
	}()
	err = f(func(step string) error {
		steps = append(steps, step)
		if len(steps) == n {
			if kill {
				panic(errKilled{})
			}
			return fmt.Errorf("injected failure at step %d (%s)", n, step)
		}
		return nil
	})
	return steps, false, err
}

// treeState says whether root is exactly before or exactly after (no temp
// file, no stray directory), or describes the mix.
func treeState(t *testing.T, root string, before, after map[string]string) string {
	t.Helper()
	got := snapshot(t, root)
	switch {
	case maps.Equal(got, before):
		if _, err := os.Stat(filepath.Join(root, "new")); err == nil {
			return "before, with the new directory left"
		}
		return "before"
	case maps.Equal(got, after):
		return "after"
	}
	return fmt.Sprintf("mixed: %v", got)
}

// TestCommitFailsAtEveryStep injects a failure at each change a commit
// makes to the file system (manifest writes, renames, removals, the
// journal's removal): the tree is all before or all after, and one
// Recover leaves it so with an empty journal.
func TestCommitFailsAtEveryStep(t *testing.T) { testCommitFailsAtEveryStep(t, nil) }

// TestCommitFailsAtEveryStepBeforeGiven is TestCommitFailsAtEveryStep with Write.Before set: the commit
// holds no pre-image and takes it back from the caller to roll back.
func TestCommitFailsAtEveryStepBeforeGiven(t *testing.T) { testCommitFailsAtEveryStep(t, byBefore) }

// TestCommitFailsAtEveryStepContentGiven is TestCommitFailsAtEveryStep with
// Write.Before and Write.ContentFrom set, as smith's undo writes: the
// commit holds neither the bytes before nor the new ones.
func TestCommitFailsAtEveryStepContentGiven(t *testing.T) {
	testCommitFailsAtEveryStep(t, byBeforeAndContent)
}

// TestCommitFailsAtEveryStepExpectGiven is TestCommitFailsAtEveryStep with Write.Expect set: the
// commit takes the caller's bytes instead of reading the targets first.
func TestCommitFailsAtEveryStepExpectGiven(t *testing.T) { testCommitFailsAtEveryStep(t, byExpect) }

func testCommitFailsAtEveryStep(t *testing.T, given givenBy) {
	for n := 1; ; n++ {
		root, journal := t.TempDir(), t.TempDir()
		writes, before, after := commitFixture(t, root)
		if given != nil {
			writes = given(writes, before)
		}
		steps, _, err := runKilledAt(n, false, func(hook func(string) error) error {
			return commitWithHook(root, writes, journal, hook)
		})
		if len(steps) < n {
			if err != nil {
				t.Fatalf("without failure: %v", err)
			}
			if n < 5 {
				t.Fatalf("only %d steps: %q", len(steps), steps)
			}
			break
		}
		if err == nil {
			t.Fatalf("step %d (%s): the injected failure was not reported", n, steps[n-1])
		}
		state := treeState(t, root, before, after)
		if state != "before" && state != "after" {
			t.Errorf("step %d (%s): tree %s after the failed commit (%v)", n, steps[n-1], state, err)
		}
		if _, err := Recover(root, journal); err != nil {
			t.Errorf("step %d (%s): Recover: %v", n, steps[n-1], err)
		}
		if now := treeState(t, root, before, after); now != state {
			t.Errorf("step %d (%s): Recover changed the tree from %s to %s", n, steps[n-1], state, now)
		}
		if ents, _ := os.ReadDir(journal); len(ents) != 0 {
			t.Errorf("step %d (%s): journal left: %v", n, steps[n-1], ents)
		}
	}
}

// TestRecoveryConvergesAfterKills kills a commit at each of its steps,
// then kills the recovery at each of its steps, then recovers again: the
// tree ends all before (killed before the commit record) or all after
// (killed after it), with no temp file and an empty journal, and a
// further Recover has nothing to do.
func TestRecoveryConvergesAfterKills(t *testing.T) {
	pairs := 0
	defer func() { t.Logf("%d (commit kill, recovery kill) pairs", pairs) }()
	for n := 1; ; n++ {
		root, journal := t.TempDir(), t.TempDir()
		writes, before, after := commitFixture(t, root)
		steps, killed, _ := runKilledAt(n, true, func(hook func(string) error) error {
			return commitWithHook(root, writes, journal, hook)
		})
		if !killed {
			break
		}
		committed := slices.Contains(steps[:n-1], "write the committed manifest")
		want := "before"
		if committed {
			want = "after"
		}
		for m := 1; ; m++ {
			// Each recovery kill starts again from the same killed commit.
			r2, j2 := t.TempDir(), t.TempDir()
			copyTree(t, root, r2)
			copyTree(t, journal, j2)
			fixRoot(t, j2, root, r2)
			pairs++
			rsteps, rkilled, _ := runKilledAt(m, true, func(hook func(string) error) error {
				_, err := recoverJournal(r2, j2, hook)
				return err
			})
			if _, err := Recover(r2, j2); err != nil {
				t.Errorf("commit killed at %d (%s), recovery at %d: %v", n, steps[n-1], m, err)
			}
			if got := treeState(t, r2, before, after); got != want {
				t.Errorf("commit killed at %d (%s), recovery killed at %d (%v): tree %s, want %s", n, steps[n-1], m, rsteps, got, want)
			}
			if ents, _ := os.ReadDir(j2); len(ents) != 0 {
				t.Errorf("commit killed at %d, recovery at %d: journal left: %v", n, m, ents)
			}
			if k, err := Recover(r2, j2); k != 0 || err != nil {
				t.Errorf("a third Recover = %d, %v; want nothing to do", k, err)
			}
			if !rkilled {
				break
			}
		}
	}
}

// TestAbortKilledRollsBack: a commit whose third rename fails undoes the
// two before it; killed at each step of that undo, recovery finishes it:
// the tree is all before.
func TestAbortKilledRollsBack(t *testing.T) { testAbortKilledRollsBack(t, nil) }

// TestAbortKilledRollsBackBeforeGiven is TestAbortKilledRollsBack with Write.Before set: the commit
// holds no pre-image and takes it back from the caller to roll back.
func TestAbortKilledRollsBackBeforeGiven(t *testing.T) { testAbortKilledRollsBack(t, byBefore) }

// TestAbortKilledRollsBackContentGiven is TestAbortKilledRollsBack with
// Write.Before and Write.ContentFrom set.
func TestAbortKilledRollsBackContentGiven(t *testing.T) {
	testAbortKilledRollsBack(t, byBeforeAndContent)
}

// TestAbortKilledRollsBackExpectGiven is TestAbortKilledRollsBack with Write.Expect set: the
// commit takes the caller's bytes instead of reading the targets first.
func TestAbortKilledRollsBackExpectGiven(t *testing.T) { testAbortKilledRollsBack(t, byExpect) }

func testAbortKilledRollsBack(t *testing.T, given givenBy) {
	for m := 1; ; m++ {
		root, journal := t.TempDir(), t.TempDir()
		writes, before, after := commitFixture(t, root)
		if given != nil {
			writes = given(writes, before)
		}
		failed := false
		var steps []string
		killed := func() (k bool) {
			defer func() {
				if r := recover(); r != nil {
					k = true
				}
			}()
			commitWithHook(root, writes, journal, func(step string) error {
				if step == "rename new/dir/b.txt" && !failed {
					failed = true
					return errors.New("injected")
				}
				if failed {
					steps = append(steps, step)
					if len(steps) == m {
						panic(errKilled{})
					}
				}
				return nil
			})
			return false
		}()
		if _, err := Recover(root, journal); err != nil {
			t.Errorf("undo killed at %d (%v): Recover: %v", m, steps, err)
		}
		want := "before"
		if m == 1 {
			// Killed before the aborting record: still committed, so
			// recovery rolls forward.
			want = "after"
		}
		if got := treeState(t, root, before, after); got != want {
			t.Errorf("undo killed at %d (%v): tree %s", m, steps, got)
		}
		if ents, _ := os.ReadDir(journal); len(ents) != 0 {
			t.Errorf("undo killed at %d: journal left: %v", m, ents)
		}
		if !killed {
			if m < 3 {
				t.Fatalf("the undo took only %d steps: %v", m, steps)
			}
			break
		}
	}
}

// TestCommitLostUpdate: another program writes a target between smith's
// check and its rename (from the hook: after a.txt was verified, before
// its rename, run.sh is written). The write must survive, a.txt (renamed
// before) is restored, and the error is a StaleError naming run.sh.
func TestCommitLostUpdate(t *testing.T) { testCommitLostUpdate(t, nil) }

// TestCommitLostUpdateBeforeGiven is TestCommitLostUpdate with Write.Before set: the commit
// holds no pre-image and takes it back from the caller to roll back.
func TestCommitLostUpdateBeforeGiven(t *testing.T) { testCommitLostUpdate(t, byBefore) }

// TestCommitLostUpdateContentGiven is TestCommitLostUpdate with
// Write.Before and Write.ContentFrom set.
func TestCommitLostUpdateContentGiven(t *testing.T) { testCommitLostUpdate(t, byBeforeAndContent) }

// TestCommitLostUpdateExpectGiven is TestCommitLostUpdate with Write.Expect set: the
// commit takes the caller's bytes instead of reading the targets first.
func TestCommitLostUpdateExpectGiven(t *testing.T) { testCommitLostUpdate(t, byExpect) }

func testCommitLostUpdate(t *testing.T, given givenBy) {
	for _, theirs := range []string{
		"#!/bin/sh\necho appended by another program\n",
		"#!/bin/zs\n", // same size, likely within the same mtime tick: only the hash tells
	} {
		root, journal := t.TempDir(), t.TempDir()
		writes, before, _ := commitFixture(t, root)
		if given != nil {
			writes = given(writes, before)
		}
		err := commitWithHook(root, writes, journal, func(step string) error {
			if step == "rename a.txt" {
				must(t, os.WriteFile(filepath.Join(root, "run.sh"), []byte(theirs), 0o755))
			}
			return nil
		})
		var se *StaleError
		if !errors.As(err, &se) || se.Path != "run.sh" || !se.During || !errors.Is(err, ErrStale) {
			t.Fatalf("err = %v, want a StaleError for run.sh while writing", err)
		}
		want := maps.Clone(before)
		want["run.sh"] = theirs
		assertFiles(t, root, want)
		if ents, _ := os.ReadDir(journal); len(ents) != 0 {
			t.Errorf("journal left: %v", ents)
		}
	}
}

func TestCommitRefusesStaleAndUnsafe(t *testing.T) {
	root := t.TempDir()
	writes, before, _ := commitFixture(t, root)
	stale := append([]Write(nil), writes...)
	stale[0].ExpectHash = Hash([]byte("something else\n"))
	err := Commit(context.Background(), root, stale, "")
	var se *StaleError
	if !errors.As(err, &se) || !errors.Is(err, ErrStale) || se.Path != "a.txt" {
		t.Fatalf("err = %v, want a StaleError for a.txt", err)
	}
	assertFiles(t, root, before)

	exists := []Write{{Path: "a.txt", Content: []byte("x"), ExpectHash: HashAbsent}}
	if err := Commit(context.Background(), root, exists, ""); !errors.Is(err, ErrStale) {
		t.Errorf("HashAbsent on an existing file: err = %v", err)
	}
	for _, p := range []string{"../x", "/etc/passwd", ".git/config", "a\x00b"} {
		err := Commit(context.Background(), root, []Write{{Path: p, Content: []byte("x")}}, "")
		if !errors.Is(err, ErrUnsafePath) {
			t.Errorf("Commit(%q): err = %v, want ErrUnsafePath", p, err)
		}
	}
	assertFiles(t, root, before)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Commit(ctx, root, writes, t.TempDir()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
	assertFiles(t, root, before)
}

func TestRecoverStagingJournal(t *testing.T) {
	root, journal := t.TempDir(), t.TempDir()
	writes, before, _ := commitFixture(t, root)
	// A commit killed while staging: a manifest and temp files, no renames.
	_, killed, _ := runKilledAt(1, true, func(hook func(string) error) error {
		return commitWithHook(root, writes, journal, func(step string) error {
			if step == "write the committed manifest" {
				return hook(step)
			}
			return nil
		})
	})
	if !killed {
		t.Fatal("not killed")
	}
	if len(snapshot(t, root)) == len(before) {
		t.Fatal("no temp file was staged")
	}
	n, err := Recover(root, journal)
	if err != nil || n != 0 {
		t.Fatalf("Recover = %d, %v; want 0 finished", n, err)
	}
	assertFiles(t, root, before)
	if ents, _ := os.ReadDir(journal); len(ents) != 0 {
		t.Errorf("journal left: %v", ents)
	}
}

// TestKill9MidCommit re-runs the test binary as a helper that SIGKILLs
// itself after renaming N of the 4 targets, then recovers and checks that
// every file was, at the kill, entirely before or after, and is after
// once Recover has rolled the committed transaction forward.
func TestKill9MidCommit(t *testing.T) {
	if os.Getenv("DIFFAPPLY_KILL_HELPER") != "" {
		t.Skip("helper mode")
	}
	for n := 0; n < 4; n++ {
		t.Run(fmt.Sprint("killed after rename ", n+1), func(t *testing.T) {
			root, journal := t.TempDir(), t.TempDir()
			_, before, after := commitFixture(t, root)
			cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.v")
			cmd.Env = append(os.Environ(), "DIFFAPPLY_KILL_HELPER="+strconv.Itoa(n), "DIFFAPPLY_ROOT="+root, "DIFFAPPLY_JOURNAL="+journal)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("helper was not killed: %v\n%s", err, out)
			}
			got := snapshot(t, root)
			changed := 0
			for _, name := range []string{"a.txt", "run.sh", "new/dir/b.txt", "gone.txt"} {
				g, ok := got[name]
				b, inBefore := before[name]
				a, inAfter := after[name]
				switch {
				case ok == inBefore && g == b:
				case ok == inAfter && g == a:
					changed++
				default:
					t.Errorf("%s is neither before nor after: %q (exists %v)", name, g, ok)
				}
			}
			if changed != n+1 {
				t.Errorf("%d files changed at the kill, want %d", changed, n+1)
			}
			done, err := Recover(root, journal)
			if err != nil || done != 1 {
				t.Fatalf("Recover = %d, %v; want 1", done, err)
			}
			assertFiles(t, root, after)
		})
	}
}

// TestRecoverLeavesEditedFiles: after a kill, a file the user edited
// before Recover ran is left alone and reported once; the others are
// finished, and the journal, set aside, blocks nothing afterwards.
func TestRecoverLeavesEditedFiles(t *testing.T) {
	if os.Getenv("DIFFAPPLY_KILL_HELPER") != "" {
		t.Skip("helper mode")
	}
	root, journal := t.TempDir(), t.TempDir()
	_, _, after := commitFixture(t, root)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$")
	cmd.Env = append(os.Environ(), "DIFFAPPLY_KILL_HELPER=1", "DIFFAPPLY_ROOT="+root, "DIFFAPPLY_JOURNAL="+journal)
	if err := cmd.Run(); err == nil {
		t.Fatal("helper was not killed")
	}
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("edited by the user\n"), 0o644))
	n, err := Recover(root, journal)
	if err == nil || !strings.Contains(err.Error(), "a.txt changed after the interrupted apply") || !strings.Contains(err.Error(), "set aside") {
		t.Fatalf("Recover = %d, %v; want a.txt reported and the journal set aside", n, err)
	}
	want := maps.Clone(after)
	want["a.txt"] = "edited by the user\n"
	assertFiles(t, root, want)
	ents, _ := os.ReadDir(journal)
	if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), keptPrefix) {
		t.Errorf("the journal should be kept aside for inspection, found %v", ents)
	}
	if n, err := Recover(root, journal); n != 0 || err != nil {
		t.Errorf("a second Recover = %d, %v; the kept journal must not block", n, err)
	}
}

// TestKillHelper is the helper process of TestKill9MidCommit.
func TestKillHelper(t *testing.T) {
	v := os.Getenv("DIFFAPPLY_KILL_HELPER")
	if v == "" {
		t.Skip("only run as TestKill9MidCommit's helper")
	}
	n, _ := strconv.Atoi(v)
	root := os.Getenv("DIFFAPPLY_ROOT")
	writes, _, _ := commitFixture(t, root)
	// commitFixture rewrites the same pre-images; the helper needs its writes.
	renames := 0
	err := commitWithHook(root, writes, os.Getenv("DIFFAPPLY_JOURNAL"), func(step string) error {
		if strings.HasPrefix(step, "rename ") || strings.HasPrefix(step, "remove ") {
			if renames == n+1 {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			renames++
		}
		return nil
	})
	if renames == n+1 {
		// the last rename was the kill point: stop after it
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	t.Fatalf("commit returned %v instead of being killed", err)
}

// assertFiles checks that root holds exactly want (temp files included).
func assertFiles(t *testing.T, root string, want map[string]string) {
	t.Helper()
	got := snapshot(t, root)
	for _, k := range sortedKeys(got) {
		if w, ok := want[k]; !ok {
			t.Errorf("unexpected file %s", k)
		} else if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("missing file %s", k)
		}
	}
}

// TestKill9SingleWrite re-runs the test binary as a helper that commits one
// write (no commit record: its rename is atomic) and SIGKILLs itself just
// before or just after the rename (or removal): the file holds exactly its
// old or its new bytes, and Recover removes the temp file and the journal.
func TestKill9SingleWrite(t *testing.T) {
	if os.Getenv("DIFFAPPLY_SINGLE_HELPER") != "" {
		t.Skip("helper mode")
	}
	for _, tc := range []struct {
		write   string // "modify" or "delete"
		renamed bool
		want    string // "" means gone
	}{
		{"modify", false, "a before\n"},
		{"modify", true, "a after\n"},
		{"delete", false, "a before\n"},
		{"delete", true, ""},
	} {
		t.Run(fmt.Sprintf("%s killed renamed=%v", tc.write, tc.renamed), func(t *testing.T) {
			root, journal := t.TempDir(), t.TempDir()
			must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a before\n"), 0o640))
			cmd := exec.Command(os.Args[0], "-test.run=^TestSingleWriteHelper$")
			cmd.Env = append(os.Environ(), "DIFFAPPLY_SINGLE_HELPER="+tc.write, "DIFFAPPLY_RENAMED="+strconv.FormatBool(tc.renamed),
				"DIFFAPPLY_ROOT="+root, "DIFFAPPLY_JOURNAL="+journal)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("helper was not killed: %v\n%s", err, out)
			}
			if n, err := Recover(root, journal); n != 0 || err != nil {
				t.Errorf("Recover = %d, %v; want nothing finished", n, err)
			}
			got := snapshot(t, root)
			g, ok := got["a.txt"]
			if tc.want == "" && ok || tc.want != "" && g != tc.want {
				t.Errorf("a.txt = %q (exists %v), want %q", g, ok, tc.want)
			}
			if ok {
				fi, err := os.Stat(filepath.Join(root, "a.txt"))
				must(t, err)
				if fi.Mode().Perm() != 0o640 {
					t.Errorf("mode %o, want 640 kept", fi.Mode().Perm())
				}
			}
			for name := range got {
				if name != "a.txt" {
					t.Errorf("left after Recover: %s", name)
				}
			}
			if ents, _ := os.ReadDir(journal); len(ents) != 0 {
				t.Errorf("journal left: %v", ents)
			}
		})
	}
}

// TestSingleWriteHelper is the helper process of TestKill9SingleWrite.
func TestSingleWriteHelper(t *testing.T) {
	op := os.Getenv("DIFFAPPLY_SINGLE_HELPER")
	if op == "" {
		t.Skip("only run as TestKill9SingleWrite's helper")
	}
	w := Write{Path: "a.txt", ExpectHash: Hash([]byte("a before\n"))}
	if op == "modify" {
		w.Content = []byte("a after\n")
	}
	killAfter := os.Getenv("DIFFAPPLY_RENAMED") == "true"
	err := commitWithHook(os.Getenv("DIFFAPPLY_ROOT"), []Write{w}, os.Getenv("DIFFAPPLY_JOURNAL"), func(step string) error {
		if step == "rename a.txt" || step == "remove a.txt" {
			if !killAfter {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
		if step == "remove the manifest" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	})
	t.Fatalf("commit returned %v instead of being killed", err)
}

// copyTree copies the regular files and directories of src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, fi.Mode().Perm())
	})
	must(t, err)
}

// fixRoot points the manifests copied into journal at the copied root.
func fixRoot(t *testing.T, journal, from, to string) {
	t.Helper()
	ents, _ := os.ReadDir(journal)
	for _, de := range ents {
		p := filepath.Join(journal, de.Name(), manifestName)
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		realFrom, _ := filepath.EvalSymlinks(from)
		realTo, _ := filepath.EvalSymlinks(to)
		b = []byte(strings.ReplaceAll(string(b), strconv.Quote(realFrom), strconv.Quote(realTo)))
		must(t, os.WriteFile(p, b, 0o600))
	}
}

// TestRecoverForgedJournal: a journal that names another workspace, or
// paths outside its own, is set aside without writing anything (a change
// that could write smith's state folder could otherwise forge one).
func TestRecoverForgedJournal(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "victim.txt"), []byte("keep\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, ".victim.txt.smith-000000000000"), []byte("pwned\n"), 0o644))
	realOut, _ := filepath.EvalSymlinks(outside)
	realRoot, _ := filepath.EvalSymlinks(root)
	entry := func(p string) journalEntry {
		return journalEntry{Path: p, Temp: p + ".smith-000000000000", Existed: true, Mode: 0o644,
			Before: Hash([]byte("keep\n")), After: Hash([]byte("pwned\n"))}
	}
	for name, m := range map[string]manifest{
		"another root": {Version: 2, Root: realOut, State: stateCommitted, Entries: []journalEntry{entry("victim.txt")}},
		"dot-dot":      {Version: 2, Root: realRoot, State: stateCommitted, Entries: []journalEntry{entry("../" + filepath.Base(outside) + "/victim.txt")}},
		"absolute":     {Version: 2, Root: realRoot, State: stateCommitted, Entries: []journalEntry{entry(filepath.Join(realOut, "victim.txt"))}},
	} {
		journal := t.TempDir()
		tx := filepath.Join(journal, "tx-1-forged")
		must(t, os.Mkdir(tx, 0o700))
		b, _ := json.Marshal(m)
		must(t, os.WriteFile(filepath.Join(tx, manifestName), b, 0o600))
		_, err := Recover(root, journal)
		if err == nil || !strings.Contains(err.Error(), "nothing was written") {
			t.Errorf("%s: Recover = %v, want the journal refused", name, err)
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "victim.txt")); string(b) != "keep\n" {
			t.Errorf("%s: the file outside was written: %q", name, b)
		}
		if n, err := Recover(root, journal); n != 0 || err != nil {
			t.Errorf("%s: a second Recover = %d, %v; the set-aside journal must not block", name, n, err)
		}
	}
}

// TestStateFolderIsProtected: smith's state folder inside the workspace
// (the default when the workspace is $HOME) cannot be written by a diff.
func TestStateFolderIsProtected(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, ".local", "state", "smith")
	must(t, os.MkdirAll(filepath.Join(state, "apply"), 0o700))
	diff := "--- /dev/null\n+++ b/.local/state/smith/apply/0123/tx-1-x/manifest.json\n@@ -0,0 +1 @@\n+{}\n"
	_, err := Plan(root, []byte(diff), Options{Protect: []string{state}})
	var pe *PathError
	if !errors.As(err, &pe) || pe.Rule != RuleState {
		t.Fatalf("Plan: err = %v, want refused as smith's state folder", err)
	}
	ws, err := OpenWorkspace(root, state)
	must(t, err)
	defer ws.Close()
	err = ws.Commit(context.Background(), []Write{{Path: ".local/state/smith/x", Content: []byte("x")}}, "")
	if !errors.As(err, &pe) || pe.Rule != RuleState {
		t.Fatalf("Commit: err = %v, want refused as smith's state folder", err)
	}
	if _, err := os.Stat(filepath.Join(state, "x")); !os.IsNotExist(err) {
		t.Fatal("written into the state folder")
	}
}

// TestRecoverVersion1Journal: a journal of the smith before the
// write-ahead log (absolute paths, "committing" = roll back from the
// backups), left by a kill before an upgrade, is still rolled back.
func TestRecoverVersion1Journal(t *testing.T) {
	root, journal := t.TempDir(), t.TempDir()
	realRoot, _ := filepath.EvalSymlinks(root)
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a after\n"), 0o644))
	tx := filepath.Join(journal, "tx-1-old")
	must(t, os.Mkdir(tx, 0o700))
	must(t, os.WriteFile(filepath.Join(tx, "backup-0"), []byte("a before\n"), 0o600))
	m := `{"version":1,"state":"committing","entries":[{"path":` + strconv.Quote(filepath.Join(realRoot, "a.txt")) +
		`,"temp":` + strconv.Quote(filepath.Join(realRoot, ".a.txt.smith-0123")) + `,"backup":"backup-0","existed":true,"mode":420,` +
		`"before":` + strconv.Quote(Hash([]byte("a before\n"))) + `,"after":` + strconv.Quote(Hash([]byte("a after\n"))) + `}]}`
	must(t, os.WriteFile(filepath.Join(tx, manifestName), []byte(m), 0o600))
	if n, err := Recover(root, journal); n != 1 || err != nil {
		t.Fatalf("Recover = %d, %v; want 1", n, err)
	}
	assertFiles(t, root, map[string]string{"a.txt": "a before\n"})
	if ents, _ := os.ReadDir(journal); len(ents) != 0 {
		t.Errorf("journal left: %v", ents)
	}
}

// givenBy changes the writes of commitFixture (before: its files'
// texts) so that the caller gives the commit some of the bytes; nil
// leaves them as they are.
type givenBy func(writes []Write, before map[string]string) []Write

// byBefore gives the bytes before (Write.Before).
func byBefore(writes []Write, before map[string]string) []Write {
	return beforeGiven(writes, before, nil)
}

// byExpect gives the bytes before as the caller read them, with their
// hash (Write.Expect, Write.ExpectHash), as smith's engine does for a
// file it holds.
func byExpect(writes []Write, before map[string]string) []Write {
	out := slices.Clone(writes)
	for i := range out {
		if old, ok := before[out[i].Path]; ok {
			out[i].Expect, out[i].ExpectHash = []byte(old), Hash([]byte(old))
		}
	}
	return out
}

// byBeforeAndContent gives the bytes before and the new content
// (Write.ContentFrom).
func byBeforeAndContent(writes []Write, before map[string]string) []Write {
	return contentGiven(beforeGiven(writes, before, nil), nil)
}

// contentGiven moves the Content of every write that has one to
// ContentFrom (with its ContentHash), counting the calls in calls (when
// set).
func contentGiven(writes []Write, calls map[string]int) []Write {
	out := slices.Clone(writes)
	for i := range out {
		b := out[i].Content
		if b == nil {
			continue
		}
		p := out[i].Path
		out[i].Content, out[i].ContentHash = nil, Hash(b)
		out[i].ContentFrom = func() ([]byte, error) {
			if calls != nil {
				calls[p]++
			}
			return slices.Clone(b), nil
		}
	}
	return out
}

// beforeGiven sets Write.Before of every existing target of writes to
// give back its text in before, counting the calls in calls (when set).
func beforeGiven(writes []Write, before map[string]string, calls *int) []Write {
	out := slices.Clone(writes)
	for i := range out {
		old, ok := before[out[i].Path]
		if !ok {
			continue
		}
		out[i].Before = func() ([]byte, error) {
			if calls != nil {
				*calls++
			}
			return []byte(old), nil
		}
	}
	return out
}

// TestExpectGivenIsChecked: with Write.Expect, a target changed since
// the caller read it is never written over: one of another size is
// refused before anything is made, naming its hash as a commit that reads
// it does; one of the same size (which the commit does not read before
// its journal) is found just before its rename, and what was renamed
// before it is put back. Bytes given that are not the file's, with their
// own hash, are refused the same way.
func TestExpectGivenIsChecked(t *testing.T) {
	for _, theirs := range []string{"#!/bin/sh\necho edited\n", "#!/bin/zs\n"} {
		root, journal := t.TempDir(), t.TempDir()
		writes, before, _ := commitFixture(t, root)
		writes = byExpect(writes, before)
		must(t, os.WriteFile(filepath.Join(root, "run.sh"), []byte(theirs), 0o755))
		err := Commit(context.Background(), root, writes, journal)
		var se *StaleError
		if !errors.As(err, &se) || se.Path != "run.sh" {
			t.Fatalf("run.sh edited to %q: err = %v, want a StaleError for run.sh", theirs, err)
		}
		if sameSize := len(theirs) == len(before["run.sh"]); se.During != sameSize {
			t.Errorf("run.sh edited to %q: found while writing = %v, want %v", theirs, se.During, sameSize)
		}
		if se.Got != Hash([]byte(theirs)) {
			t.Errorf("run.sh edited to %q: the error names %s, want the file's hash", theirs, se.Got)
		}
		want := maps.Clone(before)
		want["run.sh"] = theirs
		assertFiles(t, root, want)
		noTemps(t, root, "refused")
		if ents, _ := os.ReadDir(journal); len(ents) != 0 {
			t.Errorf("journal left: %v", ents)
		}
	}
	root := t.TempDir()
	writes, before, _ := commitFixture(t, root)
	writes = byExpect(writes, before)
	wrong := []byte("a befor!\n")
	writes[0].Expect, writes[0].ExpectHash = wrong, Hash(wrong)
	var se *StaleError
	if err := Commit(context.Background(), root, writes, ""); !errors.As(err, &se) || se.Path != "a.txt" {
		t.Fatalf("bytes given that are not the file's: err = %v, want a StaleError for a.txt", err)
	}
	assertFiles(t, root, before)
}

// TestBeforeGivenIsAskedOnlyToRollBack: with Write.Before set, a commit
// that succeeds never asks for the bytes before; one that must put a file
// back asks, and refuses bytes that are not what it read, leaving that
// file as it wrote it and saying so.
func TestBeforeGivenIsAskedOnlyToRollBack(t *testing.T) {
	root, journal := t.TempDir(), t.TempDir()
	writes, before, after := commitFixture(t, root)
	calls := 0
	must(t, Commit(context.Background(), root, beforeGiven(writes, before, &calls), journal))
	assertFiles(t, root, after)
	if calls != 0 {
		t.Errorf("a commit that succeeded asked for the bytes before %d times", calls)
	}

	root, journal = t.TempDir(), t.TempDir()
	writes, before, _ = commitFixture(t, root)
	wrong := maps.Clone(before)
	wrong["a.txt"] = "not what was there\n"
	err := commitWithHook(root, beforeGiven(writes, wrong, &calls), journal, func(step string) error {
		if step == "rename a.txt" {
			must(t, os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\necho theirs\n"), 0o755))
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), "hash") {
		t.Fatalf("rolling back with the wrong bytes before: %v, want a refusal naming a.txt", err)
	}
	if calls == 0 {
		t.Errorf("the rollback did not ask for the bytes before")
	}
	if got, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(got) != "a after\n" {
		t.Errorf("a.txt after a refused rollback: %q, want it left as written", got)
	}
}

// TestContentGivenIsAskedOnce: with Write.ContentFrom, a commit asks for
// each new content once, when it writes that file, and writes it byte for
// byte; a content that cannot be given fails the commit before any
// rename, leaving the tree as it was and naming the file; a content given
// later without its hash is refused before anything is written.
func TestContentGivenIsAskedOnce(t *testing.T) {
	root, journal := t.TempDir(), t.TempDir()
	writes, _, after := commitFixture(t, root)
	calls := map[string]int{}
	must(t, Commit(context.Background(), root, contentGiven(writes, calls), journal))
	assertFiles(t, root, after)
	if want := map[string]int{"a.txt": 1, "run.sh": 1, "new/dir/b.txt": 1}; !maps.Equal(calls, want) {
		t.Errorf("contents asked for: %v, want each once: %v", calls, want)
	}

	root, journal = t.TempDir(), t.TempDir()
	writes, before, after := commitFixture(t, root)
	failing := contentGiven(writes, nil)
	failing[2].ContentFrom = func() ([]byte, error) { return nil, errors.New("the journal's pack is unreadable") }
	err := Commit(context.Background(), root, failing, journal)
	if err == nil || !strings.Contains(err.Error(), "new/dir/b.txt") || !strings.Contains(err.Error(), "unreadable") {
		t.Fatalf("a content that cannot be given: %v, want the error naming new/dir/b.txt", err)
	}
	if got := treeState(t, root, before, after); got != "before" {
		t.Errorf("tree after a content could not be given: %s, want before", got)
	}
	if ents, _ := os.ReadDir(journal); len(ents) != 0 {
		t.Errorf("journal left: %v", ents)
	}

	nohash := contentGiven(writes, nil)
	nohash[0].ContentHash = ""
	if err := Commit(context.Background(), root, nohash, journal); err == nil || !strings.Contains(err.Error(), "a.txt") {
		t.Fatalf("a content given later without its hash: %v, want a refusal naming a.txt", err)
	}
	if got := treeState(t, root, before, after); got != "before" {
		t.Errorf("tree after a refused commit: %s, want before", got)
	}
}
