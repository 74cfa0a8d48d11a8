package diffapply

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

// hunkHeaderRE is the grammar parseHunkHeader implements by hand; it is
// the oracle of the tests below.
var hunkHeaderRE = regexp.MustCompile(`^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+ ?(.*)$`)

func headerByRegexp(l string) (hunkRange, bool) {
	m := hunkHeaderRE.FindStringSubmatch(l)
	if m == nil {
		return hunkRange{}, false
	}
	r := hunkRange{oldCount: 1, newCount: 1, section: m[5]}
	r.oldStart, _ = strconv.Atoi(m[1])
	r.newStart, _ = strconv.Atoi(m[3])
	if m[2] != "" {
		r.oldCount, _ = strconv.Atoi(m[2])
	}
	if m[4] != "" {
		r.newCount, _ = strconv.Atoi(m[4])
	}
	return r, true
}

var hunkHeaderSamples = []string{
	"@@ -1,3 +1,4 @@",
	"@@ -1 +1 @@",
	"@@ -0,0 +1,2 @@ func main() {",
	"@@ -12,7 +12,8 @@  two spaces",
	"@@@ -1,2 +1,2 @@@",
	"@@ -1,2 +1,2 @@@@@x",
	"@@ -1,2 +1,2 @@\tsection",
	"@@ -1,2 +1,2 @@ \r",
	"@@ -1, +1,2 @@",
	"@@ -1,2 +1,2@@",
	"@@ -1,2 +1,2 @",
	"@@  -1,2 +1,2 @@",
	"@@ -1,2  +1,2 @@",
	"@@ -a,2 +1,2 @@",
	"@@ -1,2 -1,2 @@",
	"@ -1,2 +1,2 @@",
	"@@",
	"@@ @@",
	"@@ ... @@ func f()",
	"@@ -99999999999999999999999,1 +1,1 @@",
	"@@ -1,2 +1,2 @@ \xff\xfe",
	"@@ -١,2 +1,2 @@",
	"",
}

func TestParseHunkHeaderMatchesRegexp(t *testing.T) {
	for _, l := range hunkHeaderSamples {
		got, gotOK := parseHunkHeader(l)
		want, wantOK := headerByRegexp(l)
		if got != want || gotOK != wantOK {
			t.Errorf("parseHunkHeader(%q) = %+v, %v; the regexp says %+v, %v", l, got, gotOK, want, wantOK)
		}
	}
}

func FuzzParseHunkHeader(f *testing.F) {
	for _, l := range hunkHeaderSamples {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, l string) {
		got, gotOK := parseHunkHeader(l)
		want, wantOK := headerByRegexp(l)
		if got != want || gotOK != wantOK {
			t.Fatalf("parseHunkHeader(%q) = %+v, %v; the regexp says %+v, %v", l, got, gotOK, want, wantOK)
		}
	})
}

// TestPatchDoesNotAliasDiff plans every case, then overwrites the diff
// buffer: scan reads the diff without copying it (scan.go), so nothing
// in the Patch or the error may still point into it.
func TestPatchDoesNotAliasDiff(t *testing.T) {
	paths, err := filepath.Glob("testdata/cases/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, path := range paths {
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
		for _, diff := range [][]byte{c.diff, []byte("Here it is:\n```diff\n" + string(c.diff) + "```\n")} {
			diff = bytes.Clone(diff)
			p, err := Plan(root, diff, c.opts)
			before := describePlan(p, err)
			for i := range diff {
				diff[i] = 'X'
			}
			if after := describePlan(p, err); after != before {
				t.Errorf("%s: the plan changed when the diff buffer was overwritten:\n%s", path, cmp.Diff(before, after))
			}
		}
	}
}

// describePlan prints everything a caller can read from a Plan result.
func describePlan(p *Patch, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	js, err := json.Marshal(p)
	if err != nil {
		return "json: " + err.Error()
	}
	var b strings.Builder
	b.Write(js)
	for _, f := range p.Files {
		fmt.Fprintf(&b, "\n%s\n%q\n%q\n%q", f.Path, f.After, f.Diff(nil), f.ReverseDiff(nil))
		for _, h := range f.Hunks {
			fmt.Fprintf(&b, "\n%s", h.Describe())
		}
	}
	return b.String()
}

// TestScanInPiecesEqualsWhole checks that a diff scanned in pieces (as
// big diffs are, on all CPUs) gives exactly what one scan of the whole
// gives: sections, hunks, repairs, line numbers and refusals.
func TestScanInPiecesEqualsWhole(t *testing.T) {
	var diffs [][]byte
	paths, _ := filepath.Glob("testdata/cases/*.txtar")
	var all []byte
	for _, path := range paths {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			if f.Name == "diff" {
				diffs = append(diffs, f.Data, []byte("Here:\n```diff\n"+string(f.Data)+"```\n"))
				all = append(all, f.Data...)
			}
		}
	}
	_, big := benchWorkspace(t, 3, 300)
	diffs = append(diffs, all, big, []byte("prose\n"+string(big)+"\nmore prose\n"),
		// A hunk cut by prose right before a piece boundary.
		[]byte("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\nprose\ndiff --git a/g b/g\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-c\n+d\n"))
	for _, d := range diffs {
		whole, werr := scanPieces(d, len(d)+1)
		for _, piece := range []int{1, 100, 4096} {
			got, err := scanPieces(d, piece)
			if fmt.Sprint(err) != fmt.Sprint(werr) {
				t.Fatalf("in pieces of %d: error %v, whole: %v\n%s", piece, err, werr, d)
			}
			if diff := cmp.Diff(whole, got, cmp.AllowUnexported(scanned{}, rawFile{}, rawHunk{})); diff != "" {
				t.Fatalf("in pieces of %d (-whole +pieces):\n%s\n%s", piece, diff, d)
			}
		}
	}
}

// TestHunkText checks the stream go-diff reads against the text it
// stands for, read whole and a byte at a time.
func TestHunkText(t *testing.T) {
	sc, err := scan([]byte("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@ func f() {\n a\n-b\n+B\n\n@@ -10 +10 @@\n-x\n+y\n@@ ... @@\n c\n-d\n+e\n"))
	if err != nil {
		t.Fatal(err)
	}
	hunks := sc.files[0].hunks
	var want strings.Builder
	for _, h := range hunks {
		want.WriteString(h.goDiffHeader() + "\n")
		for _, l := range h.body {
			want.WriteString(l + "\n")
		}
	}
	if err := iotest.TestReader(&hunkText{hunks: hunks}, []byte(want.String())); err != nil {
		t.Error(err)
	}
	got, err := io.ReadAll(iotest.OneByteReader(&hunkText{hunks: hunks}))
	if err != nil || string(got) != want.String() {
		t.Errorf("read a byte at a time: %q, %v; want %q", got, err, want.String())
	}
}
