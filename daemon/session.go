package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/smith-dev/smith/protocol"
)

// This file is the engine's use of the AgentSmithy REST API: whether the
// upstream has dialogs, the dialog calls, and the session calls (approve,
// reset, restore) plus the health probe of Status.

// Dialog modes: who owns the dialogs.
const (
	modeUnknown  = iota // the upstream did not answer (yet)
	modeUpstream        // AgentSmithy's dialog API
	modeLocal           // smith's local dialogs
)

// dialogMode tells who owns the dialogs. The upstream's dialog API
// (AgentSmithy v1/v2) is probed once with GET /api/dialogs/current and the
// answer remembered; an unreachable upstream is no answer and is probed
// again next time.
func (e *Engine) dialogMode(ctx context.Context) int {
	if e.client == nil {
		return modeLocal
	}
	if d := e.cfg.Dialect; d != protocol.DialectAuto && d != protocol.DialectAgentSmithy {
		return modeLocal
	}
	e.dr.mu.Lock()
	known := e.dr.dialogAPI
	e.dr.mu.Unlock()
	if known != nil {
		if *known {
			return modeUpstream
		}
		return modeLocal
	}
	_, err := e.client.CurrentDialog(ctx)
	var yes bool
	switch {
	case err == nil:
		yes = true
	case noDialogAPI(err):
		yes = false
	default:
		// Unreachable, a 5xx, a cancelled ctx: no answer to remember.
		return modeUnknown
	}
	e.dr.mu.Lock()
	e.dr.dialogAPI = &yes
	e.dr.mu.Unlock()
	if yes {
		return modeUpstream
	}
	return modeLocal
}

// noDialogAPI reports whether err proves that the upstream has no
// dialog API: the path is unknown (404, 405) or answers something that is
// not JSON.
func noDialogAPI(err error) bool {
	var he *protocol.HTTPError
	var ce *protocol.ContentTypeError
	switch {
	case errors.As(err, &he):
		return he.Status == 404 || he.Status == 405 || he.Status == 501
	case errors.As(err, &ce):
		return true
	}
	return false
}

// upstreamCurrentOrNew returns the upstream's current dialog, creating one
// (made current) when there is none.
func (e *Engine) upstreamCurrentOrNew(ctx context.Context) (string, error) {
	cur, err := e.client.CurrentDialog(ctx)
	if err != nil {
		return "", fmt.Errorf("ask the upstream for its current dialog: %w", err)
	}
	if cur.ID != "" {
		return cur.ID, nil
	}
	id, err := e.client.CreateDialog(ctx, "", true)
	if err != nil {
		return "", fmt.Errorf("create a dialog upstream: %w", err)
	}
	return id, nil
}

func (e *Engine) upstreamDialogs(ctx context.Context) ([]Dialog, error) {
	l, err := e.client.ListDialogs(ctx, protocol.ListDialogsOptions{})
	if err != nil {
		return nil, fmt.Errorf("list dialogs: %w", err)
	}
	ds := make([]Dialog, 0, len(l.Dialogs))
	for _, m := range l.Dialogs {
		ds = append(ds, Dialog{ID: m.ID, Title: m.Title, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt})
	}
	e.dr.mu.Lock()
	if e.dr.st.CurrentDialog == "" && l.CurrentDialogID != "" {
		e.dr.st.CurrentDialog = l.CurrentDialogID
	}
	e.dr.mu.Unlock()
	return ds, nil
}

func (e *Engine) upstreamNewDialog(ctx context.Context, title string) (Dialog, error) {
	id, err := e.client.CreateDialog(ctx, title, true)
	if err != nil {
		return Dialog{}, fmt.Errorf("create a dialog: %w", err)
	}
	d := Dialog{ID: id, Title: title}
	if m, err := e.client.Dialog(ctx, id); err == nil {
		d.CreatedAt, d.UpdatedAt = m.CreatedAt, m.UpdatedAt
	}
	return d, nil
}

func (e *Engine) upstreamSelectDialog(ctx context.Context, id string) error {
	if _, err := e.client.Dialog(ctx, id); err != nil {
		if errors.Is(err, protocol.ErrNotFound) {
			return fmt.Errorf("%w: %s", ErrUnknownDialog, id)
		}
		return fmt.Errorf("select dialog %s: %w", id, err)
	}
	if err := e.client.SetCurrentDialog(ctx, id); err != nil {
		return fmt.Errorf("select dialog %s: %w", id, err)
	}
	return nil
}

func (e *Engine) upstreamRenameDialog(ctx context.Context, id, title string) error {
	if err := e.client.RenameDialog(ctx, id, title); err != nil {
		return fmt.Errorf("rename dialog %s: %w", id, err)
	}
	return nil
}

func (e *Engine) upstreamDeleteDialog(ctx context.Context, id string) error {
	if err := e.client.DeleteDialog(ctx, id); err != nil {
		return fmt.Errorf("delete dialog %s: %w", id, err)
	}
	return nil
}

func (e *Engine) upstreamHistory(ctx context.Context, id string, limit, before int) (*protocol.HistoryPage, error) {
	o := protocol.HistoryOptions{Limit: limit}
	if before >= 0 {
		o.Before = &before
	}
	p, err := e.client.History(ctx, id, o)
	if err != nil {
		if errors.Is(err, protocol.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s", ErrUnknownDialog, id)
		}
		return nil, fmt.Errorf("history of dialog %s: %w", id, err)
	}
	return p, nil
}

// sessionDialog is the dialog a session call acts on: the given one, else
// the current one.
func (e *Engine) sessionDialog(ctx context.Context, id string) (string, error) {
	switch e.dialogMode(ctx) {
	case modeLocal:
		why := "it does not answer AgentSmithy's /api/dialogs"
		if d := e.cfg.Dialect; d != protocol.DialectAuto && d != protocol.DialectAgentSmithy {
			why = "the " + string(d) + " dialect has none"
		}
		return "", Errorf(ErrUnsupported, "the upstream has no session API (%s); sessions (approve, reset, restore, checkpoints) need an AgentSmithy server. What smith applied itself, smith undo takes back", why)
	case modeUnknown:
		// No answer yet: say why, rather than "unsupported".
		if _, err := e.client.CurrentDialog(ctx); err != nil {
			return "", fmt.Errorf("ask the upstream for its current dialog: %w", err)
		}
	}
	if id != "" {
		return e.resolveDialog(ctx, id)
	}
	e.dr.mu.Lock()
	id = e.dr.st.CurrentDialog
	e.dr.mu.Unlock()
	if id != "" {
		return id, nil
	}
	cur, err := e.client.CurrentDialog(ctx)
	if err != nil {
		return "", fmt.Errorf("ask the upstream for its current dialog: %w", err)
	}
	if cur.ID == "" {
		return "", fmt.Errorf("%w: there is no current dialog yet; send a chat message first, or name a dialog", ErrUnknownDialog)
	}
	return cur.ID, nil
}

// Session returns the dialog's session as the upstream reports it
// (AgentSmithy GET /api/dialogs/{id}/session: the unapproved files, their
// diffs and base contents).
func (e *Engine) Session(ctx context.Context, dialogID string) (_ *protocol.SessionStatus, err error) {
	defer wrapUpstream(&err)
	return askSession(ctx, e, dialogID, "session of dialog %s", func(id string) (*protocol.SessionStatus, error) {
		return e.client.SessionStatus(ctx, id)
	})
}

// Checkpoints lists the dialog's checkpoints on the active session branch,
// oldest first (AgentSmithy GET /api/dialogs/{id}/checkpoints): what
// Restore can go back to.
func (e *Engine) Checkpoints(ctx context.Context, dialogID string) (_ *protocol.CheckpointList, err error) {
	defer wrapUpstream(&err)
	return askSession(ctx, e, dialogID, "checkpoints of dialog %s", func(id string) (*protocol.CheckpointList, error) {
		return e.client.Checkpoints(ctx, id)
	})
}

// Approve accepts the dialog's session (AgentSmithy POST
// /api/dialogs/{id}/approve) and returns its answer.
func (e *Engine) Approve(ctx context.Context, dialogID string) (_ *protocol.ApproveResult, err error) {
	defer wrapUpstream(&err)
	return askSession(ctx, e, dialogID, "approve dialog %s", func(id string) (*protocol.ApproveResult, error) {
		return e.client.Approve(ctx, id, "")
	})
}

// askSession resolves the dialog (the current one for ""), makes one call
// of the upstream's session API for it and returns the answer; what names
// the call in the error ("... %s" gets the dialog id).
func askSession[T any](ctx context.Context, e *Engine, dialogID, what string, call func(id string) (*T, error)) (*T, error) {
	id, err := e.sessionDialog(ctx, dialogID)
	if err != nil {
		return nil, err
	}
	r, err := call(id)
	if err != nil {
		return nil, fmt.Errorf(what+": %w", id, err)
	}
	return r, nil
}

// Reset abandons the dialog's session: the upstream restores the files to
// the approved state. Every peer is told that the files the session had
// changed were written behind its back.
func (e *Engine) Reset(ctx context.Context, dialogID string) (_ *protocol.ResetResult, err error) {
	defer wrapUpstream(&err)
	id, err := e.sessionDialog(ctx, dialogID)
	if err != nil {
		return nil, err
	}
	files := e.sessionFiles(ctx, id)
	r, err := e.client.Reset(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reset dialog %s: %w", id, err)
	}
	e.filesRewritten(files)
	return r, nil
}

// Restore rolls the workspace back to a checkpoint of the dialog and tells
// every peer which files changed.
func (e *Engine) Restore(ctx context.Context, dialogID, checkpoint string) (_ *protocol.RestoreResult, err error) {
	defer wrapUpstream(&err)
	id, err := e.sessionDialog(ctx, dialogID)
	if err != nil {
		return nil, err
	}
	if checkpoint == "" {
		return nil, errors.New("restore needs a checkpoint id (the user event of each turn carries one; see the dialog's history)")
	}
	before := e.sessionFiles(ctx, id)
	r, err := e.client.Restore(ctx, id, checkpoint)
	if err != nil {
		return nil, fmt.Errorf("restore dialog %s to %s: %w", id, checkpoint, err)
	}
	e.filesRewritten(append(before, e.sessionFiles(ctx, id)...))
	return r, nil
}

// sessionFiles lists the absolute paths the dialog's open session changed
// (best effort: an error yields none).
func (e *Engine) sessionFiles(ctx context.Context, id string) []string {
	s, err := e.client.SessionStatus(ctx, id)
	if err != nil {
		e.log.Debug("session status", "dialog", id, "err", err)
		return nil
	}
	var out []string
	for _, f := range s.ChangedFiles {
		if abs, _, err := e.ws.resolve(f.Path); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// filesRewritten tells every peer that the files changed on disk (an empty
// list means "anything may have changed": one notification without a
// path) and re-validates pending changes.
func (e *Engine) filesRewritten(files []string) {
	seen := map[string]bool{}
	for _, f := range files {
		if !seen[f] {
			seen[f] = true
			e.notifyAll(Notification{Kind: NoteFileChanged, Path: f})
		}
	}
	if len(files) == 0 {
		e.notifyAll(Notification{Kind: NoteFileChanged})
	}
	e.revalidateAll()
}

// Status reports the engine's state; it probes the upstream's health.
func (e *Engine) Status(ctx context.Context) (Status, error) {
	// One part at a time (lock order, change_store.go).
	e.dr.mu.Lock()
	s := Status{
		Workspace:    e.ws.root,
		Upstream:     protocol.RedactURL(e.cfg.Upstream), // what is shown: never a password
		Dialect:      string(e.cfg.Dialect),
		RunningTurns: e.running,
		Detected:     e.detected,
		StateDir:     e.store.dir,
	}
	e.dr.mu.Unlock()
	s.CurrentDialog = e.dr.current()
	s.Pending = e.cs.count(StatusPending)
	if s.Dialect == "" {
		s.Dialect = "auto"
	}
	if e.client == nil {
		s.Error = ErrNoUpstream.Error()
		return s, nil
	}
	h, err := e.client.Health(ctx)
	switch {
	case err == nil:
		s.Reachable = true
		s.Server = h
	case errors.Is(err, protocol.ErrUnreachable):
		s.Error = err.Error()
	default:
		// An answer that is not AgentSmithy's health (404 from another
		// dialect's server) still proves the server is there.
		var he *protocol.HTTPError
		s.Reachable = errors.As(err, &he)
		if !s.Reachable {
			s.Error = err.Error()
		}
	}
	return s, nil
}
