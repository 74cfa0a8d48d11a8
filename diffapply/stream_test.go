package diffapply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

// planClassic is Plan as it was before plans streamed (parse everything,
// plan every file, then collect), kept as the oracle the streamed plan
// must agree with.
func planClassic(root string, diff []byte, opts Options) (*Patch, error) {
	ws, err := OpenWorkspace(root, opts.Protect...)
	if err != nil {
		return nil, fmt.Errorf("workspace root: %w", err)
	}
	defer ws.Close()
	fds, sc, err := parse(diff)
	if err != nil {
		return nil, err
	}
	fds, sections := mergeRepeated(fds)
	if len(sections) > 0 {
		n := 0
		for _, secs := range sections {
			n += len(secs) - 1
		}
		sc.repairs = append(sc.repairs, fmt.Sprintf("merged %d repeated file section(s) into one each; their hunks are matched against the same original", n))
	}
	if opts.Target != "" && len(fds) != 1 {
		return nil, fmt.Errorf("a target path was given but the diff has %d files", len(fds))
	}
	p := &Patch{Root: ws.root, Repairs: sc.repairs, protect: opts.Protect}
	paths := newPathCache()
	if opts.Strip == 0 && opts.Target == "" {
		repairs, err := foreignNames(ws, fds, source{ws: ws, readFile: opts.ReadFile, seen: paths})
		if err != nil {
			return nil, err
		}
		p.Repairs = append(p.Repairs, repairs...)
		if k, example := detectStrip(ws, fds, source{ws: ws, readFile: opts.ReadFile, seen: paths}); k > 0 {
			opts.Strip = k
			p.Repairs = append(p.Repairs, fmt.Sprintf("names like %s only match files with %d leading components removed; applied as -p%d", example, k, k))
		}
	}
	planned := make([]*File, len(fds))
	errs := make([]error, len(fds))
	plan := func(i int) {
		if opts.Reverse {
			fds[i].reverse()
		}
		planned[i], errs[i] = planFile(source{ws: ws, readFile: opts.ReadFile, seen: paths}, fds[i], opts)
	}
	if opts.ReadFile != nil || opts.Select != nil {
		// Callbacks are documented to run on Plan's goroutine.
		for i := range fds {
			plan(i)
		}
	} else {
		eachParallel(len(fds), len(diff), plan)
	}
	for i, fd := range fds {
		if secs := sections[fd]; secs != nil && errs[i] == nil && planned[i] != nil {
			if f := planSequential(ws, paths, planned[i], secs, opts); f != nil {
				planned[i] = f
				p.Repairs = append(p.Repairs, fmt.Sprintf("%s: instead, applied its %d sections one after another, as git apply does: some of their hunks only match the text the sections before them make; the hunks shown are their combined effect", f.Path, len(secs)))
			}
		}
	}
	seen := map[string]bool{}
	nextHunk := 1
	for i, fd := range fds {
		f, err := planned[i], errs[i]
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue // not selected
		}
		for _, path := range []string{f.Path, f.OldPath} {
			if path != "" && seen[path] {
				return nil, &ParseError{Line: fd.line, Msg: fmt.Sprintf("%s appears twice in the diff; split it into two diffs", path)}
			}
		}
		seen[f.Path] = true
		if f.OldPath != "" {
			seen[f.OldPath] = true
		}
		for _, j := range f.jobs {
			if j.h.eolPair && j.done && j.place.reachesEOF {
				what := "adds the final newline"
				if !f.lines.noFinalNewline() {
					what = "removes the final newline"
				}
				p.Repairs = append(p.Repairs, fmt.Sprintf("%s hunk %d: it removes its last line and adds it back unchanged at the end of the file, without a '\\ No newline at end of file' marker; read as the change it is: it %s", f.Path, j.pub.Index, what))
			}
		}
		f.ID = len(p.Files) + 1
		for _, h := range f.Hunks {
			h.ID = nextHunk
			nextHunk++
		}
		p.Files = append(p.Files, f)
	}
	return p, nil
}

// planModes are the ways a diff can be planned; every one must give what
// planClassic gives.
var planModes = []struct {
	name string
	plan func(root string, diff []byte, opts Options) (*Patch, error)
}{
	{"Plan", Plan},
	{"whole", func(root string, diff []byte, opts Options) (*Patch, error) {
		return collect(root, diffSource{mem: string(diff)}, opts, math.MaxInt, scanPiece)
	}},
	{"streamed", func(root string, diff []byte, opts Options) (*Patch, error) {
		return collect(root, diffSource{mem: string(diff)}, opts, 0, 1)
	}},
	{"streamed-64", func(root string, diff []byte, opts Options) (*Patch, error) {
		return collect(root, diffSource{mem: string(diff)}, opts, 0, 64)
	}},
	{"reader", func(root string, diff []byte, opts Options) (*Patch, error) {
		return collect(root, diffSource{r: bytes.NewReader(diff), size: int64(len(diff))}, opts, 0, 1)
	}},
	{"reader-7", func(root string, diff []byte, opts Options) (*Patch, error) {
		return collect(root, diffSource{r: bytes.NewReader(diff), size: int64(len(diff))}, opts, 0, 7)
	}},
	{"released", func(root string, diff []byte, opts Options) (*Patch, error) {
		// Each file copied whole, then handed back: the plan reuses its
		// memory for the next file, which must change nothing of either.
		var files []*File
		p, err := PlanFiles(root, diff, opts, func(f *File) error {
			files = append(files, keepOf(f))
			f.Release()
			return nil
		})
		if p != nil {
			p.Files = files
		}
		return p, err
	}},
	{"PlanReader", func(root string, diff []byte, opts Options) (*Patch, error) {
		var files []*File
		p, err := PlanReader(root, bytes.NewReader(diff), int64(len(diff)), opts, func(f *File) error {
			files = append(files, f)
			return nil
		})
		if p != nil {
			p.Files = files
		}
		return p, err
	}},
}

// keepOf copies f with its own texts and line tables, which Release
// hands back; its hunks are f's.
func keepOf(f *File) *File {
	g := *f
	g.bin = nil
	g.Before, g.After = bytes.Clone(f.Before), bytes.Clone(f.After)
	g.lines = lines{text: make([]string, len(f.lines.text)), eol: slices.Clone(f.lines.eol)}
	for i, s := range f.lines.text {
		g.lines.text[i] = strings.Clone(s)
	}
	return &g
}

func collect(root string, src diffSource, opts Options, min, piece int) (*Patch, error) {
	var files []*File
	p, err := planStream(root, src, opts, func(f *File) error {
		files = append(files, f)
		return nil
	}, min, piece)
	if p != nil {
		p.Files = files
	}
	return p, err
}

// dumpPlan is everything a plan tells: the refusal, or the Patch as JSON
// with every file's content before and after and its as-applied diff.
func dumpPlan(p *Patch, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	b, jerr := json.MarshalIndent(p, "", " ")
	if jerr != nil {
		return "json: " + jerr.Error()
	}
	s := string(b) + "\n"
	for _, f := range p.Files {
		s += fmt.Sprintf("%s: before %q\nafter %q\ndiff %q\nreverse %q\n", f.Path, f.Before, f.After, f.Diff(nil), f.ReverseDiff(nil))
	}
	return s
}

// checkModes plans diff in root in every mode, with opts and reversed,
// and reports where a mode disagrees with planClassic.
func checkModes(t *testing.T, root string, diff []byte, opts Options) {
	t.Helper()
	for _, o := range []Options{opts, {Strip: opts.Strip, Target: opts.Target, Reverse: !opts.Reverse}, {Strip: opts.Strip, Target: opts.Target, Strict: true}} {
		want := dumpPlan(planClassic(root, diff, o))
		for _, m := range planModes {
			got := dumpPlan(m.plan(root, diff, o))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s (reverse %v, strict %v) differs from the plan before streaming (-want +got):\n%s", m.name, o.Reverse, o.Strict, d)
			}
		}
	}
}

// TestStreamedPlanEqualsClassic plans every case of the suite in every
// mode: the streamed plan, in pieces as small as one line, from memory and
// through a reader, gives the same Patch (files, hunks, contents, repairs)
// or the same refusal as planning the whole diff at once.
func TestStreamedPlanEqualsClassic(t *testing.T) {
	paths, err := filepath.Glob("testdata/cases/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c := loadCase(t, ar)
			root := t.TempDir()
			writeBytes(t, root, c.in)
			checkModes(t, root, c.diff, c.opts)
		})
	}
}

func writeBytes(t *testing.T, root string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, data, 0o644))
	}
}

// FuzzStreamedPlan checks the streamed plan against planClassic on any
// diff (and workspace): a txtar archive whose "diff" section is the diff
// and whose in/ sections are the files.
func FuzzStreamedPlan(f *testing.F) {
	paths, _ := filepath.Glob("testdata/cases/*.txtar")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, archive []byte) {
		ar := txtar.Parse(archive)
		var diff []byte
		root := t.TempDir()
		for _, file := range ar.Files {
			name, data := decodeName(file.Name, file.Data)
			switch {
			case name == "diff":
				diff = data
			case strings.HasPrefix(name, "in/") && filepath.IsLocal(strings.TrimPrefix(name, "in/")):
				p := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(name, "in/")))
				if os.MkdirAll(filepath.Dir(p), 0o755) == nil {
					os.WriteFile(p, data, 0o644)
				}
			}
		}
		checkModes(t, root, diff, Options{})
	})
}

// TestPlanFilesOneAtATime shows that a streamed plan hands over each file
// before it reads the next one, and keeps none: the consumer sees the
// files one at a time, and an error from it stops the plan there.
func TestPlanFilesOneAtATime(t *testing.T) {
	root := t.TempDir()
	var diff strings.Builder
	files := map[string]string{}
	for i := range 4 {
		name := fmt.Sprintf("f%d.txt", i)
		files[name] = "one\ntwo\nthree\n"
		fmt.Fprintf(&diff, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n", name, name, name, name)
	}
	writeFiles(t, root, files)
	var events []string
	opts := Options{ReadFile: func(path string) ([]byte, bool, error) {
		if e := "read " + path; len(events) == 0 || events[len(events)-1] != e {
			events = append(events, e) // existence, then content
		}
		b, err := os.ReadFile(filepath.Join(root, path))
		return b, err == nil, nil
	}}
	// Pieces of one line: the diff is streamed even though it is small.
	var got []*File
	p, err := planStream(root, diffSource{mem: diff.String()}, opts, func(f *File) error {
		events = append(events, "yield "+f.Path)
		if string(f.After) != "one\nTWO\nthree\n" || f.ID != len(got)+1 || f.Hunks[0].ID != len(got)+1 {
			t.Errorf("file %d: %+v after %q", len(got)+1, f, f.After)
		}
		got = append(got, f)
		return nil
	}, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Files != nil {
		t.Errorf("PlanFiles kept the files: %d", len(p.Files))
	}
	var want []string
	for i := range 4 {
		want = append(want, fmt.Sprintf("read f%d.txt", i), fmt.Sprintf("yield f%d.txt", i))
	}
	// Names are checked first (does f0.txt exist?); from then on each
	// file is read and handed over before the next.
	if i := len(events) - len(want); i < 0 || cmp.Diff(want, events[i:]) != "" {
		t.Errorf("events %q, want them to end with %q", events, want)
	}

	stop := errors.New("enough")
	events = nil
	_, err = PlanFiles(root, []byte(diff.String()), opts, func(f *File) error {
		events = append(events, "yield "+f.Path)
		return stop
	})
	if err != stop {
		t.Errorf("PlanFiles returned %v, want the consumer's error", err)
	}
	if n := strings.Count(strings.Join(events, "\n"), "yield"); n != 1 {
		t.Errorf("after the consumer's error the plan went on: %q", events)
	}
}

// TestPlanReaderReadsInPieces plans a diff through a reader that counts
// what it is asked for, streamed as a diff of streamMin bytes would be:
// the biggest read is a piece or one file's section, never the whole
// diff, and the plan equals Plan's.
func TestPlanReaderReadsInPieces(t *testing.T) {
	root := t.TempDir()
	var diff strings.Builder
	files := map[string]string{}
	for i := range 40 {
		name := fmt.Sprintf("d%d/f%d.txt", i%3, i)
		var before, after strings.Builder
		for k := range 400 {
			fmt.Fprintf(&before, "line %d of file %d\n", k, i)
			if k%10 == 5 {
				fmt.Fprintf(&after, "LINE %d of file %d\n", k, i)
			} else {
				fmt.Fprintf(&after, "line %d of file %d\n", k, i)
			}
		}
		files[name] = before.String()
		diff.WriteString(unifiedGit(name, before.String(), after.String()))
	}
	writeFiles(t, root, files)
	d := []byte(diff.String())
	r := &countingReader{r: bytes.NewReader(d)}
	var streamed []*File
	p, err := planStream(root, diffSource{r: r, size: int64(len(d))}, Options{}, func(f *File) error {
		streamed = append(streamed, f)
		return nil
	}, len(d), scanPiece)
	if err != nil {
		t.Fatal(err)
	}
	p.Files = streamed
	whole, err := Plan(root, d, Options{})
	if diff := cmp.Diff(dumpPlan(whole, err), dumpPlan(p, nil)); diff != "" {
		t.Errorf("PlanReader differs from Plan (-Plan +PlanReader):\n%s", diff)
	}
	if r.max > len(d)/4 {
		t.Errorf("the biggest read was %d bytes of a %d-byte diff", r.max, len(d))
	}
}

type countingReader struct {
	r   io.ReaderAt
	max int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.max = max(c.max, len(p))
	return c.r.ReadAt(p, off)
}

// unifiedGit is a diff of one file with git's "diff --git" line.
func unifiedGit(name, before, after string) string {
	return "diff --git a/" + name + " b/" + name + "\n" + udiff.Unified("a/"+name, "b/"+name, before, after)
}

// TestWhere holds Where (built by appending) to the text it had when it
// was formatted with fmt, for every level and offset sign.
func TestWhere(t *testing.T) {
	for _, lv := range []Level{"", LevelExact, LevelOffset, LevelUnique, LevelWhitespace, LevelFuzz} {
		for _, off := range []int{-12, 0, 7} {
			h := &Hunk{Level: lv, Line: 120, Offset: off, Fuzz: 2}
			var notes []string
			if off != 0 {
				notes = append(notes, fmt.Sprintf("offset %+d", off))
			}
			switch lv {
			case LevelExact:
				if off == 0 {
					notes = append(notes, "exact")
				}
			case LevelUnique:
				notes = append(notes, "unique match, no line numbers")
			case LevelWhitespace:
				notes = append(notes, "whitespace-insensitive")
			case LevelFuzz:
				notes = append(notes, fmt.Sprintf("fuzz %d, whitespace-insensitive", h.Fuzz))
			}
			if want := fmt.Sprintf("at line %d (%s)", h.Line, strings.Join(notes, ", ")); h.Where() != want {
				t.Errorf("level %q offset %d: %q, want %q", lv, off, h.Where(), want)
			}
		}
	}
}

// TestReleaseReusesMemory: a file handed back (File.Release) lends its
// memory to the next file of the streamed plan, which reads, splits and
// renders into it; one not handed back keeps its own; and each file's
// plan is the one it has without any reuse.
func TestReleaseReusesMemory(t *testing.T) {
	root := t.TempDir()
	var diff strings.Builder
	files := map[string][]byte{}
	for i, name := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		var before, after strings.Builder
		for k := range 40 {
			fmt.Fprintf(&before, "file %d line %d\n", i, k)
			if k == 20 {
				fmt.Fprintf(&after, "file %d line %d changed\n", i, k)
			} else {
				fmt.Fprintf(&after, "file %d line %d\n", i, k)
			}
		}
		files[name] = []byte(before.String())
		diff.WriteString(unifiedGit(name, before.String(), after.String()))
	}
	writeBytes(t, root, files)
	want, err := Plan(root, []byte(diff.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	type mem struct{ before, after *byte }
	var seen []mem
	i := 0
	_, err = PlanFiles(root, []byte(diff.String()), Options{}, func(f *File) error {
		w := want.Files[i]
		if !bytes.Equal(f.Before, w.Before) || !bytes.Equal(f.After, w.After) || f.BeforeHash != w.BeforeHash {
			t.Errorf("%s: planned with reused memory, it differs from Plan's", f.Path)
		}
		seen = append(seen, mem{unsafe.SliceData(f.Before), unsafe.SliceData(f.After)})
		if i != 1 { // b.txt is kept: it has a.txt's memory, c.txt new memory, d.txt c.txt's
			f.Release()
			if f.Before != nil || f.After != nil {
				t.Errorf("%s: Release left its texts", f.Path)
			}
		}
		i++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 4 {
		t.Fatalf("%d files planned, want 4", len(seen))
	}
	if seen[1] != seen[0] || seen[3] != seen[2] {
		t.Errorf("b.txt and d.txt did not reuse the memory a.txt and c.txt handed back: %v", seen)
	}
	if seen[2].before == seen[1].before || seen[2].after == seen[1].after {
		t.Errorf("c.txt was given b.txt's memory while b.txt was still in use: %v", seen)
	}
	// A File of Plan is not a stream's: Release leaves it whole.
	f := want.Files[0]
	f.Release()
	if f.Before == nil || f.After == nil {
		t.Errorf("Release of a File of Plan dropped its texts")
	}
}

// TestNoHashRefusesWrites: a plan without hashes (Options.NoHash, smith
// apply --check) reports the same, and its writes are refused rather than
// left unguarded.
func TestNoHashRefusesWrites(t *testing.T) {
	root := t.TempDir()
	writeBytes(t, root, map[string][]byte{"f.txt": []byte("one\ntwo\nthree\n")})
	diff := []byte(unifiedGit("f.txt", "one\ntwo\nthree\n", "one\nTWO\nthree\n"))
	p, err := Plan(root, diff, Options{NoHash: true})
	if err != nil {
		t.Fatal(err)
	}
	if h := p.Files[0].BeforeHash; h != HashNotTaken {
		t.Fatalf("BeforeHash %q, want %q", h, HashNotTaken)
	}
	err = p.Apply(t.Context(), nil, "")
	var stale *StaleError
	if !errors.As(err, &stale) {
		t.Fatalf("Apply of a plan without hashes: %v, want a StaleError", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "f.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("the file was written: %q", b)
	}
}
