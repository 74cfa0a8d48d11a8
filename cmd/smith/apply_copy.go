package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aymanbagabas/go-udiff"

	"github.com/smith-dev/smith/diffapply"
)

// A copy (git's "copy from"/"copy to") goes to the engine as the creation
// of its target: the engine has no change that reads one file to write
// another, and the undo of a creation is what takes a copy back (the
// target removed, the source untouched).

// copyDiff is the diff smith apply gives the engine for a copy whose
// target path (relative to root) gets content: a creation, from
// /dev/null, as smith apply gives a file git creates. ok is false when
// that diff, planned as the engine plans it, does not give content (a
// carriage return a diff line cannot carry): the patch is then written
// without the engine. An empty content has no diff ("", ok).
func copyDiff(root, path string, content []byte) (diff string, ok bool) {
	if len(content) == 0 {
		return "", true
	}
	diff = udiff.Unified("/dev/null", "b/"+path, "", string(content))
	if bytes.IndexByte(content, '\r') < 0 {
		return diff, true
	}
	p, err := diffapply.Plan(root, []byte(diff), diffapply.Options{Target: path, ReadFile: func(string) ([]byte, bool, error) {
		return nil, false, nil
	}})
	if err != nil || len(p.Files) != 1 || p.Files[0].Conflict != nil {
		return diff, false
	}
	for _, h := range p.Files[0].Hunks {
		if !h.OK() {
			return diff, false
		}
	}
	return diff, bytes.Equal(p.Files[0].After, content)
}

// copyMode is the permission bits the engine gives the target of copy f
// (protocol.Change.Mode): the patch's new mode, else its source's, as a
// write of the patch without the engine gives them; 0 for
// diffapply.NewFileMode, which a creation gets anyway.
func copyMode(root string, f *diffapply.File) fs.FileMode {
	mode := f.Mode
	if mode == 0 {
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(f.OldPath))); err == nil && fi.Mode().IsRegular() {
			mode = fi.Mode().Perm()
		}
	}
	if mode == diffapply.NewFileMode {
		return 0
	}
	return mode
}
