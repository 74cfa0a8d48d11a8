package diffapply

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// workspace confines paths to a root directory, the way git's
// check_unsafe_path() and t4139 do: no "..", no absolute path outside the
// root, nothing in .git, no symlink that leads out, only regular files.
type workspace struct {
	root string // absolute and clean, as given
	real string // root with symlinks resolved
}

func newWorkspace(root string) (*workspace, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	return &workspace{root: abs, real: real}, nil
}

// rel checks a name from a diff (prefix already stripped) and returns it
// as a clean, slash-separated path relative to the root.
func (w *workspace) rel(name string) (string, error) {
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

// resolve maps a checked relative path to the absolute path to read and
// write, following symlinks only while they stay inside the root. The
// file itself may not exist yet; if it exists it must be a regular file.
func (w *workspace) resolve(rel string) (string, error) {
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
	if !ok {
		return "", &PathError{Path: rel, Rule: RuleSymlink}
	}
	for _, c := range strings.Split(filepath.ToSlash(r), "/") {
		if strings.EqualFold(c, ".git") {
			return "", &PathError{Path: rel, Rule: RuleGitDir}
		}
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
	return target, nil
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
