package daemon

import (
	"context"
	"encoding/json"

	"github.com/smith-dev/smith/protocol"
)

// CONTRACT FILE (see api.go). The engine work replaces these bodies.

// Engine is the one engine of a workspace. It is safe for concurrent use by
// any number of Peers. New starts it; Close stops the watcher and waits for
// running turns to end.
type Engine struct {
	cfg Config
}

// New opens (or creates) the workspace's state (journal, dialog index),
// finishes or rolls back any interrupted apply, and starts the watcher.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	panic("daemon.New: not implemented yet")
}

// Close stops the engine. Running turns are cancelled.
func (e *Engine) Close() error { panic("not implemented yet") }

// Peer is one front attached to the engine: an editor connection or the
// CLI. Limits (concurrent turns) are per Peer; notifications go to its
// Editor. Detach cancels the Peer's running turns.
type Peer struct{}

// Attach registers a front. ed may be nil for a front without an editor.
func (e *Engine) Attach(ed Editor) *Peer { panic("not implemented yet") }

// Detach unregisters p and cancels its turns.
func (e *Engine) Detach(p *Peer) { panic("not implemented yet") }

// Chat runs one turn: it resolves the dialog, takes the dialog's
// single-flight lock (ErrDialogBusy at once when taken), checks the limits
// (ErrTooManyTurns, ErrMessageTooLong), streams the upstream's events to
// emit (stamped with dialogId, turnId, seq; emit is called from one
// goroutine, in order) and records every change as a proposal. It returns
// when the turn has ended; a cancelled ctx ends the turn "cancelled" with
// the partial text kept. The returned error is non-nil only when no turn
// was started (limits, busy) or the upstream was unreachable/refused the
// request (then the turn still ended with an error event).
func (e *Engine) Chat(ctx context.Context, p *Peer, req ChatRequest, emit func(protocol.Event)) (*ChatResult, error) {
	panic("not implemented yet")
}

// Dialog is a dialog as fronts list it.
type Dialog struct {
	ID        string `json:"id"`
	Title     string `json:"title,omitempty"`
	CreatedAt string `json:"createdAt,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
	Current   bool   `json:"current,omitempty"`
	Busy      bool   `json:"busy,omitempty"`
}

// Dialogs lists dialogs: the upstream's when it has a dialog API
// (AgentSmithy), else smith's local ones.
func (e *Engine) Dialogs(ctx context.Context) ([]Dialog, error) { panic("not implemented yet") }

// NewDialog creates a dialog and makes it current.
func (e *Engine) NewDialog(ctx context.Context, title string) (Dialog, error) {
	panic("not implemented yet")
}

// SelectDialog makes id the current dialog.
func (e *Engine) SelectDialog(ctx context.Context, id string) error { panic("not implemented yet") }

// RenameDialog sets a dialog's title.
func (e *Engine) RenameDialog(ctx context.Context, id, title string) error {
	panic("not implemented yet")
}

// DeleteDialog deletes a dialog (refused with ErrDialogBusy while a turn runs in it).
func (e *Engine) DeleteDialog(ctx context.Context, id string) error { panic("not implemented yet") }

// History returns a page of a dialog's history, newest last. before < 0
// means the latest page. The raw upstream page is returned as JSON for
// AgentSmithy; local dialogs return smith's own record.
func (e *Engine) History(ctx context.Context, id string, limit, before int) (json.RawMessage, error) {
	panic("not implemented yet")
}

// ChangeFilter selects changes; empty fields match everything.
type ChangeFilter struct {
	DialogID string
	Status   string
}

// Changes lists change proposals, oldest first.
func (e *Engine) Changes(f ChangeFilter) []Change { panic("not implemented yet") }

// Preview returns the text before and after applying the given hunks (all
// when hunks is empty) of a change.
func (e *Engine) Preview(ctx context.Context, changeID string, hunks []string) (*Preview, error) {
	panic("not implemented yet")
}

// Apply applies the given hunks (all pending ones when empty) of a change:
// through p's Editor when the file is open there, atomically on disk
// otherwise. A stale buffer or a file changed since the plan is
// ErrConflict (wrapped with the reason); nothing is written then.
func (e *Engine) Apply(ctx context.Context, p *Peer, changeID string, hunks []string) (*Change, error) {
	panic("not implemented yet")
}

// Reject rejects hunks (all when empty) of a change. For a change already
// written (applied, appliedUpstream) it reverse-applies exactly those hunks.
func (e *Engine) Reject(ctx context.Context, p *Peer, changeID string, hunks []string) (*Change, error) {
	panic("not implemented yet")
}

// Undo restores the exact bytes from before the most recent apply of
// changeID (the most recent apply of any change when empty); it refuses
// with ErrConflict when the file changed since. Works across restarts.
func (e *Engine) Undo(ctx context.Context, p *Peer, changeID string) (*Change, error) {
	panic("not implemented yet")
}

// Approve, Reset and Restore call the AgentSmithy session API of the
// dialog (ErrUnsupported for other upstreams) and return its JSON answer.
func (e *Engine) Approve(ctx context.Context, dialogID string) (json.RawMessage, error) {
	panic("not implemented yet")
}
func (e *Engine) Reset(ctx context.Context, dialogID string) (json.RawMessage, error) {
	panic("not implemented yet")
}
func (e *Engine) Restore(ctx context.Context, dialogID, checkpoint string) (json.RawMessage, error) {
	panic("not implemented yet")
}

// Status describes the engine for `smith status` and smith/status.
type Status struct {
	Workspace     string          `json:"workspace"`
	Upstream      string          `json:"upstream"`
	Dialect       string          `json:"dialect"`
	Reachable     bool            `json:"reachable"`
	Error         string          `json:"error,omitempty"`
	Server        json.RawMessage `json:"server,omitempty"` // the upstream's /health answer
	CurrentDialog string          `json:"currentDialog,omitempty"`
	RunningTurns  int             `json:"runningTurns"`
	Pending       int             `json:"pendingChanges"`
	StateDir      string          `json:"stateDir"`
}

// Status reports the engine's state; it probes the upstream's health.
func (e *Engine) Status(ctx context.Context) Status { panic("not implemented yet") }
