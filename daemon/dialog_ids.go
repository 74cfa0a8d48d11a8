package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/smith-dev/smith/protocol"
)

// Dialog ids as users type them: a unique prefix is enough, like git's
// short hashes, and an id that names no dialog is refused before anything
// is sent (the AgentSmithy server creates an index entry for an unknown id
// on PATCH, so a typo would otherwise become a dialog).

// ErrAmbiguousDialog: a prefix matches more than one dialog.
var ErrAmbiguousDialog = errors.New("ambiguous dialog id")

// resolveDialog returns the full id of the dialog id names: the dialog
// with exactly that id, else the one whose id starts with it. "" stays ""
// (the current dialog). An id that names none is ErrUnknownDialog, a
// prefix of several ErrAmbiguousDialog (naming them).
func (e *Engine) resolveDialog(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	var ids []string
	if e.dialogMode(ctx) != modeLocal {
		// A full id costs one request; a prefix needs the whole list.
		if _, err := e.client.Dialog(ctx, id); err == nil {
			return id, nil
		} else if !errors.Is(err, protocol.ErrNotFound) {
			return "", fmt.Errorf("look up dialog %s: %w", id, err)
		}
		all, err := e.allUpstreamDialogs(ctx)
		if err != nil {
			return "", err
		}
		ids = all
	} else {
		e.mu.Lock()
		for _, d := range e.st.Dialogs {
			ids = append(ids, d.ID)
		}
		e.mu.Unlock()
	}
	return matchDialogID(id, ids)
}

// matchDialogID picks id among ids: exact, else a unique prefix.
func matchDialogID(id string, ids []string) (string, error) {
	if slices.Contains(ids, id) {
		return id, nil
	}
	var hits []string
	for _, c := range ids {
		if strings.HasPrefix(c, id) {
			hits = append(hits, c)
		}
	}
	switch len(hits) {
	case 0:
		return "", fmt.Errorf("%w: no dialog has the id %s or an id starting with it (list them with `smith dialogs`)", ErrUnknownDialog, id)
	case 1:
		return hits[0], nil
	}
	return "", fmt.Errorf("%w: %s starts %d dialog ids (%s); type more of it", ErrAmbiguousDialog, id, len(hits), strings.Join(hits, ", "))
}

// allUpstreamDialogs lists the ids of every upstream dialog, page by page.
func (e *Engine) allUpstreamDialogs(ctx context.Context) ([]string, error) {
	const page = 100
	var ids []string
	for off := 0; ; off += page {
		l, err := e.client.ListDialogs(ctx, protocol.ListDialogsOptions{Limit: page, Offset: off})
		if err != nil {
			return nil, fmt.Errorf("list dialogs: %w", err)
		}
		for _, m := range l.Dialogs {
			ids = append(ids, m.ID)
		}
		if len(l.Dialogs) < page || off > 100000 {
			return ids, nil
		}
	}
}

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
