package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutsideWorkspace is returned (wrapped with the path) for a change whose
// target does not resolve, after symlinks, under the workspace root.
var ErrOutsideWorkspace = errors.New("path outside the workspace")

// workspace knows the root in two spellings: as configured (for paths shown
// to the user and handed to the editor) and symlink-resolved (for the
// containment check).
type workspace struct {
	root     string // cleaned absolute root as configured
	resolved string // root after filepath.EvalSymlinks
}

func newWorkspace(root string) (workspace, error) {
	if root == "" {
		return workspace{}, errors.New("daemon: Config.Workspace is required")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return workspace{}, fmt.Errorf("workspace %s: %w", root, err)
	}
	res, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return workspace{}, fmt.Errorf("workspace %s: %w", root, err)
	}
	return workspace{root: abs, resolved: res}, nil
}

// resolve maps a path named by the upstream (absolute, or relative to the
// root) to its absolute form under the configured root and its
// slash-separated workspace-relative form. A path is inside the workspace if
// and only if it resolves, after symlinks, under the resolved root; the file
// itself need not exist (a creation), so the longest existing prefix is
// resolved and the rest appended.
func (w workspace) resolve(name string) (abs, rel string, err error) {
	if name == "" {
		return "", "", fmt.Errorf("%w: empty path", ErrOutsideWorkspace)
	}
	p := filepath.FromSlash(name)
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.root, p)
	}
	p = filepath.Clean(p)
	real, err := resolveExisting(p)
	if err != nil {
		return "", "", fmt.Errorf("resolve %s: %w", name, err)
	}
	r, err := filepath.Rel(w.resolved, real)
	if err != nil || r == "." || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", "", fmt.Errorf("%w: %s resolves to %s, not under %s", ErrOutsideWorkspace, name, real, w.root)
	}
	return filepath.Join(w.root, r), filepath.ToSlash(r), nil
}

// resolveExisting evaluates symlinks in the longest existing prefix of p and
// appends the missing tail unchanged.
func resolveExisting(p string) (string, error) {
	var tail []string
	cur := p
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(append([]string{real}, tail...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		// A dangling symlink would be followed by a later write: refuse it
		// rather than treat its name as a plain missing file.
		if fi, lerr := os.Lstat(cur); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("%s is a dangling symlink", cur)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		tail = append([]string{filepath.Base(cur)}, tail...)
		cur = parent
	}
}

// readFile returns the bytes of path and whether it exists.
func readFile(path string) ([]byte, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}
