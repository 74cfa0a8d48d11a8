package daemon

// adoptServerID makes the server's name for the turn's local dialog that
// dialog's id: a server that names the dialog in its stream (AgentSmithy's
// dialog_id, a lifecycle session) while it offered no id before the
// stream (no dialog API, or GET /api/dialogs/current answered 404) is the
// truth, and the dialog smith made up for the turn becomes that one — the
// same dialog, not a second. From then on the turn's events, its result,
// its changes, `smith dialogs` and the next turn's request carry the
// server's id. It returns false, having only remembered serverID as the
// upstream's name, when the dialog learnt a server id before (its id is
// then the one users know) or another local dialog already bears it.
func (e *Engine) adoptServerID(t *turn, serverID string) bool {
	old, ok := e.adoptInRegistry(t, serverID)
	if !ok {
		return false
	}
	// The registry's lock is released: the change store's is never taken
	// under it (lock order, change_store.go). A listing in between sees the
	// turn's changes under the old id for that moment.
	if err := e.cs.renameDialog(old, serverID); err != nil {
		e.log.Error("save state", "err", err)
	}
	return true
}

// adoptInRegistry renames t's local dialog to serverID in the registry
// (dialog, current dialog, single-flight lock, the turn) and saves. It
// returns the old id, and false when the dialog keeps its id.
func (e *Engine) adoptInRegistry(t *turn, serverID string) (string, bool) {
	e.dr.mu.Lock()
	defer e.dr.mu.Unlock()
	d := e.dr.localDialog(t.dialog)
	if d == nil || serverID == "" || serverID == d.ID {
		return "", false
	}
	if d.UpstreamID != "" || e.dr.localDialog(serverID) != nil {
		d.UpstreamID = serverID
		return "", false
	}
	old := d.ID
	d.ID, d.UpstreamID = serverID, serverID
	if e.dr.st.CurrentDialog == old {
		e.dr.st.CurrentDialog = serverID
	}
	if t.lock == old && e.dr.busy[old] == t.id {
		delete(e.dr.busy, old)
		e.dr.busy[serverID] = t.id
		t.lock = serverID
	}
	t.dialog = serverID
	if err := e.dr.saveLocked(); err != nil {
		e.log.Error("save state", "err", err)
	}
	return old, true
}
