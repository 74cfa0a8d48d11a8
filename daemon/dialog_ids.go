package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/smith-dev/smith/internal/kinderr"
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
		e.dr.mu.Lock()
		for _, d := range e.dr.st.Dialogs {
			ids = append(ids, d.ID)
		}
		e.dr.mu.Unlock()
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
		return "", Errorf(ErrUnknownDialog, "no dialog has the id %s or an id starting with it", id)
	case 1:
		return hits[0], nil
	}
	return "", kinderr.Wrap(ErrUnknownDialog, Errorf(ErrAmbiguousDialog, "%s starts %d dialog ids (%s); type more of it", id, len(hits), strings.Join(hits, ", ")))
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
