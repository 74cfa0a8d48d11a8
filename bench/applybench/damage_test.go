package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sourcegraph/go-diff/diff"
)

// sampleSource is testdata/sample.diff with its files: doc/f.txt (30 lines,
// no final newline on either side, three hunks), new.txt created, old.txt
// deleted.
func sampleSource(t *testing.T) *source {
	t.Helper()
	d, err := os.ReadFile("testdata/sample.diff")
	if err != nil {
		t.Fatal(err)
	}
	var before, after []string
	for i := 1; i <= 30; i++ {
		before = append(before, fmt.Sprintf("line %d", i))
	}
	after = append(after, before...)
	after[2] = "line 3, changed"
	after = append(after[:10], append([]string{"an added line"}, after[10:]...)...)
	after[27] = "line 27 rewritten"
	return &source{
		diff:   d,
		before: map[string][]byte{"doc/f.txt": []byte(strings.Join(before, "\n")), "old.txt": []byte("going\naway\n")},
		after:  map[string][]byte{"doc/f.txt": []byte(strings.Join(after, "\n")), "new.txt": []byte("fresh\nfile\n")},
		root:   "/srv/proj",
	}
}

func damageSample(t *testing.T, kind string) *damaged {
	t.Helper()
	d, err := damage(kind, sampleSource(t), rand.New(rand.NewPCG(1, 7)))
	if err != nil {
		t.Fatalf("damage %s: %v", kind, err)
	}
	return d
}

var hunkHeader = regexp.MustCompile(`(?m)^@@.*$`)

func TestDamageNoneReprintsTheDiff(t *testing.T) {
	src := sampleSource(t)
	d := damageSample(t, kindNone)
	if diff := cmp.Diff(string(src.diff), string(d.diff)); diff != "" {
		t.Errorf("reprint differs from git's diff (-git +reprint):\n%s", diff)
	}
}

func TestDamageKinds(t *testing.T) {
	src := sampleSource(t)
	base := string(src.diff)
	tests := []struct {
		kind  string
		check func(t *testing.T, got string, d *damaged)
	}{
		{kindLineNumbers, func(t *testing.T, got string, _ *damaged) {
			want, have := hunkHeader.FindAllString(base, -1), hunkHeader.FindAllString(got, -1)
			for i := range want {
				if (want[i] == have[i]) != strings.HasPrefix(want[i], "@@ -0,0") {
					t.Errorf("hunk %d: header %q became %q; want shifted unless it creates a file", i, want[i], have[i])
				}
			}
			if hunkHeader.ReplaceAllString(got, "@@") != hunkHeader.ReplaceAllString(base, "@@") {
				t.Error("bodies changed")
			}
		}},
		{kindCounts, func(t *testing.T, got string, _ *damaged) {
			if _, err := parseDiff([]byte(got)); err == nil {
				t.Error("every hunk still matches its counts")
			}
		}},
		{kindMissingPrefix, func(t *testing.T, got string, _ *damaged) {
			wantLines(t, got, "--- doc/f.txt\n+++ doc/f.txt\n", "--- /dev/null\n+++ new.txt\n", "--- old.txt\n+++ /dev/null\n")
			noLines(t, got, "diff --git", "index ", "new file mode")
		}},
		{kindExtraPrefix, func(t *testing.T, got string, _ *damaged) {
			wantLines(t, got, "--- a/proj/doc/f.txt\n+++ b/proj/doc/f.txt\n", "+++ b/proj/new.txt\n", "--- a/proj/old.txt\n")
		}},
		{kindAbsolutePath, func(t *testing.T, got string, _ *damaged) {
			wantLines(t, got, "--- /srv/proj/doc/f.txt\n+++ /srv/proj/doc/f.txt\n", "--- /dev/null\n+++ /srv/proj/new.txt\n")
		}},
		{kindTrailingWS, func(t *testing.T, got string, _ *damaged) {
			stripped := regexp.MustCompile(`(?m)^( .*?)[ \t]+$`).ReplaceAllString(got, "$1")
			if got == base || stripped != base {
				t.Errorf("want trailing blanks on context lines only, got:\n%s", got)
			}
		}},
		{kindCRLF, func(t *testing.T, got string, d *damaged) {
			if got != base {
				t.Error("the diff changed; only the files should")
			}
			if string(d.before["doc/f.txt"]) != strings.ReplaceAll(string(src.before["doc/f.txt"]), "\n", "\r\n") ||
				!bytes.HasSuffix(d.after["doc/f.txt"], []byte("line 29\r\nline 30")) {
				t.Error("doc/f.txt is not CRLF on both sides")
			}
			if !bytes.Equal(d.after["new.txt"], src.after["new.txt"]) {
				t.Error("a created file must stay as the diff writes it")
			}
		}},
		{kindNoNewline, func(t *testing.T, got string, _ *damaged) {
			if strings.Contains(got, `\ No newline`) || strings.ReplaceAll(base, "\\ No newline at end of file\n", "") != got {
				t.Errorf("want exactly the marker removed, got:\n%s", got)
			}
		}},
		{kindReversed, func(t *testing.T, got string, _ *damaged) {
			h := hunkHeader.FindAllString(got, -1)
			if !strings.HasPrefix(h[0], "@@ -24,7") || !strings.HasPrefix(h[2], "@@ -1,6") {
				t.Errorf("hunks of doc/f.txt not reversed: %q", h)
			}
		}},
		{kindBareHeader, func(t *testing.T, got string, _ *damaged) {
			for _, h := range hunkHeader.FindAllString(got, -1) {
				if h != "@@" && h != "@@ ... @@" {
					t.Errorf("header %q is not bare", h)
				}
			}
		}},
		{kindFenced, func(t *testing.T, got string, _ *damaged) {
			if !strings.HasPrefix(got, "Here is the change:\n\n```diff\n"+base+"```\n") {
				t.Errorf("want the diff in a fence after prose, got:\n%s", got)
			}
		}},
		{kindNoFinalEOL, func(t *testing.T, got string, _ *damaged) {
			if got+"\n" != base {
				t.Errorf("want the diff without its last newline, got %q", got)
			}
		}},
		{kindDroppedContext, func(t *testing.T, got string, _ *damaged) {
			if _, err := parseDiff([]byte(got)); err != nil {
				t.Errorf("counts not fitted to the body: %v", err)
			}
			gotLines, baseLines := strings.Split(got, "\n"), strings.Split(base, "\n")
			if len(gotLines) != len(baseLines)-1 {
				t.Fatalf("want exactly one line fewer, got %d for %d", len(gotLines), len(baseLines))
			}
			for _, l := range baseLines {
				if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---") {
					if !strings.Contains(got, "\n"+l+"\n") {
						t.Errorf("changed line %q was dropped", l)
					}
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			d := damageSample(t, tt.kind)
			if d.kind != tt.kind {
				t.Errorf("kind = %q", d.kind)
			}
			tt.check(t, string(d.diff), d)
			if again := damageSample(t, tt.kind); !bytes.Equal(again.diff, d.diff) {
				t.Error("same seed, different damage")
			}
		})
	}
}

func TestApplicable(t *testing.T) {
	src := sampleSource(t)
	src.after["doc/f.txt"] = append(src.after["doc/f.txt"], '\n') // the commit adds the final newline
	src.before["old.txt"] = []byte("going\r\naway\r\n")
	fds, err := parseDiff(src.diff)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{kindNoNewline, kindCRLF, kindCRLFDiff} {
		if applicable(kind, fds, src) {
			t.Errorf("%s applies, want not", kind)
		}
	}
}

func wantLines(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}

func noLines(t *testing.T, got string, prefixes ...string) {
	t.Helper()
	for _, p := range prefixes {
		if regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(p)).MatchString(got) {
			t.Errorf("want no %q line in:\n%s", p, got)
		}
	}
}

func TestDamageTabsAsSpaces(t *testing.T) {
	src := &source{
		diff:   []byte("--- a/m.go\n+++ b/m.go\n@@ -1,4 +1,4 @@\n func f() {\n-\treturn 1\n+\treturn 2\n \t\t// end\n }\n"),
		before: map[string][]byte{"m.go": []byte("func f() {\n\treturn 1\n\t\t// end\n}\n")},
		after:  map[string][]byte{"m.go": []byte("func f() {\n\treturn 2\n\t\t// end\n}\n")},
	}
	if applicable(kindTabsAsSpaces, mustParse(t, sampleSource(t).diff), sampleSource(t)) {
		t.Error("applies to a diff without tab-indented context")
	}
	d, err := damage(kindTabsAsSpaces, src, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	want := "--- a/m.go\n+++ b/m.go\n@@ -1,4 +1,4 @@\n func f() {\n-\treturn 1\n+\treturn 2\n         // end\n }\n"
	if got := string(d.diff); got != want {
		t.Errorf("got %q\nwant %q (only context lines change)", got, want)
	}
}

func mustParse(t *testing.T, d []byte) []*diff.FileDiff {
	t.Helper()
	fds, err := parseDiff(d)
	if err != nil {
		t.Fatal(err)
	}
	return fds
}

func TestDamageCRLFDiff(t *testing.T) {
	src := &source{
		diff:   []byte("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n"),
		before: map[string][]byte{"f": []byte("a\nb\n")},
		after:  map[string][]byte{"f": []byte("A\nb\n")},
	}
	d, err := damage(kindCRLFDiff, src, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if want := "--- a/f\r\n+++ b/f\r\n@@ -1,2 +1,2 @@\r\n-a\r\n+A\r\n b\r\n"; string(d.diff) != want {
		t.Errorf("got %q, want %q", d.diff, want)
	}
	if !bytes.Equal(d.after["f"], src.after["f"]) {
		t.Error("the expected file must stay LF")
	}
	// A created file's line ends are the diff's guess, so the kind stays away.
	if applicable(kindCRLFDiff, mustParse(t, sampleSource(t).diff), sampleSource(t)) {
		t.Error("applies to a diff that creates a file")
	}
}
