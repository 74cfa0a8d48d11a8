package daemon

import "fmt"

// StateDirOf returns the per-workspace state folder an Engine with cfg
// would use (its StateDir), without opening or locking it. A front looks
// there for the socket of the smith serve that holds the workspace's
// engine (docs/protocol.md, "Terminal attach").
func StateDirOf(cfg Config) (string, error) {
	ws, err := newWorkspace(cfg.Workspace)
	if err != nil {
		return "", err
	}
	return stateDirFor(cfg.StateDir, ws)
}

// stateDirError is the error of a state folder that cannot be made or
// used: what failed, and the setting that moves it (a front shows the
// message as it is, and the user can act on it).
func stateDirError(dir string, err error) error {
	return fmt.Errorf("state directory %s: %w; smith keeps its journal there: set --state-dir (state_dir, SMITH_STATE_DIR) to a directory smith can create and write", dir, err)
}
