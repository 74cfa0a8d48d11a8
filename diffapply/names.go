package diffapply

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// This file turns the names in a diff into paths under the root: prefix
// detection (-p), notes models append, and reading the pre-images.

// names works out the source and target of a file diff.
func names(ws *Workspace, fd *fileDiff, opts Options, exists func(string) bool) (oldRel, newRel string, err error) {
	if opts.Target != "" {
		t, err := ws.rel(opts.Target)
		if err != nil {
			return "", "", err
		}
		switch {
		case fd.newFile || fd.oldName == "/dev/null":
			return "", t, nil
		case fd.deletedFile || fd.newName == "/dev/null":
			return t, "", nil
		}
		return t, t, nil
	}
	oldName, newName := fd.oldName, fd.newName
	explicit := false
	if fd.renameFrom != "" {
		oldName, newName, explicit = fd.renameFrom, fd.renameTo, true
	} else if fd.copyFrom != "" {
		oldName, newName, explicit = fd.copyFrom, fd.copyTo, true
	}
	if oldName == "/dev/null" || fd.newFile {
		oldName = ""
	}
	if newName == "/dev/null" || fd.deletedFile {
		newName = ""
	}
	if oldName == "" && newName == "" {
		return "", "", &ParseError{Line: fd.line, Msg: "the diff names no file; give the target path"}
	}
	var cands [][2]string
	switch {
	case explicit || opts.Strip == StripNone:
		cands = [][2]string{{oldName, newName}}
	case opts.Strip > 0:
		o, n, err := strip(oldName, newName, opts.Strip)
		if err != nil {
			return "", "", err
		}
		cands = [][2]string{{o, n}}
	default:
		cands = detect(oldName, newName)
	}
	// The first reading whose source exists wins; failing that, the first
	// safe reading (a new file, or a missing one reported as a conflict).
	var firstErr error
	var firstOK *[2]string
	for _, c := range cands {
		o, n, err := relPair(ws, c)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if !explicit && o != "" && n != "" && o != n {
			// Two names for one file (no rename header): like patch, take
			// the one that exists, the old name first.
			if exists(o) {
				n = o
			} else {
				o = n
			}
		}
		src := o
		if src == "" {
			src = n
		}
		if exists(src) {
			return o, n, nil
		}
		if firstOK == nil {
			firstOK = &[2]string{o, n}
		}
	}
	if firstOK == nil {
		return "", "", firstErr
	}
	return firstOK[0], firstOK[1], nil
}

// trimAnnotation drops trailing blanks and the note models append to
// header names: "--- a/f.go (original)", "+++ b/f.go (modified)".
func trimAnnotation(name string) string {
	name = strings.TrimRight(name, " \r") // trailing blanks are never meant
	i := strings.LastIndex(name, " (")
	if i < 0 || !strings.HasSuffix(name, ")") {
		return name
	}
	switch strings.ToLower(name[i+2 : len(name)-1]) {
	case "original", "modified", "new", "new file", "updated", "changed", "deleted", "before", "after", "old", "current", "proposed":
		return name[:i]
	}
	return name
}

func relPair(ws *Workspace, c [2]string) (string, string, error) {
	var out [2]string
	for i, name := range c {
		if name == "" {
			continue
		}
		r, err := ws.rel(name)
		if err != nil {
			return "", "", err
		}
		out[i] = r
	}
	return out[0], out[1], nil
}

func strip(o, n string, k int) (string, string, error) {
	var out [2]string
	for i, name := range []string{o, n} {
		if name == "" {
			continue
		}
		s, ok := stripComponents(name, k)
		if !ok {
			return "", "", &PathError{Path: name, Rule: RuleStrip}
		}
		out[i] = s
	}
	return out[0], out[1], nil
}

// detect lists the plausible readings of the names, most likely first:
// git's a/ b/ prefixes (AgentSmithy's "a//abs/path" included), GNU diff's
// "old/x new/x" directories, then the names as written and with one
// component stripped.
func detect(o, n string) [][2]string {
	asIs := [2]string{o, n}
	p1o, p1n, err := strip(o, n, 1)
	p1 := [2]string{p1o, p1n}
	gitStyle := true
	for _, name := range []string{o, n} {
		if name != "" && !strings.HasPrefix(name, "a/") && !strings.HasPrefix(name, "b/") {
			gitStyle = false
		}
	}
	switch {
	case gitStyle && err == nil:
		return [][2]string{p1, asIs}
	case o != "" && n != "" && err == nil && p1o == p1n && o != n:
		return [][2]string{p1, asIs}
	case err == nil && !strings.HasPrefix(o, "/") && !strings.HasPrefix(n, "/"):
		return [][2]string{asIs, p1}
	}
	return [][2]string{asIs}
}

// source reads pre-images: from Options.ReadFile, or from disk through
// the workspace's confinement.
type source struct {
	ws       *Workspace
	readFile func(path string) ([]byte, bool, error)
	seen     *pathCache // nil: ask the file system every time
	bin      *textBin   // a streamed plan's texts handed back, reused (nil: none)
}

// pathCache remembers, for one Plan, what resolving a path and looking
// for its file found: detectStrip, names, the confinement check and the
// read each ask about the same files, and every answer costs several
// system calls. Plan takes the tree as it finds it (Commit resolves
// again and checks hashes before it writes), so the first answer stands.
// Safe for concurrent use.
type pathCache struct {
	mu       sync.Mutex
	resolved map[string]resolvedPath
	exists   map[string]bool
}

type resolvedPath struct {
	abs string
	err error
}

func newPathCache() *pathCache {
	return &pathCache{resolved: map[string]resolvedPath{}, exists: map[string]bool{}}
}

// resolve is workspace.resolve, remembered.
func (s source) resolve(rel string) (string, error) {
	if s.seen == nil {
		return s.ws.resolve(rel)
	}
	s.seen.mu.Lock()
	r, ok := s.seen.resolved[rel]
	s.seen.mu.Unlock()
	if !ok {
		r.abs, r.err = s.ws.resolve(rel)
		s.seen.mu.Lock()
		s.seen.resolved[rel] = r
		s.seen.mu.Unlock()
	}
	return r.abs, r.err
}

func (s source) read(rel string) ([]byte, bool, error) {
	if s.readFile != nil {
		return s.readFile(rel)
	}
	abs, err := s.resolve(rel)
	if err != nil {
		return nil, false, err
	}
	// Through the workspace's os.Root, never blocking on a FIFO.
	r, _ := within(s.ws.real, abs)
	var buf []byte // a text handed back (File.Release), read into
	if s.bin != nil {
		buf, s.bin.before = s.bin.before, nil
	}
	return s.ws.readRelInto(filepath.ToSlash(r), buf)
}

// exists reports whether a safe relative path names an existing file.
func (s source) exists(rel string) bool {
	if _, err := s.ws.rel(rel); err != nil {
		return false
	}
	if s.readFile == nil {
		if s.seen != nil {
			s.seen.mu.Lock()
			ok, known := s.seen.exists[rel]
			s.seen.mu.Unlock()
			if known {
				return ok
			}
		}
		abs, err := s.resolve(rel)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if s.seen != nil {
			s.seen.mu.Lock()
			s.seen.exists[rel] = err == nil
			s.seen.mu.Unlock()
		}
		return err == nil
	}
	_, ok, err := s.readFile(rel)
	return ok && err == nil
}

// detectStrip finds the one strip level for the whole diff when the
// per-file reading (a/ b/ or none) misses an existing source file but
// stripping more components finds every one of them — typically a model
// that put the project's own directory after a/ (a/proj/src/x.go). Created
// files then use the same level. It returns 0 when the per-file reading
// works, or when no level or more than one level fits.
func detectStrip(ws *Workspace, fds []*fileDiff, src source) (int, string) {
	var names []string
	for _, fd := range fds {
		if fd.renameFrom != "" || fd.copyFrom != "" || fd.newFile || fd.oldName == "/dev/null" || fd.oldName == "" {
			continue
		}
		names = append(names, fd.oldName)
	}
	if len(names) == 0 {
		return 0, ""
	}
	found := func(name string) bool {
		for _, c := range detect(name, name) {
			if rel, err := ws.rel(c[0]); err == nil && src.exists(rel) {
				return true
			}
		}
		return false
	}
	missing := false
	for _, n := range names {
		if !found(n) {
			missing = true
			break
		}
	}
	if !missing {
		return 0, ""
	}
	var fits []int
	for k := 2; k <= 4; k++ {
		ok := true
		for _, n := range names {
			s, valid := stripComponents(n, k)
			if !valid || strings.HasPrefix(n, "/") {
				ok = false
				break
			}
			if rel, err := ws.rel(s); err != nil || !src.exists(rel) {
				ok = false
				break
			}
		}
		if ok {
			fits = append(fits, k)
		}
	}
	if len(fits) != 1 {
		return 0, ""
	}
	return fits[0], names[0]
}

// foreignNames reads absolute names from another machine
// (--- /home/someone/project/src/a.go): a name that is absolute, outside
// the root, gets the strip level at which it names a file here, and the
// file diff is renamed accordingly. A level fits when it names an existing
// file (a change to a file), or, for a new file, when it is the level
// another file of the same diff used with the same prefix, or else when
// the new file's directory exists (below the root). Exactly one fitting
// level is used and reported in repairs; more than one is refused with
// the -p levels that would work; none leaves the name to be refused as
// outside the root, with a hint. Only with automatic stripping.
func foreignNames(ws *Workspace, fds []*fileDiff, src source) (repairs []string, err error) {
	foreign := func(name string) bool {
		if name == "" || name == "/dev/null" || !filepath.IsAbs(name) {
			return false
		}
		_, err := ws.rel(name)
		var pe *PathError
		return errors.As(err, &pe) && pe.Rule == RuleOutside
	}
	// The deepest level leaves the base name.
	levels := func(name string) int { return strings.Count(name, "/") }
	// Removed prefix → level, from the files found so far.
	used := map[string]int{}
	type pending struct {
		fd   *fileDiff
		name string
	}
	var creates []pending
	rename := func(fd *fileDiff, k int, name string) {
		for _, p := range []*string{&fd.oldName, &fd.newName} {
			if foreign(*p) {
				*p, _ = stripComponents(*p, k)
			}
		}
		prefix := name[:len(name)-len(mustStrip(name, k))]
		used[prefix] = k
		repairs = append(repairs, fmt.Sprintf("%s names the absolute path %s of another machine; removed the prefix %q (as -p %d)", mustStrip(name, k), name, prefix, k))
	}
	for _, fd := range fds {
		if fd.renameFrom != "" || fd.copyFrom != "" {
			continue
		}
		old := fd.oldName
		if fd.newFile || old == "/dev/null" {
			old = ""
		}
		switch {
		case foreign(old):
			var fits []int
			for k := 1; k <= levels(old); k++ {
				if s, ok := stripComponents(old, k); ok {
					if rel, err := ws.rel(s); err == nil && src.exists(rel) {
						fits = append(fits, k)
					}
				}
			}
			switch len(fits) {
			case 0:
				return nil, &PathError{Path: old, Rule: RuleOutside, Hint: "no file under the root ends like it; if the diff creates it, or names files from another directory, pass -p N (the number of leading components to remove)"}
			case 1:
				rename(fd, fits[0], old)
			default:
				return nil, &PathError{Path: old, Rule: RuleOutside, Hint: "removing leading components finds more than one file here: " + fitList(old, fits) + "; pass the one you mean with -p N"}
			}
		case old == "" && foreign(fd.newName):
			creates = append(creates, pending{fd, fd.newName})
		}
	}
	for _, c := range creates {
		name := c.name
		k := 0
		for prefix, level := range used {
			if strings.HasPrefix(name, prefix) {
				k = level
			}
		}
		if k == 0 {
			var fits []int
			for j := 1; j < levels(name); j++ {
				s, _ := stripComponents(name, j)
				dir := path.Dir(s)
				if dir == "." {
					continue // the root itself fits every name: it decides nothing
				}
				if rel, err := ws.rel(s); err == nil && parentExists(ws, rel) {
					fits = append(fits, j)
				}
			}
			switch len(fits) {
			case 0:
				return nil, &PathError{Path: name, Rule: RuleOutside, Hint: "no directory under the root ends like its directory; pass -p N (the number of leading components to remove) to say where to create it"}
			case 1:
				k = fits[0]
			default:
				return nil, &PathError{Path: name, Rule: RuleOutside, Hint: "removing leading components finds more than one directory here: " + fitList(name, fits) + "; pass the one you mean with -p N"}
			}
		}
		rename(c.fd, k, name)
	}
	return repairs, nil
}

func mustStrip(name string, k int) string {
	s, _ := stripComponents(name, k)
	return s
}

// fitList renders the strip levels that fit name: "src/a.go (-p 4), a.go (-p 5)".
func fitList(name string, ks []int) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s (-p %d)", mustStrip(name, k), k)
	}
	return strings.Join(parts, ", ")
}

// parentExists reports whether the directory of the file rel exists under
// the root (symlinks confined as for files).
func parentExists(ws *Workspace, rel string) bool {
	abs, err := ws.resolve(rel)
	if err != nil {
		return false
	}
	fi, err := os.Stat(filepath.Dir(abs))
	return err == nil && fi.IsDir()
}
