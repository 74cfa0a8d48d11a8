package diffapply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Diffs written on another machine name files by absolute paths that do
// not exist here (--- /home/someone/project/src/a.go).

const foreignModify = "--- /home/someone/project/src/a.go\n+++ /home/someone/project/src/a.go\n@@ -1,2 +1,2 @@\n package a\n-var x = 1\n+var x = 2\n"

func TestForeignAbsolutePathOneMatchApplies(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"src/a.go": "package a\nvar x = 1\n"})
	p, err := Plan(root, []byte(foreignModify), Options{})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if f := p.Files[0]; f.Path != "src/a.go" {
		t.Fatalf("path %q, want src/a.go", f.Path)
	}
	if !strings.Contains(strings.Join(p.Repairs, "\n"), `"/home/someone/project/"`) {
		t.Errorf("repairs %q do not say which prefix was removed", p.Repairs)
	}
	must(t, p.Apply(context.Background(), nil, ""))
	if b, _ := os.ReadFile(filepath.Join(root, "src/a.go")); string(b) != "package a\nvar x = 2\n" {
		t.Fatalf("src/a.go = %q", b)
	}
}

func TestForeignAbsolutePathAmbiguousSuggestsStrip(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"src/a.go": "package a\nvar x = 1\n", "a.go": "package a\nvar x = 1\n"})
	_, err := Plan(root, []byte(foreignModify), Options{})
	if !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("plan: %v; want a refusal", err)
	}
	for _, want := range []string{"-p 4", "-p 5", "src/a.go", "a.go"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	// The suggestion works.
	if p, err := Plan(root, []byte(foreignModify), Options{Strip: 4}); err != nil || p.Files[0].Path != "src/a.go" {
		t.Fatalf("-p 4: %v", err)
	}
}

func TestForeignAbsolutePathNewFile(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"src/a.go": "package a\nvar x = 1\n"})
	create := "--- /dev/null\n+++ /home/someone/project/src/b.go\n@@ -0,0 +1 @@\n+package a\n"
	t.Run("beside a file of the same diff", func(t *testing.T) {
		p, err := Plan(root, []byte(foreignModify+create), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Files[1].Path != "src/b.go" {
			t.Fatalf("new file at %q, want src/b.go", p.Files[1].Path)
		}
	})
	t.Run("alone, one existing directory fits", func(t *testing.T) {
		p, err := Plan(root, []byte(create), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Files[0].Path != "src/b.go" {
			t.Fatalf("new file at %q, want src/b.go", p.Files[0].Path)
		}
	})
	t.Run("alone, nothing fits", func(t *testing.T) {
		_, err := Plan(root, []byte("--- /dev/null\n+++ /home/someone/project/docs/new.md\n@@ -0,0 +1 @@\n+x\n"), Options{})
		if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), "-p N") {
			t.Fatalf("plan: %v; want a refusal that suggests -p N", err)
		}
	})
}
