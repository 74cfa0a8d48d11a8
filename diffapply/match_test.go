package diffapply

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNearestIsDeterministic: when a hunk that matches nowhere nearly
// matches in two places as near to its stated line, the conflict names the
// same place every time (the earlier one), not whichever a map yields
// first.
func TestNearestIsDeterministic(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("a\nb\nX\nq\nq\nq\na\nb\nY\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// stated at line 4: the near places, lines 1 and 7, are 3 lines away each
	diff := []byte("--- a/f.txt\n+++ b/f.txt\n@@ -4,3 +4,3 @@\n a\n b\n-Z\n+W\n")
	for i := 0; i < 50; i++ {
		c := onlyConflict(t, root, diff)
		if c.NearLine != 1 || c.NearMatched != 2 {
			t.Fatalf("run %d: nearest at line %d (%d lines match), want line 1 (2 lines)", i, c.NearLine, c.NearMatched)
		}
	}
}

// TestNearestBeforeLineOne: the best near place may start before line 1;
// that is a place, not "no line occurs in the file".
func TestNearestBeforeLineOne(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := onlyConflict(t, root, []byte("--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n Q\n a\n-b\n+B\n"))
	if strings.Contains(c.Reason, "none of the hunk's old lines") || !strings.Contains(c.Detail, "before line 1") {
		t.Errorf("conflict = %+v, want a place before line 1", c)
	}
}

func onlyConflict(t *testing.T, root string, diff []byte) *Conflict {
	t.Helper()
	p, err := Plan(root, diff, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hunks, _ := p.Conflicts()
	if len(hunks) != 1 || hunks[0].Conflict == nil {
		t.Fatalf("want one conflicting hunk, got %d", len(hunks))
	}
	return hunks[0].Conflict
}

// TestClaimedIsEveryClaim: the binary search of claimed answers as a look
// at every claim does, for claims made in any order.
func TestClaimedIsEveryClaim(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for range 200 {
		m := &matcher{l: lines{text: make([]string, 300), eol: make([]eol, 300)}}
		// Disjoint claims, claimed in a random order, as found makes them.
		var spans []span
		for at := r.IntN(5); at < 300; at += 1 + r.IntN(12) {
			n := 1 + r.IntN(8)
			if at+n > 300 {
				break
			}
			spans = append(spans, span{at, at + n})
			at += n
		}
		r.Shuffle(len(spans), func(i, k int) { spans[i], spans[k] = spans[k], spans[i] })
		for _, s := range spans {
			m.found(&job{h: &hunk{}, pub: &Hunk{}}, step{}, s.start, 0, 0, s.end-s.start, s.start)
		}
		for at := range 300 {
			for end := at + 1; end <= min(300, at+20); end++ {
				want := false
				for _, c := range m.claims {
					want = want || at < c.end && c.start < end
				}
				if got := m.claimed(at, end); got != want {
					t.Fatalf("claims %v: claimed(%d, %d) = %v, want %v", m.claims, at, end, got, want)
				}
			}
		}
	}
}
