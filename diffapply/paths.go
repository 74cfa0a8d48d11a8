package diffapply

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Workspace confines file access to one directory tree. It is the one
// place that decides whether smith may write a path, for every writer:
// diffs, whole-file writes from a stream, editor edits, and an agent's
// file-system calls. The rules are git's check_unsafe_path() and t4139
// plus smith's own: a name must not be empty, hold a NUL byte or a ".."
// component, be absolute outside the root, lie in .git, resolve through a
// symlink to outside the root, lie in a protected directory (smith's state
// folder), or name anything but a regular file.
//
// The rules are checked when a path is resolved; a directory swapped for
// a symlink after the check cannot lead a write out, because every read,
// write, rename and removal goes through an os.Root opened at the root,
// which refuses at use time any path that would leave it.
//
// A Workspace is safe for concurrent use. Close releases its directory
// handle.
type Workspace struct {
	root    string   // absolute and clean, as given
	real    string   // root with symlinks resolved
	protect []string // resolved directories that are never written

	once    sync.Once
	dirRoot *os.Root
	dirErr  error
}

// OpenWorkspace returns the Workspace rooted at root. Writes into any of
// protect (smith's state folder, wherever it is) are refused even when it
// lies inside root.
func OpenWorkspace(root string, protect ...string) (*Workspace, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	w := &Workspace{root: abs, real: real}
	for _, p := range protect {
		if p == "" {
			continue
		}
		if p, err = filepath.Abs(p); err != nil {
			return nil, err
		}
		w.protect = append(w.protect, resolveExisting(p))
	}
	return w, nil
}

func newWorkspace(root string) (*Workspace, error) { return OpenWorkspace(root) }

// Root is the root as given (absolute and clean).
func (w *Workspace) Root() string { return w.root }

// Close releases the directory handle; the Workspace must not be used
// afterwards.
func (w *Workspace) Close() error {
	w.once.Do(func() { w.dirErr = os.ErrClosed })
	if w.dirRoot != nil {
		return w.dirRoot.Close()
	}
	return nil
}

// dir is the os.Root every use-time operation goes through, opened on
// first use (Plan may never need it).
func (w *Workspace) dir() (*os.Root, error) {
	w.once.Do(func() {
		w.dirRoot, w.dirErr = os.OpenRoot(w.real)
		if w.dirErr != nil {
			w.dirErr = fmt.Errorf("open the workspace %s: %w", w.root, w.dirErr)
		}
	})
	return w.dirRoot, w.dirErr
}

// Confine applies the rules to name (relative to the root, or absolute
// inside it) and returns its absolute form under the root as given and
// its slash-separated form relative to the root, with symlinks that stay
// inside the root resolved (so a write replaces the link's target, not
// the link). The file need not exist. A refusal is a *PathError.
func (w *Workspace) Confine(name string) (abs, rel string, err error) {
	r, err := w.rel(name)
	if err != nil {
		return "", "", err
	}
	rr, err := w.confined(r)
	if err != nil {
		return "", "", err
	}
	return filepath.Join(w.root, filepath.FromSlash(rr)), rr, nil
}

// rel checks a name from a diff (prefix already stripped) and returns it
// as a clean, slash-separated path relative to the root: the lexical
// rules, no file-system access.
func (w *Workspace) rel(name string) (string, error) {
	switch {
	case name == "":
		return "", &PathError{Path: name, Rule: RuleEmpty}
	case strings.ContainsRune(name, 0):
		return "", &PathError{Path: name, Rule: RuleNUL}
	}
	p := name
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		r, ok := within(w.root, c)
		if !ok {
			r, ok = within(w.real, c)
		}
		if !ok {
			return "", &PathError{Path: name, Rule: RuleOutside}
		}
		p = r
	}
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if c == ".." {
			return "", &PathError{Path: name, Rule: RuleDotDot}
		}
		if strings.EqualFold(c, ".git") {
			return "", &PathError{Path: name, Rule: RuleGitDir}
		}
	}
	p = path.Clean(filepath.ToSlash(p))
	if p == "." || p == "/" {
		return "", &PathError{Path: name, Rule: RuleEmpty}
	}
	return strings.TrimPrefix(p, "/"), nil
}

// within returns target relative to dir when target is dir or below it.
func within(dir, target string) (string, bool) {
	r, err := filepath.Rel(dir, target)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false
	}
	return r, true
}

// resolve maps a checked relative path to the absolute path under the
// resolved root (see confined).
func (w *Workspace) resolve(rel string) (string, error) {
	r, err := w.confined(rel)
	if err != nil {
		return "", err
	}
	return filepath.Join(w.real, filepath.FromSlash(r)), nil
}

// confined resolves symlinks in a lexically checked path as long as they
// stay inside the root and returns the result relative to the resolved
// root, slash-separated. If the file exists it must be a regular file.
func (w *Workspace) confined(rel string) (string, error) {
	if r, ok := w.plain(rel); ok {
		if err := w.allowed(rel, r, filepath.Join(w.real, filepath.FromSlash(r))); err != nil {
			return "", err
		}
		return r, nil
	}
	return w.resolveLinks(rel)
}

// plain reports whether rel names, below the resolved root, a path
// without a symlink: each of its components from the root's is a
// directory, up to its last, a regular file, or up to one that does not
// exist. It looks up each component below the root once (Lstat), where
// resolveLinks looks up the root's own ancestors too and the file three
// times: what the rules conclude is the same, rel itself (cleaned). Any
// other path (a symlink, a component that is a file, a lookup that
// fails otherwise) is resolveLinks's to decide.
func (w *Workspace) plain(rel string) (string, bool) {
	r := path.Clean(filepath.ToSlash(rel))
	if r == "." || r == "/" || strings.HasPrefix(r, "../") || r == ".." || path.IsAbs(r) {
		return "", false
	}
	for i := 0; ; {
		j := strings.IndexByte(r[i:], '/')
		last := j < 0
		end := len(r)
		if !last {
			end = i + j
		}
		fi, err := os.Lstat(filepath.Join(w.real, filepath.FromSlash(r[:end])))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return r, true // nothing below it exists either
		case err != nil:
			return "", false
		case last:
			return r, fi.Mode().IsRegular()
		case !fi.IsDir():
			return "", false
		}
		i = end + 1
	}
}

// allowed applies the rules that hold for a resolved path r (relative to
// the resolved root; target is its absolute form): not in .git, not in a
// protected folder.
func (w *Workspace) allowed(rel, r, target string) error {
	for _, c := range strings.Split(r, "/") {
		if strings.EqualFold(c, ".git") {
			return &PathError{Path: rel, Rule: RuleGitDir}
		}
	}
	for _, p := range w.protect {
		if _, in := within(p, target); in {
			return &PathError{Path: rel, Rule: RuleState}
		}
	}
	return nil
}

// resolveLinks is confined for any path: it resolves the deepest part of
// it that exists, symlinks and all, and applies the rules to the result.
func (w *Workspace) resolveLinks(rel string) (string, error) {
	full := filepath.Join(w.real, filepath.FromSlash(rel))
	// Resolve the deepest part of the path that exists.
	existing, rest := full, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", &PathError{Path: rel, Rule: RuleSymlink}
	}
	target := filepath.Join(resolved, rest)
	r, ok := within(w.real, target)
	if !ok || r == "." {
		return "", &PathError{Path: rel, Rule: RuleSymlink}
	}
	if err := w.allowed(rel, filepath.ToSlash(r), target); err != nil {
		return "", err
	}
	fi, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A new file (EvalSymlinks refused dangling links above).
	case err != nil:
		return "", err
	case !fi.Mode().IsRegular():
		return "", &PathError{Path: rel, Rule: RuleNotRegular}
	}
	return filepath.ToSlash(r), nil
}

// resolveExisting evaluates symlinks in the longest existing prefix of p
// and appends the missing tail unchanged.
func resolveExisting(p string) string {
	var tail []string
	for cur := p; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{real}, tail...)...)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		tail = append([]string{filepath.Base(cur)}, tail...)
		cur = parent
	}
}

// ReadFile reads a file named as Confine accepts it, reporting whether it
// exists. It never blocks on a FIFO or a device: the file is opened
// without blocking and anything but a regular file is refused (a
// *PathError) before a byte is read.
func (w *Workspace) ReadFile(name string) ([]byte, bool, error) {
	return w.ReadFileInto(name, nil)
}

// ReadFileInto is ReadFile reading into buf (overwriting its bytes) when
// buf can hold the file, for a caller that reads file after file only to
// compare them with what it holds: fresh memory for each is paid for in
// page faults. A buffer it makes for a non-nil buf too small has room to
// spare for the next file.
func (w *Workspace) ReadFileInto(name string, buf []byte) ([]byte, bool, error) {
	_, rel, err := w.Confine(name)
	if err != nil {
		return nil, false, err
	}
	d, err := w.dir()
	if err != nil {
		return nil, false, err
	}
	b, fi, err := readRegularInto(d, rel, buf)
	return b, fi != nil, err
}

// ReadRegularFile reads the file at path (anywhere: no workspace rules)
// without ever blocking on a FIFO or a device: it opens without blocking
// and refuses anything but a regular file before reading a byte. For
// reads outside a Workspace, such as an editor's current file.
func ReadRegularFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &PathError{Path: path, Rule: RuleNotRegular}
	}
	return io.ReadAll(f)
}

// readRel reads a confined path through the os.Root.
func (w *Workspace) readRel(rel string) ([]byte, bool, error) {
	return w.readRelInto(rel, nil)
}

// readRelInto is readRel reading into buf when it can hold the file
// (readRegularInto).
func (w *Workspace) readRelInto(rel string, buf []byte) ([]byte, bool, error) {
	d, err := w.dir()
	if err != nil {
		return nil, false, err
	}
	b, fi, err := readRegularInto(d, rel, buf)
	return b, fi != nil, err
}

// readRegular opens name in d without blocking (a FIFO swapped in after
// the check must not hang the reader), refuses anything but a regular
// file, and reads it.
func readRegular(d *os.Root, name string) ([]byte, bool, error) {
	b, fi, err := readRegularInfo(d, name)
	return b, fi != nil, err
}

// readRegularInfo is readRegular with the file's FileInfo (nil when it
// does not exist), taken from the open file: no second lookup by name.
func readRegularInfo(d *os.Root, name string) ([]byte, fs.FileInfo, error) {
	return readRegularInto(d, name, nil)
}

// readRegularInto is readRegularInfo reading into buf (overwriting its
// bytes) when buf can hold the file. When it cannot, and buf is not nil
// (the caller means to reuse what it returns), the new buffer has a
// quarter more room, so that files of about one size (a patch's) do not
// each need one of their own.
func readRegularInto(d *os.Root, name string, buf []byte) ([]byte, fs.FileInfo, error) {
	f, err := d.OpenFile(filepath.FromSlash(name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &PathError{Path: name, Rule: RuleNotRegular}
	}
	b := buf[:0]
	if need := fi.Size() + 1; int64(cap(buf)) < need {
		if buf != nil {
			need += need / 4
		}
		b = make([]byte, 0, need)
	}
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, fi, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// stripComponents removes n leading path components, like patch -pN.
func stripComponents(name string, n int) (string, bool) {
	for i := 0; i < n; i++ {
		j := strings.IndexByte(name, '/')
		if j < 0 {
			return "", false
		}
		name = name[j+1:]
		for strings.HasPrefix(name, "/") && i < n-1 {
			name = name[1:]
		}
	}
	return name, name != ""
}
