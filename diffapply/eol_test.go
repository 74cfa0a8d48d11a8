package diffapply

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	udiff "github.com/aymanbagabas/go-udiff"
)

// TestByteExactDiffsKeepLineEnds: a byte-exact diff of files with mixed
// line ends (what git diff gives for a real commit) reproduces the new
// file byte for byte, CRs included: added LF lines in CRLF regions, CRLF
// lines in LF regions, and line-end-only changes. Inputs are random with a
// fixed seed; every file ends in a newline (a CR before a missing final
// newline is another matter).
func TestByteExactDiffsKeepLineEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	eol := func(crShare int) string {
		if rng.IntN(100) < crShare {
			return "\r\n"
		}
		return "\n"
	}
	applied := 0
	for i := range 200 {
		crShare := []int{0, 10, 50, 90, 100}[i%5]
		var before, after strings.Builder
		n := 3 + rng.IntN(30)
		for l := range n {
			text := fmt.Sprintf("line %d", l%7) // repeats: the ladder must still place every hunk
			end := eol(crShare)
			before.WriteString(text + end)
			switch rng.IntN(10) {
			case 0: // removed
			case 1: // line end flipped
				after.WriteString(text + map[string]string{"\n": "\r\n", "\r\n": "\n"}[end])
			case 2: // changed, with its own ending
				after.WriteString(strings.ToUpper(text) + eol(50))
			case 3: // an added line after it
				after.WriteString(text + end + "added" + eol(50))
			default:
				after.WriteString(text + end)
			}
		}
		b, a := before.String(), after.String()
		if a == b {
			continue
		}
		root := t.TempDir()
		must(t, os.WriteFile(filepath.Join(root, "f"), []byte(b), 0o644))
		diff := udiff.Unified("a/f", "b/f", b, a)
		p, err := Plan(root, []byte(diff), Options{})
		if err != nil {
			t.Fatalf("case %d: %v\n%q", i, err, diff)
		}
		if hs, _ := p.Conflicts(); len(hs) > 0 {
			continue // repeated text can make a hunk ambiguous; that is a refusal, not a wrong result
		}
		must(t, p.Apply(context.Background(), nil, ""))
		applied++
		got, _ := os.ReadFile(filepath.Join(root, "f"))
		if string(got) != a {
			t.Fatalf("case %d: got %q\nwant %q\ndiff:\n%q", i, got, a, diff)
		}
	}
	if applied < 100 {
		t.Errorf("only %d of 200 cases applied: the generator makes too many ambiguous hunks", applied)
	}
	t.Logf("%d of 200 applied", applied)
}

// TestEndsInCR: endsInCR is strings.TrimRight(s, " \t") ending in "\r".
func TestEndsInCR(t *testing.T) {
	for _, s := range []string{"", "\r", "a\r", "a\r ", "a\r\t \t", "a \r", "a", "a ", "\r\r", " ", "\t\r\t", "a\rb", "a\r\n"} {
		if got, want := endsInCR(s), strings.HasSuffix(strings.TrimRight(s, " \t"), "\r"); got != want {
			t.Errorf("endsInCR(%q) = %v, want %v", s, got, want)
		}
	}
}
