package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBufferedKeepsOrder: through IOStreams.buffered, a writer that gets
// both streams sees the same bytes in the same order as with direct writes,
// in one write per switch between the streams, not one per call.
func TestBufferedKeepsOrder(t *testing.T) {
	var direct bytes.Buffer
	shared := &countingWriter{}
	s := &IOStreams{Out: shared, Err: shared}
	b, flush := s.buffered()
	rng := rand.New(rand.NewPCG(1, 2))
	switches, toErr := 0, false
	for i := range 5000 {
		if rng.IntN(50) == 0 {
			toErr, switches = !toErr, switches+1
		}
		w := b.Out
		if toErr {
			w = b.Err
		}
		line := fmt.Sprintf("line %d to err=%v\n", i, toErr)
		direct.WriteString(line)
		fmt.Fprint(w, line)
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	if shared.String() != direct.String() {
		t.Fatal("buffered streams changed the bytes or their order")
	}
	if max := switches + 1 + direct.Len()/(32<<10); shared.writes > max {
		t.Errorf("%d writes for 5000 lines and %d switches, want at most %d", shared.writes, switches, max)
	}
}

// TestApplyReportIsBuffered: smith apply's report of a many-hunk diff
// reaches its streams in a few writes (it made one per hunk line).
func TestApplyReportIsBuffered(t *testing.T) {
	dir := t.TempDir()
	var file, diff strings.Builder
	diff.WriteString("--- a/f.txt\n+++ b/f.txt\n")
	for i := range 2000 {
		fmt.Fprintf(&file, "line %d\n", i)
		if i%10 == 5 {
			fmt.Fprintf(&diff, "@@ -%d,3 +%d,3 @@\n line %d\n-line %d\n+LINE %d\n line %d\n", i, i, i-1, i, i, i+1)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	patch := filepath.Join(t.TempDir(), "p.diff")
	if err := os.WriteFile(patch, []byte(diff.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errw := &countingWriter{}, &countingWriter{}
	s := &IOStreams{In: strings.NewReader(""), Out: out, Err: errw, Getenv: func(k string) string {
		if k == "XDG_STATE_HOME" {
			return filepath.Join(dir, ".state")
		}
		return ""
	}}
	if code := run([]string{"apply", "-C", dir, patch}, s); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errw.String())
	}
	if n := strings.Count(out.String(), "\n"); n != 200 {
		t.Fatalf("%d report lines, want 200:\n%s", n, out.String())
	}
	if out.writes > 2 || errw.writes > 2 {
		t.Errorf("%d writes to stdout and %d to stderr for a 200-hunk report, want at most 2 each", out.writes, errw.writes)
	}
}
