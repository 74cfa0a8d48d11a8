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
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.localDialog(t.dialog)
	if d == nil || serverID == "" || serverID == d.ID {
		return false
	}
	if d.UpstreamID != "" || e.localDialog(serverID) != nil {
		d.UpstreamID = serverID
		return false
	}
	old := d.ID
	d.ID, d.UpstreamID = serverID, serverID
	if e.st.CurrentDialog == old {
		e.st.CurrentDialog = serverID
	}
	if t.lock == old && e.busy[old] == t.id {
		delete(e.busy, old)
		e.busy[serverID] = t.id
		t.lock = serverID
	}
	for _, c := range e.changes {
		if c.DialogID == old {
			c.DialogID = serverID
		}
	}
	t.dialog = serverID
	if err := e.saveLocked(); err != nil {
		e.log.Error("save state", "err", err)
	}
	return true
}
