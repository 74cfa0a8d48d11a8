package diffapply_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol/upstream"
)

// TestAgentSmithyDiffsApplyExactly (in diffapply's external tests, where
// the import of the upstream emulator points down: diffapply itself never
// imports it): the server's difflib diffs of random
// edits to files with form feeds, vertical tabs and U+2028 inside lines
// (which Python's splitlines breaks, so the diff's lines and counts are
// fragments) go through diffapply's repairs and give exactly the new file,
// or a conflict, never anything else; and nearly all of them apply.
func TestAgentSmithyDiffsApplyExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	seps := []string{"\f", "\v", "\u2028", "\u2029", "\x1c", "\u0085"}
	line := func() string {
		s := fmt.Sprintf("line %d", r.IntN(10000))
		if r.IntN(4) == 0 {
			s += seps[r.IntN(len(seps))] + fmt.Sprintf("tail %d", r.IntN(100))
		}
		return s
	}
	root := t.TempDir()
	path := filepath.Join(root, "f.txt")
	applied, fragmented := 0, 0
	const n = 400
	for it := 0; it < n; it++ {
		var old []string
		for k := 5 + r.IntN(30); k > 0; k-- {
			old = append(old, line())
		}
		nw := append([]string(nil), old...)
		for k := 1 + r.IntN(3); k > 0; k-- {
			i := r.IntN(len(nw))
			switch r.IntN(3) {
			case 0:
				nw[i] = line()
			case 1:
				nw = append(nw[:i], nw[i+1:]...)
			default:
				nw = append(nw[:i], append([]string{line()}, nw[i:]...)...)
			}
		}
		oldText, newText := strings.Join(old, "\n")+"\n", strings.Join(nw, "\n")+"\n"
		if oldText == newText {
			continue
		}
		if err := os.WriteFile(path, []byte(oldText), 0o644); err != nil {
			t.Fatal(err)
		}
		d := upstream.AgentSmithyDiff(path, oldText, newText)
		p, err := diffapply.Plan(root, []byte(d), diffapply.Options{})
		if err != nil {
			t.Fatalf("plan: %v\n%q", err, d)
		}
		if hs, fs := p.Conflicts(); len(hs) > 0 || len(fs) > 0 {
			continue
		}
		if got := string(p.Files[0].After); got != newText {
			t.Fatalf("silently wrong:\nold %q\nwant %q\ngot %q\ndiff %q", oldText, newText, got, d)
		}
		applied++
		if strings.Contains(strings.Join(p.Repairs, "\n"), "rejoined") {
			fragmented++
		}
	}
	t.Logf("applied %d of %d, %d with rejoined lines", applied, n, fragmented)
	if applied < n*8/10 || fragmented < n/4 {
		t.Errorf("applied %d of %d diffs (%d with rejoined lines); most should apply", applied, n, fragmented)
	}
}
