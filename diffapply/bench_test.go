//go:build unix

package diffapply

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"
)

// benchWorkspace writes nfiles files of nlines lines each and returns a
// multi-file diff (git style, go-udiff hunks) that changes every 8th line.
func benchWorkspace(b testing.TB, nfiles, nlines int) (string, []byte) {
	b.Helper()
	root := b.TempDir()
	var diff strings.Builder
	for f := 0; f < nfiles; f++ {
		var before, after strings.Builder
		for i := 0; i < nlines; i++ {
			line := fmt.Sprintf("\tvalue%d := compute(%d, %d) // file %d\n", i, i, i*7, f)
			before.WriteString(line)
			if i%8 == 3 {
				line = fmt.Sprintf("\tvalue%d := computeFaster(%d, %d) // file %d\n", i, i, i*7, f)
			}
			after.WriteString(line)
		}
		name := fmt.Sprintf("pkg%d/file%d.go", f%7, f)
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(before.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&diff, "diff --git a/%s b/%s\n", name, name)
		diff.WriteString(udiff.Unified("a/"+name, "b/"+name, before.String(), after.String()))
	}
	return root, []byte(diff.String())
}

// BenchmarkPlan1MB plans a 1 MB diff (12 files of 1200 lines, a change
// every 8 lines) against files on disk. Goal: under 20 ms per op
// (docs/benchmarks.md). Besides wall time it reports the process CPU time
// per op (cpu-ms/op, all goroutines and the GC), which other work on a
// busy machine inflates much less than wall time.
func BenchmarkPlan1MB(b *testing.B) {
	root, diff := benchWorkspace(b, 12, 1200)
	b.ReportMetric(float64(len(diff))/1e6, "MB")
	b.SetBytes(int64(len(diff)))
	cpu0 := cpuTime()
	n := 0
	b.ResetTimer()
	defer func() {
		if n > 0 {
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(n), "cpu-ms/op")
		}
	}()
	for b.Loop() {
		n++
		p, err := Plan(root, diff, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if hs, _ := p.Conflicts(); len(hs) != 0 {
			b.Fatalf("%d conflicts", len(hs))
		}
	}
}

// cpuTime is the user and system time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestParallelPlanIsDeterministic plans a diff big enough for the
// parallel path and checks it against the sequential one (Select forces
// it); run it with -race.
func TestParallelPlanIsDeterministic(t *testing.T) {
	root, diff := benchWorkspace(t, 6, 1200)
	if len(diff) < 256<<10 {
		t.Fatalf("diff of %d bytes is too small for the parallel path", len(diff))
	}
	par, err := Plan(root, diff, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := Plan(root, diff, Options{Select: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if len(par.Files) != len(seq.Files) {
		t.Fatalf("%d files in parallel, %d in sequence", len(par.Files), len(seq.Files))
	}
	for i := range par.Files {
		p, s := par.Files[i], seq.Files[i]
		if p.Path != s.Path || string(p.After) != string(s.After) || len(p.Hunks) != len(s.Hunks) || p.Hunks[0].ID != s.Hunks[0].ID {
			t.Errorf("file %d differs: %s vs %s", i, p.Path, s.Path)
		}
	}
}
