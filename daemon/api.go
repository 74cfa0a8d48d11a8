package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/smith-dev/smith/protocol"
)

// This file holds what the fronts see of the engine: the session API
// (API), its configuration, the Editor a front implements, and the types
// and errors of its results. docs/engine.md describes the parts behind it.

// API is the engine's session API: every front (the CLI, the LSP front,
// the ACP agent, the VS Code extension) programs against it, in process
// or across a connection. *Engine implements it, and so does the client
// of a running smith serve (editor.Client), so a capability is added in
// three places: the engine, the wire mapping (package editor) and the
// client; the compiler finds the rest.
//
// The calls that act for a front (a turn, an apply through its open
// buffers, its turn limit) take the front from ctx (WithPeer); without one
// they act for the engine's own front, which has no editor.
type API interface {
	Chat(ctx context.Context, req ChatRequest, emit func(protocol.Event)) (*ChatResult, error)

	Changes(ctx context.Context, f ChangeFilter) ([]Change, error)
	Preview(ctx context.Context, changeID string, hunks []string) (*Preview, error)
	Apply(ctx context.Context, changeID string, hunks []string) (*Change, error)
	Reject(ctx context.Context, changeID string, hunks []string) (*Change, error)
	Undo(ctx context.Context, changeID string) (*Change, error)
	ApplyPatch(ctx context.Context, dialogID string, changes []protocol.Change) ([]Change, error)

	Dialogs(ctx context.Context) ([]Dialog, error)
	NewDialog(ctx context.Context, title string) (Dialog, error)
	SelectDialog(ctx context.Context, id string) error
	RenameDialog(ctx context.Context, id, title string) error
	DeleteDialog(ctx context.Context, id string) error
	History(ctx context.Context, dialogID string, limit, before int) (*protocol.HistoryPage, error)

	Session(ctx context.Context, dialogID string) (*protocol.SessionStatus, error)
	Checkpoints(ctx context.Context, dialogID string) (*protocol.CheckpointList, error)
	Approve(ctx context.Context, dialogID string) (*protocol.ApproveResult, error)
	Reset(ctx context.Context, dialogID string) (*protocol.ResetResult, error)
	Restore(ctx context.Context, dialogID, checkpoint string) (*protocol.RestoreResult, error)

	Status(ctx context.Context) (Status, error)
}

var _ API = (*Engine)(nil)

type peerKey struct{}

// WithPeer returns ctx carrying p: the engine's calls made with it act for
// p's front (its open buffers, its turns and their limit).
func WithPeer(ctx context.Context, p *Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// peerOf is the front ctx carries, else the engine's own.
func (e *Engine) peerOf(ctx context.Context) *Peer {
	if p, ok := ctx.Value(peerKey{}).(*Peer); ok && p != nil {
		return p
	}
	return e.local
}

// Config configures an Engine. Zero values mean the documented default.
type Config struct {
	Workspace   string           // absolute workspace root (required)
	Upstream    string           // base URL of the chat server
	Dialect     protocol.Dialect // "" = auto-detect
	Token       string           // bearer token for the upstream; never logged
	StateDir    string           // smith's state root; default $XDG_STATE_HOME/smith or ~/.local/state/smith
	MaxTurns    int              // concurrent turns per Peer; default 3
	MaxMessage  int              // characters per message; default 5000
	IdleTimeout time.Duration    // upstream idle watchdog; default protocol.DefaultIdleTimeout
	// ProgressTimeout and TurnLimit: protocol.ClientConfig's (0: default,
	// negative: off).
	ProgressTimeout time.Duration
	TurnLimit       time.Duration
	MaxEventSize    int  // default protocol.DefaultMaxEventSize
	AutoApply       bool // apply proposals as they arrive
	NoWatch         bool // do not start the fsnotify watcher
	// CheckUpstreamWorkspace: the upstream was not named by the user (it
	// was discovered, or is the default address); before sending it
	// anything the client makes sure it serves Workspace
	// (protocol.ClientConfig.Workspace), so that a server started for
	// another project never gets this one's requests.
	CheckUpstreamWorkspace bool
	HTTPClient             *http.Client // default: a client without an overall timeout

	// Additions of the engine work (not in the first contract):
	Header        http.Header   // extra headers for every upstream request (tests: fault injection)
	WatchDebounce time.Duration // quiet time per path before the watcher re-validates; default 200ms
	Logger        *slog.Logger  // default: discard
	// MaxResultText bounds the bytes of ChatResult.Text (and of the
	// Summary's text and reasoning): the beginning is kept and
	// TextTruncated set. 0 keeps everything. emit always gets every delta;
	// smith serve sets it so that a long answer is not held in memory.
	MaxResultText int
}

// Editor is what the engine asks of a front. A terminal front has no open
// buffers (Document reports open=false) and applies nothing itself.
// Methods may be called from any goroutine.
type Editor interface {
	// Document returns the text and version of path (absolute) when it is
	// open in the editor.
	Document(path string) (text []byte, version int32, open bool)
	// ApplyEdit asks the editor to apply edits to its open buffers, all or
	// none (workspace/applyEdit). A refusal is returned as an error,
	// preferably an EditRefusal. An
	// edit the front cannot express at all (deleting a file without the
	// resource-operation capability) is an error wrapping ErrUnsupported,
	// returned before anything changed: the engine then writes those files
	// on disk, guarded by the text it read, and notifies fileChanged.
	// An editor that writes file by file and fails halfway (an ACP
	// client's fs/write_text_file) returns a *PartialEditError naming the
	// edits it wrote, and leaves them: the engine takes them back.
	ApplyEdit(ctx context.Context, label string, edits []FileEdit) error
	// Notify tells the front about something it did not ask for: a change
	// re-validated by the watcher, a change written by the upstream.
	Notify(n Notification)
}

// ErrEditorWrite marks an ApplyEdit error that is not a refusal of a
// buffer that moved on but a write that failed: the engine says so, and
// does not guess at a changed buffer.
var ErrEditorWrite = errors.New("the editor could not write the edit")

// PartialEditError is the error of an ApplyEdit that wrote its edits one
// file at a time and failed before the last: Written are the edits it
// wrote, in order (none when the first write failed), Err why the next
// one failed. It is an ErrEditorWrite.
//
// The editor leaves what it wrote as it is, and the engine takes those
// files back through it (Document, then the reverse edit), as it takes
// back the part of every editor that wrote before a batch failed
// elsewhere: one take-back decides what is safe to put back (only a file
// that still holds exactly what smith wrote) and says what became of
// each file.
type PartialEditError struct {
	Written []FileEdit
	Err     error
}

func (e *PartialEditError) Error() string        { return e.Err.Error() }
func (e *PartialEditError) Unwrap() error        { return e.Err }
func (e *PartialEditError) Is(target error) bool { return target == ErrEditorWrite }

// EditRefusal is an ApplyEdit error of an editor that refused the edit
// and changed nothing. Refusal is the editor's own words (possibly
// empty) and no advice: what the user should do differs between an apply
// (the buffer moved on: review the change and apply again) and the
// take-back of a failed batch (smith was putting the file back: there is
// no plan to list again), so each caller adds its own.
type EditRefusal interface {
	error
	Refusal() string
}

// refusal is the editor's words when err is an EditRefusal.
func refusal(err error) (why string, ok bool) {
	var r EditRefusal
	if !errors.As(err, &r) {
		return "", false
	}
	return r.Refusal(), true
}

// FileCreator is an Editor that also creates files it does not have
// open: an ACP client with fs.writeTextFile writes any path it is given
// (it must create a missing file). The engine sends it the writes that
// create a file (FileEdit.Create) as it sends edits of open files, so
// that the editor's review and undo see new files too, instead of
// creating them on disk behind it. An LSP editor, which learns of a file
// only when the user opens it, does not implement it.
type FileCreator interface {
	Editor
	// Creates reports whether the editor would create path (absolute),
	// which does not exist.
	Creates(path string) bool
}

// FileEdit is a whole-file edit of an open buffer; the front turns it into
// LSP text edits in the negotiated position encoding.
type FileEdit struct {
	Path    string // absolute
	Version int32  // the buffer version the edit was planned against
	OldText []byte
	NewText []byte
	Create  bool
	Delete  bool
}

// Notification kinds.
const (
	NoteChangeUpdated = "changeUpdated" // status or hunks of a change changed
	NoteFileChanged   = "fileChanged"   // a file was written behind the editor (upstream or undo); reload it
)

// Notification is sent to a Peer's Editor.
type Notification struct {
	Kind   string  `json:"kind"`
	Change *Change `json:"change,omitempty"`
	Path   string  `json:"path,omitempty"`
}

// ChatRequest is one user turn.
type ChatRequest struct {
	DialogID string
	Message  string
	Context  *protocol.ChatContext
}

// ChatResult is the result of a turn.
type ChatResult struct {
	DialogID string           `json:"dialogId"`
	TurnID   string           `json:"turnId"`
	Outcome  protocol.Outcome `json:"outcome"`
	Text     string           `json:"text"`
	Changes  []string         `json:"changes"`
	// TextTruncated: Text is only the first Config.MaxResultText bytes of
	// the answer (the events carried all of it).
	TextTruncated bool `json:"textTruncated,omitzero"`
	// Dialect is what the stream turned out to be (or the configured
	// one), Protocol its AgentSmithy generation ("v0", "v1", "v2"; empty
	// for other dialects): a terminal attached to a daemon fills its
	// summary with them.
	Dialect  protocol.Dialect  `json:"dialect,omitempty"`
	Protocol string            `json:"protocol,omitempty"`
	Summary  *protocol.Summary `json:"-"`
}

// Change statuses.
const (
	StatusPending         = "pending"
	StatusApplied         = "applied"
	StatusAppliedUpstream = "appliedUpstream"
	StatusRejected        = "rejected"
	StatusConflict        = "conflict"
	StatusStale           = "stale"
	StatusUndone          = "undone"
)

// Change is a change proposal as fronts see it.
type Change struct {
	ID       string              `json:"id"`
	DialogID string              `json:"dialogId"`
	TurnID   string              `json:"turnId"`
	Path     string              `json:"path"`              // relative to the workspace, slash-separated
	OldPath  string              `json:"oldPath,omitempty"` // addition: the source of a rename
	Kind     protocol.ChangeKind `json:"kind"`
	Status   string              `json:"status"`
	Reason   string              `json:"reason,omitempty"` // why conflict/rejected/stale
	Hunks    []Hunk              `json:"hunks"`
	// Diff is the whole change as a forward unified diff, original to
	// result, whatever the status: for a written change, from the text
	// before it to the text now. Fronts show it as it is; none inverts it.
	// It is filled when the change is read (Changes, Change, notifications)
	// against the text the user sees then, and is not stored.
	Diff string `json:"diff"`
	// Restored is set only on the change Undo returns, when that undo
	// took back more than one file (the writes of one apply are one undo
	// group, such as every file of a smith apply): each file restored, with
	// the change it belonged to, in the order they were written, so that
	// a front can say all that the undo did without listing the changes.
	Restored []RestoredFile `json:"restored,omitempty"`
}

// RestoredFile is one file an undo took back (Change.Restored).
type RestoredFile struct {
	ChangeID string `json:"changeId"`
	Path     string `json:"path"` // relative to the workspace, slash-separated
}

// Hunk is one hunk of a Change. The ranges and the text are where the hunk
// is in the text the user sees at the time the change is read, so that a
// front never re-derives them from headers (docs/protocol.md, "Hunks").
type Hunk struct {
	ID     string `json:"id"`
	Header string `json:"header"` // the hunk's header as the diff stated it (after repair)
	Status string `json:"status"`
	Match  string `json:"match"` // diffapply match level
	Offset int    `json:"offset"`
	// OldStart/OldLines: the old side in the file as it is now (for a
	// written hunk: where its old text would be after undo, in the
	// original). NewStart/NewLines: the new side in the result (for a
	// written hunk: where its text is in the file now). 1-based; a side
	// without lines starts at the line after which it sits (0: the top).
	OldStart int `json:"oldStart"`
	OldLines int `json:"oldLines"`
	NewStart int `json:"newStart"`
	NewLines int `json:"newLines"`
	// Text is the hunk, forward (original to result), header first, its
	// header giving the ranges above.
	Text string `json:"text"`
	// Reason says why a hunk is in conflict (or was not found where it was
	// written), naming the nearest place that almost matched when there is
	// one.
	Reason string `json:"reason,omitempty"`
}

// Preview is the text of a change before and after. For a change not
// written yet, Original is the text the user sees now and Result that text
// with the hunks applied; for a written one, Original is the text with the
// hunks taken back and Result the text now. Diff always goes from Original
// to Result (forward).
type Preview struct {
	Path     string `json:"path"`
	Original string `json:"original"`
	Result   string `json:"result"`
	Diff     string `json:"diff"`
	Hunks    []Hunk `json:"hunks"`  // the hunks previewed, with ranges as in Change
	Status   string `json:"status"` // the change's status
}

// Errors the fronts map to documented codes (docs/protocol.md, docs/cli.md).
var (
	ErrDialogBusy     = errors.New("dialog busy: a turn is already running in this dialog")
	ErrTooManyTurns   = errors.New("too many concurrent turns for this client")
	ErrMessageTooLong = errors.New("message too long")
	ErrUnknownChange  = errors.New("unknown change")
	ErrUnknownDialog  = errors.New("unknown dialog")
	// ErrConflict: the text changed since smith planned against it, or
	// an editor refused the edit. Its text differs from diffapply's
	// ErrConflict ("conflict": a hunk that does not match), which the
	// engine wraps in it, so that a message says which it was.
	ErrConflict = errors.New("change conflict")
	// ErrInvalidState: the change or hunk is not in a state that allows
	// the call (applying a rejected change, nothing to undo).
	ErrInvalidState = errors.New("not possible in this state")
	// ErrUpstreamUnreachable and ErrUpstream wrap the errors of the
	// upstream's client (package protocol): no HTTP answer, or an answer
	// that is an HTTP error or not an event stream. The fronts map only
	// the engine's errors.
	ErrUpstreamUnreachable = errors.New("upstream unreachable")
	ErrUpstream            = errors.New("upstream error")
	// ErrStateCorrupt: the workspace's state file cannot be read.
	ErrStateCorrupt = errors.New("state file unreadable")
	ErrUnsupported  = errors.New("not supported by this upstream")
)
