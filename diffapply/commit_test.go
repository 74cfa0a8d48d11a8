//go:build unix

package diffapply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
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

func TestCommitRollsBackOnFailure(t *testing.T) {
	for fail := 0; fail < 4; fail++ {
		t.Run(fmt.Sprint("fail after rename ", fail), func(t *testing.T) {
			root, journal := t.TempDir(), t.TempDir()
			writes, before, _ := commitFixture(t, root)
			boom := errors.New("injected")
			err := commit(context.Background(), root, writes, journal, func(i int, renamed bool) error {
				if renamed && i == fail {
					return boom
				}
				return nil
			})
			if !errors.Is(err, boom) {
				t.Fatalf("err = %v, want the injected failure", err)
			}
			assertFiles(t, root, before)
			if _, err := os.Stat(filepath.Join(root, "new")); !os.IsNotExist(err) {
				t.Errorf("the directory created for b.txt was left behind")
			}
		})
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
	_, before, _ := commitFixture(t, root)
	// A commit killed while staging: a manifest and a temp file, no renames.
	tx, err := newTxDir(journal)
	must(t, err)
	temp := filepath.Join(root, ".a.txt.smith-dead")
	must(t, os.WriteFile(temp, []byte("half"), 0o644))
	must(t, writeManifest(tx, &manifest{Version: 1, State: stateStaging, Entries: []journalEntry{{Path: filepath.Join(root, "a.txt"), Temp: temp, Existed: true}}}, false))
	n, err := Recover(journal)
	if err != nil || n != 0 {
		t.Fatalf("Recover = %d, %v; want 0 rolled back", n, err)
	}
	assertFiles(t, root, before)
	if ents, _ := os.ReadDir(journal); len(ents) != 0 {
		t.Errorf("journal left: %v", ents)
	}
}

// TestKill9MidCommit re-runs the test binary as a helper that SIGKILLs
// itself after renaming N of the 4 targets, then recovers and checks that
// every file was, at the kill, entirely before or after, and is before
// once Recover has rolled the transaction back.
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
			rolled, err := Recover(journal)
			if err != nil || rolled != 1 {
				t.Fatalf("Recover = %d, %v; want 1", rolled, err)
			}
			assertFiles(t, root, before)
			for name := range snapshot(t, root) {
				if strings.Contains(name, ".smith-") {
					t.Errorf("temp file left: %s", name)
				}
			}
		})
	}
}

// TestRecoverLeavesEditedFiles: after a kill, a file the user edited
// before Recover ran is left alone and reported; the others roll back.
func TestRecoverLeavesEditedFiles(t *testing.T) {
	if os.Getenv("DIFFAPPLY_KILL_HELPER") != "" {
		t.Skip("helper mode")
	}
	root, journal := t.TempDir(), t.TempDir()
	_, before, _ := commitFixture(t, root)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$")
	cmd.Env = append(os.Environ(), "DIFFAPPLY_KILL_HELPER=1", "DIFFAPPLY_ROOT="+root, "DIFFAPPLY_JOURNAL="+journal)
	if err := cmd.Run(); err == nil {
		t.Fatal("helper was not killed")
	}
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("edited by the user\n"), 0o644))
	n, err := Recover(journal)
	if err == nil || !strings.Contains(err.Error(), "a.txt changed after the interrupted apply") {
		t.Fatalf("Recover = %d, %v; want a.txt reported", n, err)
	}
	want := maps.Clone(before)
	want["a.txt"] = "edited by the user\n"
	assertFiles(t, root, want)
	if ents, _ := os.ReadDir(journal); len(ents) != 1 {
		t.Errorf("the journal should be kept for inspection, found %d entries", len(ents))
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
	err := commit(context.Background(), root, writes, os.Getenv("DIFFAPPLY_JOURNAL"), func(i int, renamed bool) error {
		if renamed && i == n {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	})
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
// write (no journal: the fast path) and SIGKILLs itself just before or just
// after the rename (or removal): the file must hold exactly its old or its
// new bytes, no journal may be left, and Recover has nothing to do.
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
			// Killed before the rename, the temp file may stay; it never
			// replaces the target.
			for name := range got {
				if name != "a.txt" && !(strings.HasPrefix(name, ".a.txt.smith-") && !tc.renamed) {
					t.Errorf("unexpected file %s", name)
				}
			}
			if ents, _ := os.ReadDir(journal); len(ents) != 0 {
				t.Errorf("a single write left a journal: %v", ents)
			}
			if n, err := Recover(journal); n != 0 || err != nil {
				t.Errorf("Recover = %d, %v; want nothing to do", n, err)
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
	killAt := os.Getenv("DIFFAPPLY_RENAMED") == "true"
	err := commit(context.Background(), os.Getenv("DIFFAPPLY_ROOT"), []Write{w}, os.Getenv("DIFFAPPLY_JOURNAL"), func(i int, renamed bool) error {
		if renamed == killAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	})
	t.Fatalf("commit returned %v instead of being killed", err)
}
