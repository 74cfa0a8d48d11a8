package daemon

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/internal/kinderr"
)

// ErrOutsideWorkspace is returned (wrapped with the path and the rule) for
// a change whose target breaks the workspace rules: outside the root
// (also through a symlink), "..", .git, smith's state folder, or not a
// regular file. The rules are diffapply.Workspace's, the one set every
// writer uses; the error also matches diffapply.ErrUnsafePath.
var ErrOutsideWorkspace = errors.New("path refused")

// workspace knows the root in two spellings: as configured (for paths shown
// to the user and handed to the editor) and symlink-resolved (the key of
// the state folder), and the diffapply.Workspace that confines every read
// and write.
type workspace struct {
	root     string // cleaned absolute root as configured
	resolved string // root after filepath.EvalSymlinks
	fs       *diffapply.Workspace
}

// newWorkspace opens root; writes into any of protect (smith's state
// folder) are refused. No file descriptor is held until first use.
func newWorkspace(root string, protect ...string) (workspace, error) {
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
	fs, err := diffapply.OpenWorkspace(abs, protect...)
	if err != nil {
		return workspace{}, fmt.Errorf("workspace %s: %w", root, err)
	}
	return workspace{root: abs, resolved: res, fs: fs}, nil
}

// resolve maps a path named by the upstream (absolute, or relative to the
// root) to its absolute form under the configured root and its
// slash-separated workspace-relative form, by diffapply.Workspace.Confine.
// The file itself need not exist (a creation).
func (w workspace) resolve(name string) (abs, rel string, err error) {
	abs, rel, err = w.fs.Confine(name)
	if err != nil {
		return "", "", kinderr.Wrap(ErrOutsideWorkspace, err)
	}
	return abs, rel, nil
}

// pathRefusal says why resolve refused a path, without naming the path: the
// messages that quote it (a change's reason, the violation warning) name
// it already, and "refused: path refused: refusing path" said it thrice.
func pathRefusal(err error) string {
	var pe *diffapply.PathError
	if !errors.As(err, &pe) {
		return err.Error()
	}
	if pe.Hint != "" {
		return "the path " + pe.Rule + "; " + pe.Hint
	}
	return "the path " + pe.Rule
}

// readFile returns the bytes of a workspace file and whether it exists,
// through the workspace's confinement: it never blocks on a FIFO or a
// device (those are refused), and never follows a symlink out.
func (w workspace) readFile(abs string) ([]byte, bool, error) {
	return w.fs.ReadFile(abs)
}

// readFileInto is readFile into buf when it can hold the file
// (diffapply.Workspace.ReadFileInto).
func (w workspace) readFileInto(abs string, buf []byte) ([]byte, bool, error) {
	return w.fs.ReadFileInto(abs, buf)
}
