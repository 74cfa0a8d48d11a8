// Command gen writes the workspace and the diff of bench/apply.sh: FILES
// files of LINES lines each under DIR/ws.orig, and DIR/patch.diff, a
// git-style diff that changes one line in every EVERY (each change its own
// hunk with three lines of context, as git writes it, when EVERY > 7). The defaults give the "1 MB diff": 25 files,
// about 2 175 hunks.
//
//	go run ./bench/apply/gen -dir /tmp/x                       # 1 MB, 25 files
//	go run ./bench/apply/gen -dir /tmp/y -files 1 -lines 50 -every 50   # one hunk
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	dir := flag.String("dir", "", "output folder (required)")
	files := flag.Int("files", 25, "files in the workspace")
	lines := flag.Int("lines", 870, "lines per file")
	every := flag.Int("every", 10, "change one line in every EVERY")
	flag.Parse()
	if *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := gen(*dir, *files, *lines, *every); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func gen(dir string, files, lines, every int) error {
	out, err := os.Create(filepath.Join(dir, "patch.diff"))
	if err != nil {
		return err
	}
	defer out.Close()
	w := bufio.NewWriter(out)
	for f := range files {
		old := make([]string, lines)
		var before strings.Builder
		for i := range lines {
			old[i] = fmt.Sprintf("\tvalue%d := compute(%d, %d) // file %d, generated\n", i, i, i*7, f)
			before.WriteString(old[i])
		}
		name := fmt.Sprintf("pkg%d/file%d.go", f%7, f)
		p := filepath.Join(dir, "ws.orig", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(before.String()), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", name, name, name, name)
		// One hunk per change with git's three lines of context (EVERY >
		// 7 keeps them apart, as git would).
		for i := 3; i < lines; i += every {
			lo, hi := max(i-3, 0), min(i+4, lines)
			fmt.Fprintf(w, "@@ -%d,%d +%d,%d @@\n", lo+1, hi-lo, lo+1, hi-lo)
			for j := lo; j < hi; j++ {
				if j == i {
					w.WriteString("-" + old[j])
					fmt.Fprintf(w, "+\tvalue%d := computeFaster(%d, %d) // file %d, generated\n", j, j, j*7, f)
					continue
				}
				w.WriteString(" " + old[j])
			}
		}
	}
	return w.Flush()
}
