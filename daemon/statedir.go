package daemon

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
