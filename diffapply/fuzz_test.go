package diffapply

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	udiff "github.com/aymanbagabas/go-udiff"
	"golang.org/x/tools/txtar"
)

// FuzzApply diffs a real pair of texts with go-udiff, optionally splices
// noise into the diff, then plans and applies it. It asserts that Plan
// never panics, that nothing outside the root is ever written, and that
// an unmodified diff that plans without conflict yields exactly the true
// post-image. CRs are removed from the pair: line endings follow the file,
// not the diff, by design (see the package doc).
func FuzzApply(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nB\nc\n"), []byte(""), uint16(0))
	f.Add([]byte("a\nb\nc"), []byte("a\nb\nc\nd"), []byte("@@ ... @@\n"), uint16(30))
	f.Add([]byte("x\n\ny\n"), []byte("x\ny\n\n"), []byte("--- a/../../evil\n+++ b/../../evil\n"), uint16(0))
	f.Add([]byte(""), []byte("new\n"), []byte("\n\n```diff\n"), uint16(5))
	paths, _ := filepath.Glob("testdata/cases/*.txtar")
	for _, p := range paths {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			continue
		}
		for _, file := range ar.Files {
			if file.Name == "diff" {
				f.Add([]byte("row 1\nrow 2\n"), []byte("row 1\nROW 2\n"), file.Data, uint16(0))
			}
		}
	}
	f.Fuzz(func(t *testing.T, before, after, noise []byte, at uint16) {
		before = bytes.ReplaceAll(before, []byte("\r"), nil)
		after = bytes.ReplaceAll(after, []byte("\r"), nil)
		parent := t.TempDir()
		root := filepath.Join(parent, "ws")
		must(t, os.Mkdir(root, 0o755))
		must(t, os.WriteFile(filepath.Join(parent, "outside.txt"), []byte("keep\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(root, "f"), before, 0o644))
		diff := udiff.Unified("a/f", "b/f", string(before), string(after))
		// An even position keeps the diff pure, so half the inputs test
		// the round trip and half the parser's robustness.
		pure := len(noise) == 0 || at%2 == 0
		if !pure {
			i := int(at) % (len(diff) + 1)
			diff = diff[:i] + string(noise) + diff[i:]
		}
		p, err := Plan(root, []byte(diff), Options{})
		if err == nil {
			if hs, fs := p.Conflicts(); len(hs) == 0 && len(fs) == 0 {
				if err := p.Apply(context.Background(), nil, filepath.Join(parent, "journal")); err != nil && pure {
					t.Fatalf("apply of a clean plan failed: %v\n%s", err, diff)
				}
			}
		}
		if pure && before != nil && !bytes.Equal(before, after) {
			if err != nil {
				t.Fatalf("plan of a real diff failed: %v\n%s", err, diff)
			}
			got, _ := os.ReadFile(filepath.Join(root, "f"))
			if hs, _ := p.Conflicts(); len(hs) == 0 && !bytes.Equal(got, after) {
				t.Fatalf("result %q, want %q\n%s", got, after, diff)
			}
		}
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if n := e.Name(); n != "ws" && n != "outside.txt" && n != "journal" {
				t.Fatalf("wrote outside the root: %s", n)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(parent, "outside.txt")); string(b) != "keep\n" {
			t.Fatalf("outside.txt changed")
		}
	})
}
