package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/smith-dev/smith/diffapply"
)

// TestApplyStreamsBigDiff applies a diff big enough to be planned file by
// file (more than 256 KiB, 30 files) from a file, which the plan reads a
// piece at a time, and from standard input, which it holds whole: the
// reports are the same, they name every hunk, a conflict in the last file
// refuses the whole diff before anything is written, and without it every
// file gets its result.
func TestApplyStreamsBigDiff(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	var diff strings.Builder
	want := map[string]string{}
	const files, lines = 30, 600
	for i := range files {
		name := fmt.Sprintf("p%d/f%d.txt", i%4, i)
		var before, after strings.Builder
		for k := range lines {
			fmt.Fprintf(&before, "line %d of file %d, unchanged by most hunks\n", k, i)
			if k%20 == 10 {
				fmt.Fprintf(&after, "LINE %d of file %d, changed\n", k, i)
			} else {
				fmt.Fprintf(&after, "line %d of file %d, unchanged by most hunks\n", k, i)
			}
		}
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(before.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		want[name] = after.String()
		fmt.Fprintf(&diff, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", name, name, name, name)
		for k := 10; k < lines; k += 20 {
			fmt.Fprintf(&diff, "@@ -%d,7 +%d,7 @@\n", k-2, k-2)
			for c := k - 3; c <= k+3; c++ {
				if c == k {
					fmt.Fprintf(&diff, "-line %d of file %d, unchanged by most hunks\n+LINE %d of file %d, changed\n", c, i, c, i)
				} else {
					fmt.Fprintf(&diff, " line %d of file %d, unchanged by most hunks\n", c, i)
				}
			}
		}
	}
	good := diff.String()
	if len(good) < 256<<10 {
		t.Fatalf("the diff is %d bytes: too small to be streamed", len(good))
	}
	// The last hunk of the last file removes a line the file does not have.
	bad := strings.Replace(good, fmt.Sprintf("-line 590 of file %d,", files-1), fmt.Sprintf("-line 590 of file %d, edited,", files-1), 1)
	run1 := func(stdin string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		s := &IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &errb, Getenv: func(k string) string {
			if k == "XDG_STATE_HOME" {
				return filepath.Join(dir, "state")
			}
			return ""
		}}
		code := run(append([]string{"apply", "-C", ws}, args...), s)
		return out.String(), errb.String(), code
	}
	for _, tc := range []struct {
		name, diff string
		code       int
	}{{"conflict", bad, ExitFailure}, {"clean", good, 0}} {
		patch := filepath.Join(dir, tc.name+".patch")
		if err := os.WriteFile(patch, []byte(tc.diff), 0o644); err != nil {
			t.Fatal(err)
		}
		fout, ferr, fcode := run1("", "--check", patch)
		sout, serr, scode := run1(tc.diff, "--check", "-")
		if fcode != tc.code || scode != tc.code {
			t.Fatalf("%s: --check exit %d from a file, %d from stdin, want %d\n%s", tc.name, fcode, scode, tc.code, ferr)
		}
		if d := cmp.Diff(sout+serr, fout+ferr); d != "" {
			t.Errorf("%s: the report from a file differs from stdin's (-stdin +file):\n%s", tc.name, d)
		}
		if n := strings.Count(fout, " applies at line "); tc.code == 0 && n != files*lines/20 {
			t.Errorf("%s: %d hunks reported as applying, want %d", tc.name, n, files*lines/20)
		}
		if tc.code != 0 && !strings.Contains(ferr, fmt.Sprintf("p1/f%d.txt: hunk 30 refused", files-1)) {
			t.Errorf("%s: the conflict is not reported:\n%s", tc.name, ferr)
		}
		out, errs, code := run1("", patch)
		if code != tc.code {
			t.Fatalf("%s: apply exit %d, want %d\n%s", tc.name, code, tc.code, errs)
		}
		wantOut := fout
		if tc.code == 0 {
			wantOut = strings.ReplaceAll(fout, " applies at ", " applied at ")
		}
		if d := cmp.Diff(wantOut, out); d != "" {
			t.Errorf("%s: the apply's report differs from --check's (-check +apply):\n%s", tc.name, d)
		}
		for name, after := range want {
			b, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(name)))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(b) == after; got != (tc.code == 0) {
				t.Errorf("%s: %s holds its result: %v", tc.name, name, got)
			}
		}
	}
}

// TestChunksReadAt reads standard input's chunks back at offsets that
// straddle chunk boundaries, up to and past the end.
func TestChunksReadAt(t *testing.T) {
	data := make([]byte, 2*chunkSize+12345)
	for i := range data {
		data[i] = byte(i * 7 / 3)
	}
	c, err := readChunks(iotest.HalfReader(bytes.NewReader(data)), int64(len(data)+1))
	if err != nil || c.size != int64(len(data)) || c.file != nil {
		t.Fatalf("readChunks: %d bytes, %v, file %v", c.size, err, c.file)
	}
	// Past the spill size the text goes to a file, and reads back the same.
	spilled, err := readChunks(iotest.HalfReader(bytes.NewReader(data)), chunkSize)
	if err != nil || spilled.size != int64(len(data)) || spilled.file == nil {
		t.Fatalf("readChunks with a spill: %d bytes, %v, file %v", spilled.size, err, spilled.file)
	}
	defer spilled.file.Close()
	if b, err := io.ReadAll(io.NewSectionReader(spilled.file, 0, spilled.size)); err != nil || !bytes.Equal(b, data) {
		t.Errorf("the spilled text reads back %d bytes, %v", len(b), err)
	}
	for _, r := range [][2]int{{0, 10}, {chunkSize - 3, 10}, {chunkSize - 1, chunkSize + 2}, {0, len(data)}, {len(data) - 5, 5}} {
		p := make([]byte, r[1])
		if n, err := c.ReadAt(p, int64(r[0])); n != r[1] || err != nil || !bytes.Equal(p, data[r[0]:r[0]+r[1]]) {
			t.Errorf("ReadAt(%d, %d): %d, %v", r[0], r[1], n, err)
		}
	}
	p := make([]byte, 10)
	if n, err := c.ReadAt(p, int64(len(data)-4)); n != 4 || err != io.EOF {
		t.Errorf("ReadAt past the end: %d, %v; want 4, EOF", n, err)
	}
}

// TestApplyChecksHugeDiffInPieces checks a diff past the size from which
// the plan reads it in pieces (diffapply's 16 MiB) and standard input is
// spilled to a temporary file: from a file and from standard input the
// report is the same and names every hunk, and nothing is left in the
// temporary folder.
func TestApplyChecksHugeDiffInPieces(t *testing.T) {
	if testing.Short() {
		t.Skip("plans a 17 MB diff")
	}
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ws := filepath.Join(dir, "ws")
	var diff strings.Builder
	const files, lines = 11, 24000
	hunks := 0
	for i := range files {
		name := fmt.Sprintf("d%d/f%d.go", i%3, i)
		var before strings.Builder
		for k := range lines {
			fmt.Fprintf(&before, "\tv%d := compute(%d) // file %d, a line long enough to make the diff big\n", k, k, i)
		}
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(before.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&diff, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", name, name, name, name)
		for k := 3; k+3 < lines; k += 10 {
			fmt.Fprintf(&diff, "@@ -%d,7 +%d,7 @@\n", k-2, k-2)
			for c := k - 3; c <= k+3; c++ {
				line := fmt.Sprintf("\tv%d := compute(%d) // file %d, a line long enough to make the diff big", c, c, i)
				if c == k {
					fmt.Fprintf(&diff, "-%s\n+%s // changed\n", line, line)
				} else {
					fmt.Fprintf(&diff, " %s\n", line)
				}
			}
			hunks++
		}
	}
	if diff.Len() < 16<<20 {
		t.Fatalf("the diff is %d bytes, below 16 MiB", diff.Len())
	}
	patch := filepath.Join(dir, "huge.patch")
	if err := os.WriteFile(patch, []byte(diff.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(stdin string, arg string) string {
		var out, errb bytes.Buffer
		s := &IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &errb, Getenv: func(string) string { return "" }}
		if code := run([]string{"apply", "--check", "-C", ws, arg}, s); code != 0 {
			t.Fatalf("apply --check %s: exit %d\n%s", arg, code, errb.String())
		}
		return out.String() + errb.String()
	}
	fromFile := check("", patch)
	fromStdin := check(diff.String(), "-")
	if fromFile != fromStdin {
		t.Errorf("the report from a file differs from stdin's:\n%s", cmp.Diff(fromStdin, fromFile))
	}
	if n := strings.Count(fromFile, " applies at line "); n != hunks {
		t.Errorf("%d hunks reported as applying, want %d", n, hunks)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in the temporary folder: %v", ents)
	}

	// Written through the engine: the as-applied diffs wait in a spool,
	// handed over one at a time under the memory limit; every file gets
	// its result, the report is --check's, and smith undo takes it back.
	before := snapshotTree(t, ws)
	smith := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		s := &IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(k string) string {
			if k == "XDG_STATE_HOME" {
				return filepath.Join(dir, "state")
			}
			return ""
		}}
		if code := run(args, s); code != 0 {
			t.Fatalf("smith %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}
	out := smith("apply", "-C", ws, patch)
	if want := strings.ReplaceAll(fromFile, " applies at ", " applied at "); !strings.HasPrefix(out, strings.TrimSuffix(want, "\n")) {
		t.Errorf("the apply's report is not --check's")
	}
	after := snapshotTree(t, ws)
	for name, text := range before {
		if n := strings.Count(after[name], " // changed\n"); n != (lines-6)/10+1 && n != (lines-6)/10 {
			t.Errorf("%s after the apply has %d changed lines", name, n)
		}
		if after[name] == text {
			t.Errorf("%s was not written", name)
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in the temporary folder after the apply: %v", ents)
	}
	smith("undo", "-C", ws)
	if d := cmp.Diff(before, snapshotTree(t, ws)); d != "" {
		t.Errorf("smith undo did not restore the files (-before +after):\n%.2000s", d)
	}
}

// snapshotTree maps each file under root (slash-separated, relative) to
// its text.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		m[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSpooledDiffsAreTheDiffs: the as-applied diffs a large patch keeps in
// a temporary file (diffsSpooled) are, file by file, what it would keep
// in memory and what the file's plan gives (File.Diff), with their sizes;
// the file has no name left in the file system, and each diff held in
// memory is let go once handed over.
func TestSpooledDiffsAreTheDiffs(t *testing.T) {
	root := t.TempDir()
	tmp := t.TempDir() // where the spool is made (os.TempDir)
	t.Setenv("TMPDIR", tmp)
	var diff strings.Builder
	for i := range 3 {
		name := fmt.Sprintf("d%d/f.txt", i)
		var before strings.Builder
		for k := range 200 {
			fmt.Fprintf(&before, "line %d of %s\n", k, name)
		}
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(before.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&diff, "--- a/%s\n+++ b/%s\n", name, name)
		for k := 20; k < 200; k += 40 {
			fmt.Fprintf(&diff, "@@ -%d,3 +%d,3 @@\n line %d of %s\n-line %d of %s\n+LINE %d of %s\n line %d of %s\n", k, k, k-1, name, k, name, k, name, k+1, name)
		}
	}
	whole, err := diffapply.Plan(root, []byte(diff.String()), diffapply.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan := func(keep keepDiffs) *streamedApply {
		t.Helper()
		sa, err := planStreamed(root, &patchText{name: "p", data: []byte(diff.String())}, diffapply.Options{}, nil, keep, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sa.close)
		if len(sa.patch.Files) != len(whole.Files) {
			t.Fatalf("%d files planned, want %d", len(sa.patch.Files), len(whole.Files))
		}
		return sa
	}
	mem, spooled := plan(diffsInMemory), plan(diffsSpooled)
	if spooled.spool == nil || len(spooled.spooled) != len(whole.Files) || len(spooled.diffs) != 0 {
		t.Fatalf("spooled plan: spool %v, %d spooled, %d in memory; want all %d spooled", spooled.spool != nil, len(spooled.spooled), len(spooled.diffs), len(whole.Files))
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("the spool has a name in the temporary folder: %v %v", left, err)
	}
	for i, f := range whole.Files {
		for name, sa := range map[string]*streamedApply{"in memory": mem, "spooled": spooled} {
			// A spooled (large) patch records go-udiff's diffs, as before
			// the plan wrote them.
			want := f.AppliedDiff(nil)
			if sa == spooled {
				want = f.Diff(nil)
			}
			a := sa.asApplied(sa.patch.Files[i])
			n := a.size
			got, plan, err := a.text()
			if err != nil {
				t.Fatal(err)
			}
			if got != want || n != int64(len(want)) {
				t.Errorf("%s: %s: as-applied diff of %d bytes (said %d), want %d bytes:\n%s", name, f.Path, len(got), n, len(want), got)
			}
			// Plans are kept beside diffs in memory only: a spooled patch
			// is too large to hold every file's plan.
			if (plan != nil) != (sa == mem) {
				t.Errorf("%s: %s: plan handed over: %v", name, f.Path, plan != nil)
			}
			if plan != nil && (len(plan.Hunks) != len(f.Hunks) || string(plan.After) != string(f.After)) {
				t.Errorf("%s: %s: the plan handed over has %d hunks and gives %q", name, f.Path, len(plan.Hunks), plan.After)
			}
		}
	}
	if len(mem.diffs) != 0 || len(mem.plans) != 0 {
		t.Errorf("%d diffs and %d plans still held in memory after they were handed over", len(mem.diffs), len(mem.plans))
	}
}

// TestMemLimitCoversWhatTheApplyHolds: the soft memory limit of a large
// apply is two and a half times the diff, and never below twice what the
// engine must hold of the files after nor three times the largest file
// (a small diff of large files).
func TestMemLimitCoversWhatTheApplyHolds(t *testing.T) {
	for _, c := range []struct {
		l    memLimit
		want int64
	}{
		{memLimit{diff: 100 << 20, after: 60 << 20, file: 5 << 20}, 250 << 20},
		{memLimit{diff: 20 << 20, after: 1 << 30, file: 5 << 20}, 2 << 30},
		{memLimit{diff: 20 << 20, after: 200 << 20, file: 300 << 20}, 900 << 20},
	} {
		if got := c.l.value(); got != c.want {
			t.Errorf("%+v: limit %d, want %d", c.l, got, c.want)
		}
	}
}

// TestMemLimitIsLifted: the limit and the GC setting of a large apply
// are the process's again once lifted (at the end, or when the apply must
// hold what the limit does not count), and a second lift changes nothing.
func TestMemLimitIsLifted(t *testing.T) {
	limit0, gc0 := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(gc0)
	l := newMemLimit(100<<20, true)
	if got := debug.SetMemoryLimit(-1); got != 250<<20 {
		t.Errorf("limit while applying: %d, want %d", got, 250<<20)
	}
	l.lift()
	l.lift()
	if got := debug.SetMemoryLimit(-1); got != limit0 {
		t.Errorf("limit after lift: %d, want %d", got, limit0)
	}
	if got := debug.SetGCPercent(gc0); got != gc0 {
		t.Errorf("GC percent after lift: %d, want %d", got, gc0)
	}
}

// TestApplyWritesItsPlanWhenNoDiffCarriesIt: a patch whose result has
// carriage returns no unified diff line carries (here a lone CR ending
// the file) cannot be recorded as its as-applied diff, which would make
// the engine write something else than smith apply planned and reported:
// smith apply writes its plan without the engine and says that smith
// undo does not cover it. So also for a patch of spoolDiffsFrom bytes or
// more (here made so by a large new file beside), whose as-applied diffs
// are go-udiff's, spooled.
func TestApplyWritesItsPlanWhenNoDiffCarriesIt(t *testing.T) {
	const patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-0\n\\ No newline at end of file\n+\r\r\n\\ No newline at end of file\n"
	big := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name  string
		patch string
	}{
		{"small", patch},
		{"spooled", patch + "--- /dev/null\n+++ b/big\n@@ -0,0 +1,17 @@\n" + strings.Repeat("+"+big+"\n", 17)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if int64(len(c.patch)) >= spoolDiffsFrom != (c.name == "spooled") {
				t.Fatalf("a patch of %d bytes: spooled %v", len(c.patch), c.name == "spooled")
			}
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "f"), []byte("0"), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := diffapply.Plan(root, []byte(c.patch), diffapply.Options{})
			if err != nil || len(p.Files) == 0 || len(p.Files[0].Hunks) != 1 || !p.Files[0].Hunks[0].OK() {
				t.Fatalf("plan: %v", err)
			}
			want := p.Files[0].After
			name := filepath.Join(t.TempDir(), "p.diff")
			if err := os.WriteFile(name, []byte(c.patch), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb strings.Builder
			state := t.TempDir()
			s := &IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(k string) string {
				if k == "XDG_STATE_HOME" {
					return state
				}
				return ""
			}}
			if code := run([]string{"apply", "-C", root, name}, s); code != 0 {
				t.Fatalf("smith apply: exit %d\n%s%s", code, out.String(), errb.String())
			}
			got, err := os.ReadFile(filepath.Join(root, "f"))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("f is %q, want %q, what smith apply planned", got, want)
			}
			if !strings.Contains(errb.String(), "smith undo will not cover this apply: no unified diff of f gives the text") {
				t.Errorf("stderr does not say that smith undo does not cover it:\n%s", errb.String())
			}
		})
	}
}

// TestStreamedApplyWritesWhatItPlanned: a patch written without the
// engine (none can be opened, or a file's as-applied diff cannot stand
// for its change) is written from the writes its streamed plan kept, not
// planned again from the diff, which is not read again (its reader fails
// here); the files hold what Plan gives, a copy's target included, whose
// diff for the engine is its creation. A patch of spoolDiffsFrom bytes or
// more keeps no writes (it is planned again).
func TestStreamedApplyWritesWhatItPlanned(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{"a.txt": "one\ntwo\nthree\n", "b.txt": "bee\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	diff := "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n" +
		"diff --git a/b.txt b/c.txt\nsimilarity index 100%\ncopy from b.txt\ncopy to c.txt\n"
	want, err := diffapply.Plan(root, []byte(diff), diffapply.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := planStreamed(root, &patchText{name: "p", data: []byte(diff)}, diffapply.Options{}, nil, diffsInMemory, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.close()
	if !sa.keepWrites || len(sa.kept) != 2 {
		t.Fatalf("kept %d writes (keeping: %v), want 2", len(sa.kept), sa.keepWrites)
	}
	var copied string
	for f, d := range sa.diffs {
		if f.Path == "c.txt" {
			copied = d
		}
	}
	if len(sa.diffs) != 2 || !strings.HasPrefix(copied, "--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+bee\n") {
		t.Errorf("%d as-applied diffs made, want 2; c.txt's:\n%s", len(sa.diffs), copied)
	}
	gone := &patchText{name: "p", r: failingReaderAt{}, size: int64(len(diff))}
	if err := sa.apply(t.Context(), root, gone, diffapply.Options{}, nil, ""); err != nil {
		t.Fatalf("apply: %v", err)
	}
	for _, f := range want.Files {
		got, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil || !bytes.Equal(got, f.After) {
			t.Errorf("%s: %q (%v), want %q", f.Path, got, err, f.After)
		}
	}
	big, err := planStreamed(root, &patchText{name: "p", data: []byte(diff)}, diffapply.Options{}, nil, diffsSpooled, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer big.close()
	if big.keepWrites || big.kept != nil {
		t.Errorf("a spooled plan kept %d writes", len(big.kept))
	}
}

// failingReaderAt is a patch that can no longer be read.
type failingReaderAt struct{}

func (failingReaderAt) ReadAt([]byte, int64) (int, error) { return 0, io.ErrUnexpectedEOF }
