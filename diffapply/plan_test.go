package diffapply

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	udiff "github.com/aymanbagabas/go-udiff"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(data), 0o644))
	}
}

// TestNoNewlinePairs replicates t4101: every pair of texts with and
// without a final newline, diffed by a real differ, applies to give the
// exact post-image, and reverses to the exact pre-image.
func TestNoNewlinePairs(t *testing.T) {
	texts := []string{"", "a\n", "a", "b\n", "b", "a\nb\n", "a\nb", "a\nB\n", "a\nB", "x\na\nb\nc\n", "x\na\nb\nc"}
	for i, before := range texts {
		for j, after := range texts {
			if before == after || before == "" && after == "" {
				continue
			}
			t.Run(fmt.Sprintf("%d-%d", i, j), func(t *testing.T) {
				root := t.TempDir()
				writeFiles(t, root, map[string]string{"f": before})
				d := udiff.Unified("a/f", "b/f", before, after)
				p, err := Plan(root, []byte(d), Options{})
				if err != nil {
					t.Fatalf("plan: %v\n%s", err, d)
				}
				if got := string(p.Files[0].After); got != after {
					t.Fatalf("After = %q, want %q\n%s", got, after, d)
				}
				must(t, p.Apply(context.Background(), nil, ""))
				rp, err := Plan(root, []byte(d), Options{Reverse: true})
				if err != nil {
					t.Fatal(err)
				}
				if got := string(rp.Files[0].After); got != before {
					t.Fatalf("reverse After = %q, want %q\n%s", got, before, d)
				}
			})
		}
	}
}

// TestAbsoluteHeaders covers AgentSmithy's "a//abs/path" headers and the
// v0 bare absolute headers: absolute paths inside the root are accepted.
func TestAbsoluteHeaders(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"app/main.go": "package main\n\nfunc a() int {\n\treturn 1\n}\n"})
	abs := filepath.Join(root, "app/main.go")
	difflib := "--- a/" + abs + "\n+++ b/" + abs + "\n@@ -1,5 +1,5 @@\n package main\n\n \n\n func a() int {\n\n-\treturn 1\n\n+\treturn 2\n\n }\n"
	bare := "--- " + abs + "\n+++ " + abs + "\n@@ -3,3 +3,3 @@\n func a() int {\n-\treturn 2\n+\treturn 3\n }"
	for i, d := range []string{difflib, bare} {
		p, err := Plan(root, []byte(d), Options{})
		if err != nil {
			t.Fatalf("diff %d: %v", i, err)
		}
		if p.Files[0].Path != "app/main.go" {
			t.Errorf("diff %d: path %q", i, p.Files[0].Path)
		}
		must(t, p.Apply(context.Background(), nil, ""))
	}
	if b, _ := os.ReadFile(abs); string(b) != "package main\n\nfunc a() int {\n\treturn 3\n}\n" {
		t.Errorf("result %q", b)
	}
}

func TestModeChangeOnly(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"run.sh": "#!/bin/sh\n"})
	d := "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
	p, err := Plan(root, []byte(d), Options{})
	must(t, err)
	must(t, p.Apply(context.Background(), nil, ""))
	fi, err := os.Stat(filepath.Join(root, "run.sh"))
	must(t, err)
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %o, want 755", fi.Mode().Perm())
	}
}

func TestApplyRefusesChangedFile(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"f": "a\nb\nc\n"})
	p, err := Plan(root, []byte("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"), Options{})
	must(t, err)
	writeFiles(t, root, map[string]string{"f": "a\nb\nc\nd\n"})
	if err := p.Apply(context.Background(), nil, ""); !errors.Is(err, ErrStale) {
		t.Fatalf("err = %v, want ErrStale", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "f")); string(b) != "a\nb\nc\nd\n" {
		t.Errorf("file changed: %q", b)
	}
}

// TestBuffersSubsetsAndReverse is the daemon's flow: plan against an
// editor buffer, render a subset, then reject one applied hunk.
func TestBuffersSubsetsAndReverse(t *testing.T) {
	root := t.TempDir()
	buffer := strings.Repeat("x\n", 0) + "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"
	read := func(p string) ([]byte, bool, error) {
		if p != "src/f.txt" {
			return nil, false, nil
		}
		return []byte(buffer), true, nil
	}
	d := "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-one\n+ONE\n two\n three\n@@ -8,3 +8,3 @@\n eight\n nine\n-ten\n+TEN\n"
	p, err := Plan(root, []byte(d), Options{Target: "src/f.txt", ReadFile: read})
	must(t, err)
	f := p.Files[0]
	if f.Path != "src/f.txt" || len(f.Hunks) != 2 {
		t.Fatalf("file %q with %d hunks", f.Path, len(f.Hunks))
	}
	all := strings.Replace(strings.Replace(buffer, "one", "ONE", 1), "ten", "TEN", 1)
	if got := string(f.Render(nil)); got != all {
		t.Errorf("Render(all) = %q", got)
	}
	if got := string(f.Render([]int{2})); got != strings.Replace(buffer, "ten", "TEN", 1) {
		t.Errorf("Render(2) = %q", got)
	}
	// The user edits line 5 after applying; then rejects hunk 1.
	buffer = strings.Replace(all, "five", "FIVE", 1)
	rev := f.ReverseDiff([]int{1})
	rp, err := Plan(root, []byte(rev), Options{Target: "src/f.txt", ReadFile: read})
	must(t, err)
	want := strings.Replace(buffer, "ONE", "one", 1)
	if got := string(rp.Files[0].After); got != want {
		t.Errorf("after reject = %q, want %q", got, want)
	}
	if !strings.Contains(f.Diff(nil), "-one\n+ONE\n") {
		t.Errorf("Diff = %q", f.Diff(nil))
	}
}

func TestPlanContent(t *testing.T) {
	root := t.TempDir()
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n"
	writeFiles(t, root, map[string]string{"f.txt": old, "crlf.txt": "a\r\nb\r\n"})
	nw := "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nK\nl\n"
	p, err := PlanContent(root, "f.txt", []byte(nw), Options{})
	must(t, err)
	if string(p.Files[0].After) != nw || len(p.Files[0].Hunks) != 2 {
		t.Fatalf("After %q, %d hunks", p.Files[0].After, len(p.Files[0].Hunks))
	}
	must(t, p.Apply(context.Background(), []int{2}, ""))
	if b, _ := os.ReadFile(filepath.Join(root, "f.txt")); string(b) != strings.Replace(old, "k", "K", 1) {
		t.Errorf("after hunk 2 only: %q", b)
	}
	// Creation, deletion, no change.
	p, err = PlanContent(root, "new/g.txt", []byte("x"), Options{})
	must(t, err)
	if p.Files[0].Op != OpCreate || string(p.Files[0].After) != "x" {
		t.Errorf("create: %s %q", p.Files[0].Op, p.Files[0].After)
	}
	p, err = PlanContent(root, "crlf.txt", nil, Options{})
	must(t, err)
	if p.Files[0].Op != OpDelete {
		t.Errorf("delete: %s", p.Files[0].Op)
	}
	must(t, p.Apply(context.Background(), nil, ""))
	if _, err := os.Stat(filepath.Join(root, "crlf.txt")); !os.IsNotExist(err) {
		t.Errorf("crlf.txt not deleted")
	}
	p, err = PlanContent(root, "f.txt", []byte(strings.Replace(old, "k", "K", 1)), Options{})
	must(t, err)
	if len(p.Files) != 0 {
		t.Errorf("no change gave %d files", len(p.Files))
	}
	if _, err := PlanContent(root, "../x", []byte("x"), Options{}); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("PlanContent ../x: %v", err)
	}
}

func TestMisparseWithoutRecount(t *testing.T) {
	// go-diff alone splits this diff into two files (D9); we keep one.
	d := "--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,3 @@\n x\n--- old\n+++ new\n@@ -9,1 +9,1 @@\n-y\n+Y\n"
	fds, _, err := parse([]byte(d))
	must(t, err)
	if len(fds) != 1 || len(fds[0].hunks) != 2 {
		t.Fatalf("got %d files", len(fds))
	}
	if got := bodyOf(fds[0].hunks[0]); got != " x\n--- old\n+++ new\n" {
		t.Errorf("first hunk body %q", got)
	}
}

// TestRandomRoundTrip: diffs of random file pairs (few distinct lines, so
// lots of repetition, with and without final newlines), made by a real
// differ, plan to the exact post-image, and reversed to the pre-image.
func TestRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "b", "c", "", "  x", "\ty", "}"}
	gen := func() string {
		var b strings.Builder
		n := r.IntN(30)
		for i := 0; i < n; i++ {
			b.WriteString(words[r.IntN(len(words))])
			if i < n-1 || r.IntN(3) > 0 {
				b.WriteString("\n")
			}
		}
		return b.String()
	}
	root := t.TempDir()
	for it := 0; it < 500; it++ {
		before, after := gen(), gen()
		if before == after {
			continue
		}
		must(t, os.WriteFile(filepath.Join(root, "f"), []byte(before), 0o644))
		d := udiff.Unified("a/f", "b/f", before, after)
		p, err := Plan(root, []byte(d), Options{})
		must(t, err)
		if hs, _ := p.Conflicts(); len(hs) > 0 || string(p.Files[0].After) != after {
			t.Fatalf("before %q\nafter %q\ngot %q\n%s", before, after, p.Files[0].After, d)
		}
		must(t, os.WriteFile(filepath.Join(root, "f"), []byte(after), 0o644))
		rp, err := Plan(root, []byte(d), Options{Reverse: true})
		must(t, err)
		if hs, _ := rp.Conflicts(); len(hs) > 0 || string(rp.Files[0].After) != before {
			t.Fatalf("reverse: before %q\nafter %q\ngot %q\n%s", before, after, rp.Files[0].After, d)
		}
	}
}

func TestDeleteRemovesEmptyDirectories(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a/b/c.txt": "c\n", "keep/x.txt": "x\n", "keep/y.txt": "y\n"})
	d := "--- a/a/b/c.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-c\n--- a/keep/x.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
	p, err := Plan(root, []byte(d), Options{})
	must(t, err)
	must(t, p.Apply(context.Background(), nil, t.TempDir()))
	if _, err := os.Stat(filepath.Join(root, "a")); !os.IsNotExist(err) {
		t.Errorf("a/ left behind: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "keep/y.txt")); err != nil {
		t.Errorf("keep/y.txt: %v", err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Errorf("the root itself went: %v", err)
	}
}

// TestRandomSequentialSections: two diffs of one file concatenated, the
// second made against the result of the first (a → b, then b → c), as
// concatenated patches and some chat answers are. Whatever smith does, it
// never gives anything but c: applied (merged, or one section after
// another) it is exactly c, else a conflict; and it applies most of them.
func TestRandomSequentialSections(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lines := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("line %d", r.IntN(1000))
		}
		return out
	}
	edit := func(in []string) []string {
		out := slices.Clone(in)
		for k := 1 + r.IntN(3); k > 0; k-- {
			i := r.IntN(len(out) + 1)
			switch r.IntN(3) {
			case 0:
				out = slices.Insert(out, i, fmt.Sprintf("new %d", r.IntN(1000)))
			case 1:
				if i < len(out) {
					out = slices.Delete(out, i, i+1)
				}
			default:
				if i < len(out) {
					out[i] += " changed"
				}
			}
		}
		return out
	}
	join := func(ls []string) string { return strings.Join(ls, "\n") + "\n" }
	root := t.TempDir()
	applied := 0
	const n = 300
	for it := 0; it < n; it++ {
		a := lines(5 + r.IntN(40))
		b := edit(a)
		c := edit(b)
		d := udiff.Unified("a/f", "b/f", join(a), join(b)) + udiff.Unified("a/f", "b/f", join(b), join(c))
		if join(a) == join(b) || join(b) == join(c) {
			continue
		}
		must(t, os.WriteFile(filepath.Join(root, "f"), []byte(join(a)), 0o644))
		p, err := Plan(root, []byte(d), Options{})
		must(t, err)
		if hs, _ := p.Conflicts(); len(hs) > 0 {
			continue
		}
		if got := string(p.Files[0].After); got != join(c) {
			t.Fatalf("silently wrong:\na %q\nwant %q\ngot %q\n%s", join(a), join(c), got, d)
		}
		applied++
	}
	t.Logf("applied %d of %d", applied, n)
	if applied < n*8/10 {
		t.Errorf("applied %d of %d sequential pairs; most should apply", applied, n)
	}
}
