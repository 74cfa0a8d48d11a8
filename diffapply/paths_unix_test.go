//go:build unix

package diffapply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPathConfinement replicates git's t4139: symlink escapes, absolute
// paths, "..", .git, NUL bytes and non-regular files are refused with the
// rule named; a symlink that stays inside the root is followed.
func TestPathConfinement(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeFiles(t, root, map[string]string{"in.txt": "in\n", "sub/x.txt": "x\n"})
	writeFiles(t, outside, map[string]string{"secret.txt": "secret\n"})
	must(t, os.Symlink(outside, filepath.Join(root, "escape")))
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")))
	must(t, os.Symlink("sub", filepath.Join(root, "inner")))
	must(t, os.Symlink("nowhere", filepath.Join(root, "dangling")))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	mod := func(name string) string {
		return fmt.Sprintf("--- a/%[1]s\n+++ b/%[1]s\n@@ -1 +1 @@\n-x\n+y\n", name)
	}
	create := func(name string) string {
		return fmt.Sprintf("--- /dev/null\n+++ %s\n@@ -0,0 +1 @@\n+pwned\n", name)
	}
	for _, tc := range []struct{ diff, rule string }{
		{create("b/escape/new.txt"), RuleSymlink},
		{mod("escape/secret.txt"), RuleSymlink},
		{mod("link.txt"), RuleSymlink},
		{create("b/dangling"), RuleSymlink},
		{mod("fifo"), RuleNotRegular},
		{mod("sub"), RuleNotRegular},
		{create(filepath.Join(outside, "new.txt")), RuleOutside},
		{create("b/a\x00b"), RuleNUL},
		{create("b/../x"), RuleDotDot},
		{create("b/.git/HEAD"), RuleGitDir},
	} {
		_, err := Plan(root, []byte(tc.diff), Options{})
		var pe *PathError
		if !errors.As(err, &pe) || pe.Rule != tc.rule || !errors.Is(err, ErrUnsafePath) {
			t.Errorf("%q: err = %v, want rule %q", tc.diff, err, tc.rule)
		}
	}
	// A symlink that stays inside the root is followed: the real file is written.
	p, err := Plan(root, []byte(mod("inner/x.txt")), Options{})
	must(t, err)
	must(t, p.Apply(context.Background(), nil, ""))
	if b, _ := os.ReadFile(filepath.Join(root, "sub/x.txt")); string(b) != "y\n" {
		t.Errorf("sub/x.txt = %q", b)
	}
	if fi, _ := os.Lstat(filepath.Join(root, "inner")); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "secret\n" {
		t.Errorf("outside file changed: %q", b)
	}
	// A symlinked root works: paths are checked against its real location.
	link := filepath.Join(t.TempDir(), "rootlink")
	must(t, os.Symlink(root, link))
	if _, err := Plan(link, []byte(mod("in.txt")), Options{}); err != nil {
		t.Errorf("symlinked root: %v", err)
	}
}

// TestReadsNeverBlockOnAFIFO: the workspace's reads and ReadRegularFile
// refuse a FIFO without opening it for a blocking read (which would wait
// for a writer for ever; the test would hang, not fail, without the fix).
func TestReadsNeverBlockOnAFIFO(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	ws, err := OpenWorkspace(root)
	must(t, err)
	defer ws.Close()
	if _, _, err := ws.ReadFile("fifo"); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("Workspace.ReadFile: err = %v, want refused", err)
	}
	// Past the check (as if the FIFO were swapped in after it).
	if _, _, err := ws.readRel("fifo"); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("readRel: err = %v, want refused", err)
	}
	if _, err := ReadRegularFile(fifo); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("ReadRegularFile: err = %v, want refused", err)
	}
}

// TestReadFileInto: a file read into a buffer of another file's bytes
// comes out whole and exact, whether the buffer is larger (reused: its
// old bytes must not show) or too small (a buffer of its own); a missing
// file is absent, and a FIFO is refused as ReadFile refuses it.
func TestReadFileInto(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for name, text := range map[string]string{"short.txt": "a\nb\n", "long.txt": strings.Repeat("long line\n", 500)} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := OpenWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	dirty := []byte(strings.Repeat("x", 8000))
	for _, name := range []string{"short.txt", "long.txt"} {
		want, _ := os.ReadFile(filepath.Join(root, name))
		for _, buf := range [][]byte{nil, dirty[:0], dirty[:10:10]} {
			got, exists, err := ws.ReadFileInto(name, buf)
			if err != nil || !exists || string(got) != string(want) {
				t.Errorf("%s into a buffer of %d: %q, %v, %v; want %d bytes as on disk", name, cap(buf), got, exists, err, len(want))
			}
		}
	}
	if b, exists, err := ws.ReadFileInto("missing.txt", dirty); err != nil || exists || b != nil {
		t.Errorf("missing file: %q, %v, %v; want absent", b, exists, err)
	}
	if _, _, err := ws.ReadFileInto("fifo", dirty); err == nil {
		t.Error("a FIFO was read; want it refused")
	}
}

// TestConfinedPlainIsResolved: the look-up of a path without symlinks
// (plain) concludes what resolving every symlink of it does
// (resolveLinks), the same path or the same refusal, for every kind of
// path a tree can hold: files, folders, missing files and folders, files
// where a folder is named, FIFOs, symlinks to files and folders inside
// and outside the root, dangling ones, .git and a protected folder
// reached directly and through links.
func TestConfinedPlainIsResolved(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeFiles(t, root, map[string]string{"in.txt": "in\n", "sub/x.txt": "x\n", "sub/deep/y.txt": "y\n", ".git/HEAD": "ref\n", "state/s.json": "{}\n", "Sub/.GIT/config": "c\n"})
	writeFiles(t, outside, map[string]string{"secret.txt": "secret\n"})
	must(t, os.Symlink(outside, filepath.Join(root, "escape")))
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")))
	must(t, os.Symlink("sub", filepath.Join(root, "inner")))
	must(t, os.Symlink("sub/x.txt", filepath.Join(root, "x-link")))
	must(t, os.Symlink("nowhere", filepath.Join(root, "dangling")))
	must(t, os.Symlink(".git", filepath.Join(root, "gitlink")))
	must(t, os.Symlink("state", filepath.Join(root, "statelink")))
	must(t, os.Symlink("loop", filepath.Join(root, "loop")))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	w, err := OpenWorkspace(root, filepath.Join(root, "state"))
	must(t, err)
	defer w.Close()
	names := []string{"in.txt", "sub", "sub/x.txt", "sub/deep", "sub/deep/y.txt", "sub/none.txt", "sub/none/z.txt", "none/a/b.txt",
		"in.txt/under", "sub/x.txt/under", ".git/HEAD", ".git/new", "Sub/.GIT/config", "state/s.json", "state/new.json",
		"escape", "escape/secret.txt", "escape/new.txt", "link.txt", "inner", "inner/x.txt", "inner/new.txt", "x-link",
		"dangling", "dangling/x", "gitlink/HEAD", "statelink/s.json", "statelink/new", "loop", "loop/x", "fifo", "fifo/x", "./sub//x.txt"}
	for _, n := range names {
		plain, ok := w.plain(n)
		got, gerr := w.confined(n)
		want, werr := w.resolveLinks(n)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%s (plain: %v %q): confined = %q, %v; resolving every link = %q, %v", n, ok, plain, got, gerr, want, werr)
		}
	}
	if _, ok := w.plain("inner/x.txt"); ok {
		t.Error("a path through a symlink is taken as plain")
	}
	if r, ok := w.plain("sub/deep/y.txt"); !ok || r != "sub/deep/y.txt" {
		t.Errorf("plain(sub/deep/y.txt) = %q, %v", r, ok)
	}
}
