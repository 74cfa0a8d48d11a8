package diffapply

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sourcegraph/go-diff/diff"
	"golang.org/x/tools/txtar"
)

// checkAppliedDiff asserts what the engine relies on when it records
// f.AppliedDiff(ids): planned against Before, it matches exactly where it
// says and gives exactly what Render(ids) gives, like go-udiff's diff
// (File.Diff), and it is empty exactly when that is. It reports whether
// the diff was written from the plan (not by go-udiff), and whether
// AppliedPlan gave a File (checked against Plan's).
func checkAppliedDiff(t *testing.T, root string, f *File, ids []int) (fast, planned bool) {
	t.Helper()
	got, slow := f.AppliedDiff(ids), f.Diff(ids)
	_, _, after := f.diffSides(ids)
	_, _, _, fast = f.appliedEdits(ids, after)
	if (got == "") != (slow == "") {
		t.Fatalf("%s ids %v: AppliedDiff %q, go-udiff %q", f.Path, ids, got, slow)
	}
	d, g, ok := f.AppliedPlan(ids, true)
	if d != got {
		t.Fatalf("%s ids %v: AppliedPlan's diff is not AppliedDiff's", f.Path, ids)
	}
	if got == "" {
		return fast, false
	}
	if err := newSideHolds(got, after); fast && err != nil { // go-udiff numbers the new side of hunks after joined ones wrongly
		t.Fatalf("%s ids %v: %v\n%s", f.Path, ids, err, got)
	}
	res := replan(t, root, f, got, false)
	faithful := res != nil && bytes.Equal(res.After, after)
	if ok != faithful || fast && !faithful {
		var gives []byte
		if res != nil {
			gives = res.After
		}
		t.Fatalf("%s ids %v (from the plan: %v, faithful by AppliedPlan: %v): the as-applied diff gives\n%q\nRender gives\n%q\ndiff:\n%s\ngo-udiff:\n%s", f.Path, ids, fast, ok, gives, after, got, slow)
	}
	if g != nil {
		// Built from the plan or planned: Plan's File of the diff either way.
		samePlan(t, g, res, got)
	}
	// go-udiff's diff (a large patch's): CheckedDiff says whether it is
	// faithful, planning it only when there is a carriage return.
	cd, cok := f.CheckedDiff(ids)
	if cd != slow {
		t.Fatalf("%s ids %v: CheckedDiff's diff is not Diff's", f.Path, ids)
	}
	if res := replan(t, root, f, slow, false); cok != (res != nil && bytes.Equal(res.After, after)) {
		t.Fatalf("%s ids %v: CheckedDiff says faithful %v, planning go-udiff's diff says otherwise\n%s", f.Path, ids, cok, slow)
	}
	return fast, g != nil
}

// samePlan asserts that got (AppliedPlan's) is the File want (Plan's of
// diff) in everything a caller sees: the file's and its hunks' fields, the
// texts, and the rendering of any subset of hunks.
func samePlan(t *testing.T, got, want *File, diff string) {
	t.Helper()
	opts := []cmp.Option{cmpopts.IgnoreUnexported(File{}), cmpopts.IgnoreFields(Hunk{}, "File"), cmpopts.IgnoreFields(File{}, "Path")}
	if d := cmp.Diff(want, got, opts...); d != "" {
		t.Fatalf("AppliedPlan's File differs from Plan's (-Plan +AppliedPlan):\n%s\ndiff:\n%s", d, diff)
	}
	for _, ids := range subsets(want) {
		if w, g := want.Render(ids), got.Render(ids); !bytes.Equal(w, g) {
			t.Fatalf("ids %v: AppliedPlan's File renders %q, Plan's %q\ndiff:\n%s", ids, g, w, diff)
		}
	}
}

// newSideHolds checks the new side of every hunk of d against after:
// its lines are there, at the line its header says.
func newSideHolds(d string, after []byte) error {
	_, body, _ := strings.Cut(d, "\n+++ ")
	_, body, _ = strings.Cut(body, "\n")
	// With KeepCR: a line that ends in CRs before its CRLF ("\r\r\n")
	// keeps them all (without it go-diff drops one, and the line read no
	// longer matched after's).
	hunks, err := diff.ParseHunksOptions([]byte(body), diff.ParseOptions{KeepCR: true})
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(after), "\n")
	for i, h := range hunks {
		var side []string
		for _, l := range strings.SplitAfter(string(h.Body), "\n") {
			if l != "" && l[0] != '-' {
				side = append(side, l[1:])
			}
		}
		if n := len(side); n > 0 && !strings.HasSuffix(string(h.Body), "\n") {
			side[n-1] = strings.TrimSuffix(side[n-1], "\n") // the marker's line
		}
		at := int(h.NewStartLine) - 1
		if h.NewLines == 0 {
			at++
		}
		if int(h.NewLines) != len(side) || at < 0 || at+len(side) > len(lines) {
			return fmt.Errorf("hunk %d: new side +%d,%d does not fit %d lines after", i+1, h.NewStartLine, h.NewLines, len(lines))
		}
		for k, l := range side {
			if lines[at+k] != l {
				return fmt.Errorf("hunk %d: new side line %d is %q, after has %q", i+1, at+k+1, l, lines[at+k])
			}
		}
	}
	return nil
}

// replan plans d against f's text before, as the engine does: nil when
// a hunk conflicts. With exact, every hunk must match exactly (as when
// AppliedPlan gives a plan it built; a lone CR ending a file, in its diff
// as in go-udiff's, reads back as a CRLF line end and matches
// whitespace-insensitively).
func replan(t *testing.T, root string, f *File, d string, exact bool) *File {
	t.Helper()
	src := f.Path
	if f.OldPath != "" {
		src = f.OldPath
	}
	p, err := Plan(root, []byte(d), Options{Target: src, ReadFile: func(rel string) ([]byte, bool, error) {
		if rel != src {
			return nil, false, fmt.Errorf("the diff names %s", rel)
		}
		return f.Before, f.Existed, nil
	}})
	if err != nil || len(p.Files) != 1 {
		t.Fatalf("%s: planning the as-applied diff: %v\n%s", f.Path, err, d)
	}
	g := p.Files[0]
	for _, h := range g.Hunks {
		if !h.OK() && !exact {
			return nil
		}
		if !h.OK() || exact && h.Level != LevelExact {
			t.Fatalf("%s: the as-applied diff's hunk %d: %s\n%s", f.Path, h.Index, h.Describe(), d)
		}
	}
	if g.Conflict != nil {
		if !exact {
			return nil
		}
		t.Fatalf("%s: the as-applied diff: %s\n%s", f.Path, g.Conflict, d)
	}
	return g
}

// subsets are the choices of hunks tried for f: all, each alone, every
// other one.
func subsets(f *File) [][]int {
	out := [][]int{nil}
	var odd []int
	for i, h := range f.Hunks {
		if !h.OK() {
			continue
		}
		if len(f.Hunks) > 1 {
			out = append(out, []int{h.ID})
		}
		if i%2 == 0 {
			odd = append(odd, h.ID)
		}
	}
	if len(f.Hunks) > 2 {
		out = append(out, odd)
	}
	return out
}

func checkPatch(t *testing.T, root string, p *Patch) (fast, planned, all int) {
	t.Helper()
	for _, f := range p.Files {
		if f.Conflict != nil {
			continue
		}
		for _, ids := range subsets(f) {
			if f.Op == OpDelete && ids != nil {
				continue // a deletion is applied whole
			}
			all++
			ok, pl := checkAppliedDiff(t, root, f, ids)
			if ok {
				fast++
			}
			if pl {
				planned++
			}
		}
	}
	return fast, planned, all
}

// TestAppliedDiffCases checks the as-applied diff of every planned file of
// testdata/cases, for several choices of hunks.
func TestAppliedDiffCases(t *testing.T) {
	paths, _ := filepath.Glob("testdata/cases/*.txtar")
	fast, planned, all := 0, 0, 0
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c := loadCase(t, ar)
			root := t.TempDir()
			for name, data := range c.in {
				p := filepath.Join(root, filepath.FromSlash(name))
				must(t, os.MkdirAll(filepath.Dir(p), 0o755))
				must(t, os.WriteFile(p, data, 0o644))
			}
			p, err := Plan(root, c.diff, c.opts)
			if err != nil {
				return // refused whole: no as-applied diff
			}
			f, pl, a := checkPatch(t, root, p)
			fast, planned, all = fast+f, planned+pl, all+a
		})
	}
	t.Logf("%d of %d as-applied diffs written from the plan, %d with their plan", fast, all, planned)
	if fast < all/2 {
		t.Errorf("only %d of %d as-applied diffs were written from the plan", fast, all)
	}
}

// TestAppliedDiffRandom checks the as-applied diff of random edits of
// texts with many repeated lines (where a line diff has a choice), in LF,
// CRLF and mixed files, with and without a final newline, with diffs of
// 0 to 3 lines of context whose line numbers may be off.
func TestAppliedDiffRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 17))
	words := []string{"a", "b", "}", "", "\tx := 1", "return", "-- x", "++ y", "@@ z", "\\ w", " "}
	fast, planned, all := 0, 0, 0
	for round := range 600 {
		var before []string
		for range r.IntN(30) {
			before = append(before, words[r.IntN(len(words))])
		}
		after := make([]string, 0, len(before)+5)
		for i := 0; i <= len(before); i++ {
			switch r.IntN(8) {
			case 0: // insert
				after = append(after, words[r.IntN(len(words))])
			case 1: // replace
				after = append(after, "new "+strconv.Itoa(i))
				continue
			case 2: // delete
				continue
			}
			if i < len(before) {
				after = append(after, before[i])
			}
		}
		eol := []string{"\n", "\r\n", "mixed"}[round%3]
		join := func(ls []string, final bool) string {
			var b strings.Builder
			for i, l := range ls {
				b.WriteString(l)
				e := eol
				if e == "mixed" {
					e = []string{"\n", "\r\n"}[i%2]
				}
				if i < len(ls)-1 || final {
					b.WriteString(e)
				}
			}
			return b.String()
		}
		bt, at := join(before, r.IntN(4) > 0), join(after, r.IntN(4) > 0)
		context := r.IntN(4)
		d, err := udiff.ToUnified("a/f", "b/f", bt, udiff.Lines(bt, at), max(1, context))
		if err != nil {
			t.Fatal(err)
		}
		if d == "" {
			continue
		}
		if r.IntN(3) == 0 {
			d = shiftHeaders(d, r.IntN(5)-2)
		}
		root := t.TempDir()
		must(t, os.WriteFile(filepath.Join(root, "f"), []byte(bt), 0o644))
		p, err := Plan(root, []byte(d), Options{})
		if err != nil {
			continue
		}
		f, pl, a := checkPatch(t, root, p)
		fast, planned, all = fast+f, planned+pl, all+a
	}
	t.Logf("%d of %d as-applied diffs written from the plan, %d with their plan", fast, all, planned)
	if planned < all/3 {
		t.Errorf("only %d of %d as-applied diffs came with their plan", planned, all)
	}
	if fast < all/2 {
		t.Errorf("only %d of %d as-applied diffs were written from the plan", fast, all)
	}
}

// shiftHeaders moves every hunk's stated old start by by lines.
func shiftHeaders(d string, by int) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(d, "\n") {
		if rest, ok := strings.CutPrefix(l, "@@ -"); ok {
			num, tail, _ := strings.Cut(rest, ",")
			if n, err := strconv.Atoi(num); err == nil && n+by > 0 && !strings.Contains(num, " ") {
				l = "@@ -" + strconv.Itoa(n+by) + "," + tail
			}
		}
		b.WriteString(l)
	}
	return b.String()
}

// TestAppliedDiffFuzzCorpus checks the as-applied diffs of the pure
// (noise-free) inputs of FuzzApply's corpus.
func TestAppliedDiffFuzzCorpus(t *testing.T) {
	paths, _ := filepath.Glob("testdata/fuzz/FuzzApply/*")
	if len(paths) == 0 {
		t.Fatal("no corpus")
	}
	for _, path := range paths {
		vals := readCorpusEntry(t, path)
		if len(vals) != 4 {
			t.Fatalf("%s: %d values", path, len(vals))
		}
		before, after := vals[0], vals[1]
		root := t.TempDir()
		must(t, os.WriteFile(filepath.Join(root, "f"), []byte(before), 0o644))
		d := udiff.Unified("a/f", "b/f", before, after)
		p, err := Plan(root, []byte(d), Options{})
		if err != nil {
			continue
		}
		checkPatch(t, root, p)
	}
}

// readCorpusEntry reads the quoted values of a "go test fuzz v1" file
// (its numbers are returned as they are written).
func readCorpusEntry(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		open := strings.IndexByte(l, '(')
		v := l[open+1 : len(l)-1]
		if s, err := strconv.Unquote(v); err == nil {
			v = s
		}
		out = append(out, v)
	}
	return out
}

// FuzzAppliedDiff plans go-udiff's diff of a pair of texts and checks the
// as-applied diff of its hunks (checkAppliedDiff).
func FuzzAppliedDiff(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nB\nc\n"), uint8(3))
	f.Add([]byte("a\r\nb\r\nc"), []byte("a\r\nb\nc\nd"), uint8(1))
	f.Add([]byte("}\n\n}\n\nx\n"), []byte("}\n\nx\n}\n\n"), uint8(2))
	f.Fuzz(func(t *testing.T, before, after []byte, context uint8) {
		d, err := udiff.ToUnified("a/f", "b/f", string(before), udiff.Lines(string(before), string(after)), 1+int(context%3))
		if err != nil || d == "" {
			return
		}
		root := t.TempDir()
		must(t, os.WriteFile(filepath.Join(root, "f"), before, 0o644))
		p, err := Plan(root, []byte(d), Options{})
		if err != nil {
			return
		}
		checkPatch(t, root, p)
	})
}

// sparseChanges is a text of 200 lines and the same with every tenth line
// changed: changes more than six lines apart, as in smith apply's benchmark.
func sparseChanges() (before, after string) {
	var b, a strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "\tvalue%d := compute(%d)\n", i, i)
		if i%10 == 3 {
			fmt.Fprintf(&a, "\tvalue%d := computeFaster(%d)\n", i, i)
		} else {
			fmt.Fprintf(&a, "\tvalue%d := compute(%d)\n", i, i)
		}
	}
	return b.String(), a.String()
}

// TestAppliedDiffIsUdiffs checks that a diff of changes more than six
// lines apart (smith apply's benchmark) is written from the plan, byte for
// byte as go-udiff writes it.
func TestAppliedDiffIsUdiffs(t *testing.T) {
	before, after := sparseChanges()
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "f.go"), []byte(before), 0o644))
	d := udiff.Unified("a/f.go", "b/f.go", before, after)
	p, err := Plan(root, []byte(d), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := p.Files[0]
	for _, ids := range [][]int{nil, {3}, {1, 2, 20}} {
		got, g, _ := f.AppliedPlan(ids, true)
		if g == nil {
			t.Fatalf("ids %v: not written from the plan", ids)
		}
		if want := f.Diff(ids); got != want {
			t.Errorf("ids %v: as-applied diff\n%s\ngo-udiff's\n%s", ids, got, want)
		}
	}
}

// TestAppliedPlanOfAnEmptyFile: lines added to an existing empty file
// ("@@ -0,0 +1,2 @@").
func TestAppliedPlanOfAnEmptyFile(t *testing.T) {
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "f"), nil, 0o644))
	p, err := Plan(root, []byte("--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+one\n+two\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, planned, _ := checkPatch(t, root, p); planned != 1 {
		t.Errorf("%d plans made, want 1", planned)
	}
}

// TestAppliedPlanSharesHunks: a hunk the as-applied diff writes as the
// diff had it (three lines of context, matched where it says) is f's own
// in AppliedPlan's File, parsed once; a hunk written otherwise (the diff
// had one line of context) is built anew. Either way the File is Plan's
// of the diff (checkPatch).
func TestAppliedPlanSharesHunks(t *testing.T) {
	before, after := sparseChanges()
	for _, context := range []int{3, 1} {
		root := t.TempDir()
		must(t, os.WriteFile(filepath.Join(root, "f.go"), []byte(before), 0o644))
		d, err := udiff.ToUnified("a/f.go", "b/f.go", before, udiff.Lines(before, after), context)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Plan(root, []byte(d), Options{})
		if err != nil {
			t.Fatal(err)
		}
		f := p.Files[0]
		own := map[*hunk]bool{}
		for _, j := range f.jobs {
			own[j.h] = true
		}
		for _, ids := range [][]int{nil, {3}, {1, 2, 20}} {
			_, g, ok := f.AppliedPlan(ids, true)
			if g == nil || !ok {
				t.Fatalf("context %d, ids %v: no plan", context, ids)
			}
			for _, j := range g.jobs {
				if own[j.h] != (context == 3) {
					t.Errorf("context %d, ids %v: hunk %d shared %v", context, ids, j.pub.Index, own[j.h])
				}
			}
		}
		if _, planned, all := checkPatch(t, root, p); planned != all {
			t.Errorf("context %d: %d of %d as-applied diffs came with their plan", context, planned, all)
		}
	}
}

// TestAppliedPlanOfCreationAndDeletion: a creation and a whole deletion
// get their plan built from the plan too (not by planning their diff
// again), sharing the diff's hunks, and it is Plan's File of the diff.
func TestAppliedPlanOfCreationAndDeletion(t *testing.T) {
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "old.txt"), []byte("one\ntwo\nthree\n"), 0o644))
	d := "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n" +
		"diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-one\n-two\n-three\n"
	p, err := Plan(root, []byte(d), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Files) != 2 || p.Files[0].Op != OpCreate || p.Files[1].Op != OpDelete {
		t.Fatalf("plan: %+v", p.Files)
	}
	for _, f := range p.Files {
		// Planned without Mode, as the diff's own mode line would be
		// left out of the as-applied diff.
		f.Mode = 0
		_, g, ok := f.AppliedPlan(nil, true)
		if g == nil || !ok || g.Op != f.Op {
			t.Fatalf("%s: plan %+v, ok %v", f.Path, g, ok)
		}
		if len(g.jobs) != 1 || g.jobs[0].h != f.jobs[0].h {
			t.Errorf("%s: the plan does not share the diff's hunk", f.Path)
		}
	}
	if _, planned, all := checkPatch(t, root, p); planned != all || all != 2 {
		t.Errorf("%d of %d as-applied diffs came with their plan, want 2", planned, all)
	}
}
