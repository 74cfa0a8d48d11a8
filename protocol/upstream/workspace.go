package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// workspace is the project directory the demo agent works on. Paths handed
// to it are slash-separated and relative to the root; it refuses anything
// that would leave the root, unlike the real server (agentsmithy.md 6.1),
// because an embedded test server must never write outside its workspace.
type workspace struct {
	root string // absolute, cleaned
}

// stateDir is the server's own folder inside the workspace; it is never
// listed, searched or snapshotted.
const stateDir = ".agentsmithy"

// Limits that keep a demo server on a big directory responsive.
const (
	maxFileSize  = 1 << 20 // files above this are not read, searched or snapshotted (is_too_large)
	maxFileCount = 5000
)

func newWorkspace(dir string) (*workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", abs)
	}
	return &workspace{root: filepath.Clean(abs)}, nil
}

// errOutside reports a path that leaves the workspace.
var errOutside = errors.New("path is outside the workspace")

// abs resolves a relative (or absolute, inside the root) path.
func (w *workspace) abs(rel string) (string, error) {
	p := filepath.FromSlash(rel)
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.root, p)
	}
	p = filepath.Clean(p)
	r, err := filepath.Rel(w.root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || r == "." {
		return "", fmt.Errorf("%s: %w", rel, errOutside)
	}
	if first := strings.Split(filepath.ToSlash(r), "/")[0]; first == stateDir || first == ".git" {
		return "", fmt.Errorf("%s: %w", rel, errOutside)
	}
	return p, nil
}

// rel is the slash form of a path inside the root.
func (w *workspace) rel(abs string) string {
	r, err := filepath.Rel(w.root, abs)
	if err != nil {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(r)
}

// read returns the file's text as Python's read_text sees it (universal
// newlines: CRLF and CR become LF), and whether it exists.
func (w *workspace) read(rel string) (string, bool, error) {
	p, err := w.abs(rel)
	if err != nil {
		return "", false, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", rel, err)
	}
	return universalNewlines(string(b)), true, nil
}

func universalNewlines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// files lists the workspace's regular files (slash paths, sorted), skipping
// the server's state, VCS folders and files too big to be text worth
// reading.
func (w *workspace) files() ([]string, error) {
	var out []string
	err := filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped, as a search tool would
		}
		name := d.Name()
		if d.IsDir() {
			if p != w.root && (name == stateDir || name == ".git" || name == "node_modules" || name == ".hg" || name == ".svn") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > maxFileSize {
			return nil
		}
		out = append(out, w.rel(p))
		if len(out) >= maxFileCount {
			return fs.SkipAll
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// textFile reports whether content looks like text (no NUL in the first 8 KiB).
func textFile(b []byte) bool {
	return !bytes.Contains(b[:min(len(b), 8192)], []byte{0})
}

// searchHit is one line found by a plain text search.
type searchHit struct {
	Path string
	Line int
	Text string
}

// search finds lines containing any of the words (case-insensitive), in
// file order, at most limit hits.
func (w *workspace) search(words []string, limit int) []searchHit {
	files, _ := w.files()
	var hits []searchHit
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(w.root, filepath.FromSlash(rel)))
		if err != nil || !textFile(b) {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 64*1024), maxFileSize)
		for n := 1; sc.Scan(); n++ {
			low := strings.ToLower(sc.Text())
			for _, wd := range words {
				if strings.Contains(low, strings.ToLower(wd)) {
					hits = append(hits, searchHit{Path: rel, Line: n, Text: strings.TrimSpace(sc.Text())})
					break
				}
			}
			if len(hits) >= limit {
				return hits
			}
		}
	}
	return hits
}
