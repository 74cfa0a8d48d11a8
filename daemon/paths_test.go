package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// confinedWorkspace is a workspace with a way out (a symlink to a
// directory outside), a dangling symlink, and a link that stays inside.
func confinedWorkspace(t testing.TB) (workspace, string) {
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"out": outside, "dangling": filepath.Join(outside, "nope"), "in": filepath.Join(root, "sub")} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := newWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	return ws, outside
}

func TestResolve(t *testing.T) {
	ws, outside := confinedWorkspace(t)
	for _, tc := range []struct {
		name, rel string // rel "" means refused
	}{
		{"main.go", "main.go"},
		{"sub/new/deep.txt", "sub/new/deep.txt"},
		{"./sub/./main.go", "sub/main.go"},
		{"./sub/../main.go", ""}, // no ".." at all: one rule for every writer
		{".git/config", ""},
		{"sub/.GIT/hooks/pre-commit", ""},
		{filepath.Join(ws.root, "sub", "x.go"), "sub/x.go"},
		{"in/x.go", "sub/x.go"}, // a link that stays inside resolves to its target
		{"../outside/x", ""},
		{"out/x", ""},
		{"out", ""},
		{"dangling", ""},
		{filepath.Join(outside, "x"), ""},
		{"/etc/passwd", ""},
		{"", ""},
		{".", ""},
	} {
		_, rel, err := ws.resolve(tc.name)
		switch {
		case tc.rel == "" && !errors.Is(err, ErrOutsideWorkspace) && err == nil:
			t.Errorf("resolve(%q) = %q, want refused", tc.name, rel)
		case tc.rel != "" && (err != nil || rel != tc.rel):
			t.Errorf("resolve(%q) = %q, %v; want %q", tc.name, rel, err, tc.rel)
		}
	}
}

// FuzzResolve checks the containment rule: whatever the name, an accepted
// path lies under the root, also after symlinks.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a", "../x", "out/x", "in/../../x", "/", "sub/./../..", "dangling/x", "a/\x00b"} {
		f.Add(s)
	}
	ws, _ := confinedWorkspace(f)
	f.Fuzz(func(t *testing.T, name string) {
		abs, rel, err := ws.resolve(name)
		if err != nil {
			return
		}
		if !strings.HasPrefix(abs, ws.root+string(filepath.Separator)) || rel == "" || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("resolve(%q) = %q (%q): not under %s", name, abs, rel, ws.root)
		}
		real := existingReal(abs)
		if !strings.HasPrefix(real, ws.resolved+string(filepath.Separator)) {
			t.Fatalf("resolve(%q) = %s, which resolves to %s outside %s", name, abs, real, ws.resolved)
		}
	})
}

// existingReal evaluates symlinks in the longest existing prefix of p.
func existingReal(p string) string {
	var tail []string
	for cur := p; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{real}, tail...)...)
		}
		if filepath.Dir(cur) == cur {
			return p
		}
		tail = append([]string{filepath.Base(cur)}, tail...)
	}
}
