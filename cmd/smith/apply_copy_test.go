package main

import (
	"testing"

	"github.com/smith-dev/smith/diffapply"
)

// TestCopyDiffGivesTheContent: the creation diff smith apply gives the
// engine for a copy's target, planned against no file as the engine plans
// it, gives the target's text byte for byte: line endings, carriage
// returns, a missing final newline, an empty file (no diff).
func TestCopyDiffGivesTheContent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, content := range []string{"a\n", "x\r\ny\r\n", "x\ry\rz", "no newline", "a\r\n\rb\n", ""} {
		diff, ok := copyDiff(root, "d/c.txt", []byte(content))
		if !ok {
			t.Errorf("%q: copyDiff says its diff does not give it", content)
			continue
		}
		if content == "" {
			if diff != "" {
				t.Errorf("an empty copy's diff: %q, want none", diff)
			}
			continue
		}
		p, err := diffapply.Plan(root, []byte(diff), diffapply.Options{Target: "d/c.txt", ReadFile: func(string) ([]byte, bool, error) { return nil, false, nil }})
		if err != nil || len(p.Files) != 1 || p.Files[0].Op != diffapply.OpCreate || string(p.Files[0].After) != content {
			t.Errorf("%q: the diff planned: %v; want the creation of it\n%s", content, err, diff)
		}
	}
}
