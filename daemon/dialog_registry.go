package daemon

import (
	"fmt"
	"sync"

	"github.com/smith-dev/smith/protocol"
)

// dialogRegistry holds what the engine knows of dialogs: the local ones
// (ids, titles, messages, the upstream's name for each), the current
// dialog, whether the upstream has a dialog API, the turn counter, and the
// single-flight lock of each dialog (busy: which turn runs in it). The
// upstream's own dialogs, sessions and checkpoints are asked for through
// the client (session.go); the registry keeps only what smith must
// remember of them. It is the dialog part of state.json and saves it.
//
// mu guards every field below, the local dialogs' fields, and a turn's
// dialog and lock (turn.dialog, turn.lock). See change_store.go for the
// lock order.
type dialogRegistry struct {
	mu        sync.Mutex
	st        dialogsState
	busy      map[string]string // dialog id -> turn id holding its single-flight lock
	dialogAPI *bool             // nil: not probed yet
	file      *stateFile
}

func newDialogRegistry(st dialogsState, file *stateFile) *dialogRegistry {
	return &dialogRegistry{st: st, busy: map[string]string{}, file: file}
}

// current returns the current dialog's id ("" when none).
func (dr *dialogRegistry) current() string {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	return dr.st.CurrentDialog
}

// setCurrent makes id the current dialog and saves.
func (dr *dialogRegistry) setCurrent(id string) error {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	dr.st.CurrentDialog = id
	return dr.saveLocked()
}

// nextTurnID hands out the next turn id (t1, t2, ...; never reused after
// a restart once saved).
func (dr *dialogRegistry) nextTurnID() string {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	id := fmt.Sprintf("t%d", dr.st.NextTurn)
	dr.st.NextTurn++
	return id
}

// isBusy reports whether a turn holds dialog id's single-flight lock.
func (dr *dialogRegistry) isBusy(id string) bool {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	_, ok := dr.busy[id]
	return ok
}

// unlockTurn releases the single-flight lock t holds, if any, and saves
// (the turn counter, a dialog's messages).
func (dr *dialogRegistry) unlockTurn(t *turn) error {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	if t.lock != "" && dr.busy[t.lock] == t.id {
		delete(dr.busy, t.lock)
	}
	return dr.saveLocked()
}

// localDialog returns the local dialog id, or nil. Called with mu held.
func (dr *dialogRegistry) localDialog(id string) *localDialog {
	for _, d := range dr.st.Dialogs {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// newLocalDialog creates a local dialog and makes it current. Called with
// mu held.
func (dr *dialogRegistry) newLocalDialog(title string) *localDialog {
	t := now()
	d := &localDialog{Dialog: Dialog{ID: newDialogID(), Title: title, CreatedAt: t, UpdatedAt: t}, Messages: []protocol.HistoryMessage{}}
	dr.st.Dialogs = append(dr.st.Dialogs, d)
	dr.st.CurrentDialog = d.ID
	return d
}

// saveLocked writes the state file. Called with mu held.
func (dr *dialogRegistry) saveLocked() error {
	return dr.file.saveDialogs(&dr.st)
}
