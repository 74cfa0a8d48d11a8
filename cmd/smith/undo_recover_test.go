//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestUndoKilledAtEachRenameSettles: `smith undo` of a patch of four
// files (one of 2 MiB, which the undo streams from the journal) is killed
// by strace at its Kth rename, for every K until the undo runs to its
// end: before its write-ahead record, after it, between the files'
// renames, and after the last one but before the state that says the
// undo happened. The next start must leave the files all as applied or
// all as before, no temp file, and the changes as the files say: undone
// when they were restored (an undo that happened), applied when not, and
// then a second undo must take them back.
func TestUndoKilledAtEachRenameSettles(t *testing.T) {
	strace, smith := straceOrSkip(t)
	names := []string{"a.txt", "b.txt", "sub/c.txt", "big.txt"}
	old := map[string]string{}
	applied := map[string]string{}
	var diff bytes.Buffer
	for i, n := range names {
		body := fmt.Sprintf("old %d\n", i)
		if n == "big.txt" {
			body = strings.Repeat("a line of a large file, kept as it is\n", 2<<20/38)
		}
		old[n] = "first " + n + "\n" + body
		applied[n] = "FIRST " + n + "\n" + body
		fmt.Fprintf(&diff, "--- a/%[1]s\n+++ b/%[1]s\n@@ -1 +1 @@\n-first %[1]s\n+FIRST %[1]s\n", n)
	}
	// The first fsync is the write-ahead state file's, before it is
	// renamed in: killed there, the undo never began. strace counts the
	// renames of each thread, and the undo's may run on several: every K
	// up to a few past the undo's 6 renames (the state file, the 4 files,
	// the state file) is tried, not only until one ends.
	type kill struct {
		calls string
		k     int
	}
	kills := []kill{{"fsync", 1}}
	for k := 1; k <= 8; k++ {
		kills = append(kills, kill{"renameat,renameat2,rename", k})
	}
	// The two cuts that matter most, mid-renames and after the last file
	// before the undo is recorded, are tried again (at most 5 rounds)
	// until each was met: which K meets them depends on the threads.
	finished, rounds := 0, 0
	sawMid, sawAll := false, false
	for i := 0; i < len(kills); i++ {
		calls, k := kills[i].calls, kills[i].k
		if i == len(kills)-1 && !(sawMid && sawAll) && rounds < 5 {
			rounds++
			for k := 2; k <= 6; k++ {
				kills = append(kills, kill{"renameat,renameat2,rename", k})
			}
		}
		base := t.TempDir()
		ws := filepath.Join(base, "ws")
		if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(ws, n), []byte(old[n]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		patch := filepath.Join(base, "p.diff")
		if err := os.WriteFile(patch, diff.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		state := filepath.Join(base, "state")
		env := append(os.Environ(), "XDG_STATE_HOME="+state, "HOME="+base, "NO_COLOR=1")
		run := runIn(ws, env)
		if out, err := run(smith, "apply", patch); err != nil {
			t.Fatalf("%s %d: apply: %v\n%s", calls, k, err, out)
		}
		_, killErr := run(strace, "-f", "-qq", "-o", os.DevNull, "-e", "trace="+calls, "-e", fmt.Sprintf("inject=%s:signal=KILL:when=%d", calls, k), smith, "undo")
		// How far the undo got, as the kill left the files.
		atKill := 0
		for _, n := range names {
			if b, _ := os.ReadFile(filepath.Join(ws, n)); string(b) == old[n] {
				atKill++
			}
		}
		if killErr != nil {
			sawMid = sawMid || atKill > 0 && atKill < len(names)
			sawAll = sawAll || atKill == len(names)
		}

		out, err := run(smith, "changes")
		if err != nil {
			t.Fatalf("%s %d: smith changes after the kill: %v\n%s", calls, k, err, out)
		}
		nOld, nApplied := 0, 0
		for _, n := range names {
			b, _ := os.ReadFile(filepath.Join(ws, n))
			switch string(b) {
			case old[n]:
				nOld++
			case applied[n]:
				nApplied++
			default:
				t.Errorf("%s %d: %s holds neither its text before nor the applied one (%d bytes)", calls, k, n, len(b))
			}
		}
		if nOld != 0 && nApplied != 0 {
			t.Errorf("%s %d: %d files restored and %d as applied: the undo was torn", calls, k, nOld, nApplied)
		}
		statuses := statusesListed(out)
		want := "applied"
		if nOld == len(names) {
			want = "undone"
		}
		var got []string
		for i := range names {
			got = append(got, statuses[fmt.Sprintf("c%d", i+1)])
		}
		if slices.ContainsFunc(got, func(s string) bool { return s != want }) {
			// What the user meets then: the undo that happened is not
			// recorded, and a second one is refused.
			again, err := run(smith, "undo")
			t.Errorf("%s %d: the files are %d of %d restored, the changes %v after the restart, want all %s\n%s\nsmith undo again (%v):\n%s", calls, k, nOld, len(names), got, want, out, err, again)
			continue
		}
		filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), ".smith-") {
				t.Errorf("%s %d: temp file left in the workspace: %s", calls, k, p)
			}
			return nil
		})
		t.Logf("%s %d: killed %v with %d of %d files restored; after the restart %d restored, the changes %s", calls, k, killErr != nil, atKill, len(names), nOld, want)
		if nApplied == len(names) {
			// Not undone: the undo must still be possible, and whole.
			if out, err := run(smith, "undo"); err != nil {
				t.Errorf("%s %d: a second undo after the restart: %v\n%s", calls, k, err, out)
			} else {
				for _, n := range names {
					if b, _ := os.ReadFile(filepath.Join(ws, n)); string(b) != old[n] {
						t.Errorf("%s %d: the second undo left %s not restored", calls, k, n)
					}
				}
			}
		}
		if killErr == nil {
			finished++
		}
	}
	t.Logf("met a kill mid-renames: %v; after every file's rename, before the undo was recorded: %v (%d more rounds)", sawMid, sawAll, rounds)
	if finished == 0 {
		t.Errorf("the undo was killed at each of its first %d renames: the test did not reach an undo that ends", len(kills)-1)
	}
}

// statusesListed reads `smith changes`: each change's status by id.
func statusesListed(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[0], "c") && f[0] != "ID" {
			m[f[0]] = f[1]
		}
	}
	return m
}
