package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

// This file holds the Engine, the coordinator of turns, with the Peers
// (the fronts attached to it) and their lifetime. Its two parts have files
// of their own: the change store (change_store.go: the records and the
// undo journal, with their lock; the Engine's change calls in changes.go,
// plan.go, hunks.go, apply.go, reject_journal.go and watcher.go work on
// it) and the dialog registry (dialog_registry.go; the Engine's dialog
// calls in dialogs.go, dialog_ids.go, dialog_adopt.go and session.go).
// Turns are in chat.go. The lock order is in change_store.go.

// Defaults for Config.
const (
	DefaultMaxTurns      = 3
	DefaultMaxMessage    = 5000
	DefaultWatchDebounce = 200 * time.Millisecond
)

// Engine is the one engine of a workspace. It is safe for concurrent use by
// any number of Peers. New starts it and takes the workspace's state folder
// (a second Engine on it fails with ErrStateLocked); Close cancels the
// running turns, waits for them to end, stops the watcher and releases the
// folder. Chat after Close fails with ErrClosed.
//
// Notifications (Editor.Notify) are delivered to each Peer in order from
// a goroutine of that Peer's own (a bounded queue, see mailbox), never
// while the engine holds a lock, so an Editor may call the Engine from
// Notify, and an Editor that stops reading holds up neither turns nor the
// other Peers. Delivery is asynchronous: a call (Apply, a turn) may return
// before its notifications reach the Editors.
type Engine struct {
	cfg    Config
	ws     workspace
	store  store
	log    *slog.Logger
	client *protocol.Client

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	turns  sync.WaitGroup // running Chat calls
	watch  *watcher       // nil with NoWatch
	unlock func() error   // releases the state folder's lock

	cs *changeStore    // changes and the undo journal, with their own lock
	dr *dialogRegistry // dialogs and their single-flight locks, with their own lock

	// mu guards the coordinator's own state below (and each Peer's turns);
	// it is never held while waiting on the network or on an Editor, and
	// the change store's lock is never taken under it (change_store.go).
	mu       sync.Mutex
	peers    map[*Peer]struct{}
	running  int
	outbox   []Notification // queued under the change store's writeMu, sent by flush
	detected string         // dialect (and version) of the last stream
	closed   bool
	local    *Peer // the engine's own front (no editor): calls without WithPeer

	flushDiffsAt int // applyPatch: flushDiffsAt, smaller in tests
	holdBelow    int // Undo holds the texts of files below it (keepTextBelow; tests vary it)
}

// New opens (or creates) the workspace's state (journal, dialog index),
// finishes or rolls back any interrupted apply, and starts the watcher.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	ws, err := newWorkspace(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	cfg.Workspace = ws.root
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = DefaultMaxMessage
	}
	if cfg.WatchDebounce <= 0 {
		cfg.WatchDebounce = DefaultWatchDebounce
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, err := stateDirFor(cfg.StateDir, ws)
	if err != nil {
		return nil, err
	}
	// No write may land in smith's state (of any workspace), even when it
	// lies inside this workspace: a change could forge a journal there.
	if ws, err = newWorkspace(cfg.Workspace, filepath.Dir(dir)); err != nil {
		return nil, err
	}
	e := &Engine{
		flushDiffsAt: flushDiffsAt,
		holdBelow:    keepTextBelow,
		cfg:          cfg,
		ws:           ws,
		store:        store{dir: dir},
		log:          log.With("workspace", ws.root),
		peers:        map[*Peer]struct{}{},
	}
	if e.unlock, err = lockState(dir); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			e.unlock()
		}
	}()
	st, err := e.store.load(ws)
	if errors.Is(err, errNullState) {
		e.log.Warn("the state file held null: starting with no changes, dialogs or undo history", "file", e.store.statePath())
	} else if err != nil {
		return nil, err
	}
	file, err := newStateFile(e.store, st)
	if err != nil {
		return nil, err
	}
	e.cs = newChangeStore(st.changesState, file)
	e.cs.syncParent = st.fresh
	e.dr = newDialogRegistry(st.dialogsState, file)
	// A multi-file write cut short by a crash is rolled back first, then
	// the undo journal learns which of its pending writes happened.
	// A journal that cannot be settled is set aside and reported here,
	// once; it does not keep the engine from starting.
	if n, err := diffapply.Recover(ws.root, e.store.txnDir()); err != nil {
		e.log.Error("an interrupted write could not be settled completely; see the files named", "journal", e.store.txnDir(), "err", err)
	} else if n > 0 {
		e.log.Warn("finished or rolled back interrupted writes", "transactions", n)
	}
	e.store.removeTemps()
	if err := e.recover(); err != nil {
		return nil, err
	}
	if cfg.Upstream != "" {
		e.client = protocol.NewClient(e.clientConfig())
	}
	e.local = e.Attach(nil)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	if !cfg.NoWatch {
		w, err := newWatcher(e)
		if err != nil {
			e.cancel()
			return nil, fmt.Errorf("start the file watcher (set NoWatch to run without it): %w", err)
		}
		e.watch = w
		e.cs.setMoved(w.changesMoved)
	}
	// Files may have changed while no engine was watching.
	e.revalidateAll()
	ok = true
	return e, nil
}

// Close stops the engine. Running turns are cancelled; Close waits for
// them to end and for the watcher to stop. Calling it twice is harmless.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	e.turns.Wait()
	e.mu.Lock()
	for p := range e.peers {
		p.box.close()
	}
	e.mu.Unlock()
	var errs []error
	if e.client != nil {
		errs = append(errs, e.client.Close())
	}
	if e.watch != nil {
		errs = append(errs, e.watch.close())
	}
	errs = append(errs, e.unlock(), e.ws.fs.Close())
	return errors.Join(errs...)
}

// StateDir is the per-workspace folder holding the journal and dialog index.
func (e *Engine) StateDir() string { return e.store.dir }

// Workspace is the workspace root as configured (absolute).
func (e *Engine) Workspace() string { return e.ws.root }

// Peer is one front attached to the engine: an editor connection or the
// CLI. Limits (concurrent turns) are per Peer; notifications go to its
// Editor. Detach cancels the Peer's running turns.
type Peer struct {
	e   *Engine
	ed  Editor
	box *mailbox // delivers ed's notifications; nil without an Editor

	// guarded by e.mu (the Engine's own lock)
	turns    map[string]context.CancelFunc // turn id -> cancel
	detached bool
}

// Attach registers a front. ed may be nil for a front without an editor.
func (e *Engine) Attach(ed Editor) *Peer {
	p := &Peer{e: e, ed: ed, turns: map[string]context.CancelFunc{}}
	if ed != nil {
		p.box = newMailbox(ed, e.log)
	}
	e.mu.Lock()
	e.peers[p] = struct{}{}
	e.mu.Unlock()
	return p
}

// Detach unregisters p and cancels its turns. It does not wait for them.
func (e *Engine) Detach(p *Peer) {
	e.mu.Lock()
	delete(e.peers, p)
	p.detached = true
	p.box.close()
	for _, cancel := range p.turns {
		cancel()
	}
	e.mu.Unlock()
}

// queue holds n until flush. Code that runs under the change store's writeMu queues its
// notifications instead of sending them, so that an Editor's Notify never
// runs while smith holds a lock it might need again (an editor that asks
// for the change list when told about a change).
func (e *Engine) queue(n Notification) {
	e.mu.Lock()
	e.outbox = append(e.outbox, n)
	e.mu.Unlock()
}

// flush sends the queued notifications, in order. Call it after
// releasing the change store's writeMu (a deferred flush registered before the lock's
// deferred unlock runs after it).
func (e *Engine) flush() {
	e.mu.Lock()
	out := e.outbox
	e.outbox = nil
	e.mu.Unlock()
	for _, n := range out {
		e.notifyAll(n)
	}
}

// notifyAll queues n for every attached Peer's Editor; it does not wait
// for any of them.
func (e *Engine) notifyAll(n Notification) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for p := range e.peers {
		p.box.push(n)
	}
}

// listened reports whether a notification reaches anyone: an attached
// Peer with an Editor. Without one, a change's view (planning it against
// the text again) is not computed for notifications alone.
func (e *Engine) listened() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for p := range e.peers {
		if p.box != nil {
			return true
		}
	}
	return false
}

// document returns the text the user sees of abs: the open buffer of p's
// editor, else of any attached editor, else nothing (open=false).
func (e *Engine) document(p *Peer, abs string) (text []byte, version int32, ed Editor, open bool) {
	if p != nil && p.ed != nil {
		if t, v, ok := p.ed.Document(abs); ok {
			return t, v, p.ed, true
		}
	}
	e.mu.Lock()
	eds := make([]Editor, 0, len(e.peers))
	for q := range e.peers {
		if q != p && q.ed != nil {
			eds = append(eds, q.ed)
		}
	}
	e.mu.Unlock()
	for _, ed := range eds {
		if t, v, ok := ed.Document(abs); ok {
			return t, v, ed, true
		}
	}
	return nil, 0, nil, false
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

// ChangeFilter selects changes; empty fields match everything.
type ChangeFilter struct {
	DialogID string
	Status   string
	TurnID   string // addition: the changes of one turn
}

// Status describes the engine for `smith status` and smith/status.
type Status struct {
	Workspace     string           `json:"workspace"`
	Upstream      string           `json:"upstream"`
	Dialect       string           `json:"dialect"`
	Detected      string           `json:"detected,omitempty"` // addition: what the last turn's stream was, e.g. "agentsmithy v2"
	Reachable     bool             `json:"reachable"`
	Error         string           `json:"error,omitempty"`
	Server        *protocol.Health `json:"server,omitempty"` // the upstream's /health answer
	CurrentDialog string           `json:"currentDialog,omitempty"`
	RunningTurns  int              `json:"runningTurns"`
	Pending       int              `json:"pendingChanges"`
	StateDir      string           `json:"stateDir"`
}
