package upstream

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAgentSmithyDiffMatchesCPython compares the server's diff text with
// CPython's difflib output for the same inputs (testdata/gen_difflib.py),
// including the quirks: a//abs headers, an empty line after every body
// line, no "\ No newline" marker, \f fragments and autojunk on 200+ lines.
func TestAgentSmithyDiffMatchesCPython(t *testing.T) {
	data, err := os.ReadFile("testdata/difflib_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct{ Name, Abs, Old, New, Want string }
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("only %d golden cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if diff := cmp.Diff(c.Want, agentSmithyDiff(c.Abs, c.Old, c.New)); diff != "" {
				t.Errorf("diff text (-python +go):\n%s", diff)
			}
		})
	}
}

func TestPySplitlines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		keep []string
	}{
		{"a\nb", []string{"a\n", "b"}},
		{"a\r\nb\rc\n", []string{"a\r\n", "b\r", "c\n"}},
		{"x\fy\u2028z\x85", []string{"x\f", "y\u2028", "z\x85"}},
		{"", nil},
	} {
		if got := pySplitlines(tc.in, true); !cmp.Equal(got, tc.keep) {
			t.Errorf("pySplitlines(%q) = %q, want %q", tc.in, got, tc.keep)
		}
	}
}

func TestStandardDiffMarksMissingNewline(t *testing.T) {
	got := standardDiff("a/x.txt", "b/x.txt", "a\nb\nc", "a\nb\nC")
	want := "--- a/x.txt\n+++ b/x.txt\n@@ -1,3 +1,3 @@\n a\n b\n-c\n\\ No newline at end of file\n+C\n\\ No newline at end of file\n"
	if got != want {
		t.Errorf("standardDiff:\n got %q\nwant %q", got, want)
	}
}

func TestLegacyDiff(t *testing.T) {
	got := legacyDiff("/dev/null", "b/n.txt", "", "x\ny\n")
	if want := "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+x\n+y"; got != want {
		t.Errorf("legacyDiff = %q, want %q", got, want)
	}
}
