package diffapply

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	udiff "github.com/aymanbagabas/go-udiff"
)

// benchWorkspace writes nfiles files of nlines lines each and returns a
// multi-file diff (git style, go-udiff hunks) that changes every 8th line.
func benchWorkspace(b *testing.B, nfiles, nlines int) (string, []byte) {
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

// BenchmarkPlan1MB plans a 1 MB diff (12 files of 1200 lines, a change every 8 lines)
// against files on disk. Goal: under 20 ms per op (docs/benchmarks.md).
func BenchmarkPlan1MB(b *testing.B) {
	root, diff := benchWorkspace(b, 12, 1200)
	b.ReportMetric(float64(len(diff))/1e6, "MB")
	b.SetBytes(int64(len(diff)))
	b.ResetTimer()
	for b.Loop() {
		p, err := Plan(root, diff, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if hs, _ := p.Conflicts(); len(hs) != 0 {
			b.Fatalf("%d conflicts", len(hs))
		}
	}
}
