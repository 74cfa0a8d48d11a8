package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/smith-dev/smith/daemon"
)

// fsTimeout bounds one fs/* request: the engine asks for a file while it
// plans or applies a change and must not hang on a client that never
// answers (it then falls back to the disk, or refuses the write).
const fsTimeout = 30 * time.Second

// fsEditor is the engine's view of the ACP client (daemon.Editor): with
// fs.readTextFile, every file the engine looks at is read through the
// client, so an unsaved buffer wins over the disk; with fs.writeTextFile,
// every write of an existing file goes through the client, so that its
// review and undo see the edit and smith writes nothing on disk itself.
type fsEditor struct{ a *agent }

var _ daemon.FileCreator = (*fsEditor)(nil)

// Document reports a file as "open" whenever the client can write it, so
// that the engine routes the write to ApplyEdit: its text comes from
// fs/read_text_file when the client can read (unsaved edits included),
// else from the disk. A file that does not exist is not open; Creates
// says whether the client creates it.
//
// Between prompts no file is open: the engine's watcher re-validates
// changes when their files change on disk, also right after a prompt
// wrote one, and a client need not answer then (acpx exits at end_turn,
// and says "Request cancelled"). The engine then reads the disk.
func (f *fsEditor) Document(path string) ([]byte, int32, bool) {
	a := f.a
	caps := a.clientCaps()
	if !caps.Fs.ReadTextFile && !caps.Fs.WriteTextFile {
		return nil, 0, false
	}
	if !a.asking.enter() {
		return nil, 0, false
	}
	defer a.asking.leave()
	if _, err := a.confine(path); err != nil {
		return nil, 0, false
	}
	if caps.Fs.ReadTextFile {
		text, err := a.readText(path)
		if err != nil {
			a.log.Debug("fs/read_text_file failed; the engine reads the disk", "path", path, "err", err)
			return nil, 0, false
		}
		return []byte(text), 0, true
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, false
	}
	return b, 0, true
}

// Creates: a client with fs.writeTextFile creates the files smith adds
// (ACP: the client must create a missing file), so that a new file goes
// through it like an edit, and its review and undo see it. Only paths the
// workspace's rules allow are offered.
func (f *fsEditor) Creates(path string) bool {
	a := f.a
	if !a.clientCaps().Fs.WriteTextFile || a.fsSessionID() == "" || !a.asking.isOpen() {
		return false
	}
	_, err := a.confine(path)
	return err == nil
}

// readText asks the client for path's text as the user sees it.
func (a *agent) readText(path string) (string, error) {
	sid := a.fsSessionID()
	if sid == "" {
		return "", errors.New("no session yet")
	}
	ctx, cancel := context.WithTimeout(a.ctx, fsTimeout)
	defer cancel()
	r, err := a.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sdk.SessionId(sid), Path: path})
	if err != nil {
		return "", clientError(err)
	}
	return r.Content, nil
}

// answered is an error the client answered an fs/* request with, worded
// for the user: the SDK's own text for it is the JSON-RPC error object
// ({"code":-32603,"message":"Internal error","data":{...}}), which smith
// would otherwise put in a tool call as it is.
type answered struct{ e *sdk.RequestError }

func (a answered) Error() string {
	msg := "the client answered: " + a.e.Message
	d := a.e.Data
	if m, ok := d.(map[string]any); ok && len(m) == 1 {
		for _, v := range m {
			d = v // {"error": "..."}, {"details": "..."}: the text says it
		}
	}
	switch d := d.(type) {
	case nil:
		return msg
	case string:
		return msg + ": " + d
	}
	if b, err := json.Marshal(d); err == nil {
		msg += " " + string(b)
	}
	return msg
}

func (a answered) Unwrap() error { return a.e }

// clientError words err as answered when the client answered with it.
func clientError(err error) error {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return answered{re}
	}
	return err
}

// ApplyEdit writes through fs/write_text_file, one file at a time: before
// writing it checks (when the client can read) that each file still holds
// the text the engine planned against, and that a file to create does not
// exist on disk yet. If a write fails, the files written before it are
// left as they are and named in a *daemon.PartialEditError: the engine
// takes them back (through Document and ApplyEdit again; a created file,
// which ACP cannot delete, on disk), each only while it still holds what
// smith wrote.
// A deletion, or a client without fs.writeTextFile, is
// daemon.ErrUnsupported before anything is written: the engine then
// writes on disk, guarded by the text it read.
func (f *fsEditor) ApplyEdit(ctx context.Context, label string, edits []daemon.FileEdit) error {
	a := f.a
	caps := a.clientCaps()
	if !caps.Fs.WriteTextFile {
		return daemon.Errorf(daemon.ErrUnsupported, "the client did not declare fs.writeTextFile")
	}
	for _, e := range edits {
		if e.Delete {
			return daemon.Errorf(daemon.ErrUnsupported, "ACP's fs/write_text_file cannot delete %s", a.relName(e.Path))
		}
	}
	sid := a.fsSessionID()
	if sid == "" {
		return daemon.Errorf(daemon.ErrUnsupported, "no session to write through")
	}
	if !a.asking.enter() {
		return daemon.Errorf(daemon.ErrUnsupported, "no prompt is running: the client need not answer now")
	}
	defer a.asking.leave()
	for _, e := range edits {
		if !e.Create {
			continue
		}
		if _, err := os.Lstat(e.Path); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s was created since smith planned to create it; nothing was written", a.relName(e.Path))
		}
	}
	if caps.Fs.ReadTextFile {
		for _, e := range edits {
			if e.Create {
				continue // nothing to read: the client would fail
			}
			now, err := a.readText(e.Path)
			if err != nil {
				return fmt.Errorf("read %s back before writing it: %w", a.relName(e.Path), err)
			}
			if now != string(e.OldText) {
				return fmt.Errorf("%s changed in the editor since smith read it; nothing was written", a.relName(e.Path))
			}
		}
	}
	for i, e := range edits {
		if err := a.writeText(ctx, sid, e.Path, string(e.NewText)); err != nil {
			return &daemon.PartialEditError{Written: edits[:i], Err: fmt.Errorf("fs/write_text_file %s: %w", a.relName(e.Path), err)}
		}
	}
	return nil
}

func (a *agent) writeText(ctx context.Context, sid, path, content string) error {
	ctx, cancel := context.WithTimeout(ctx, fsTimeout)
	defer cancel()
	_, err := a.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sdk.SessionId(sid), Path: path, Content: content})
	return clientError(err)
}

// Notify: the ACP client learns of changes through tool calls, which the
// prompt sends itself; nothing to do for the engine's notifications.
func (f *fsEditor) Notify(daemon.Notification) {}

func (a *agent) fsSessionID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fsSession
}

// relName is abs relative to the workspace, as the rest of smith names
// files in what the user reads (the engine's errors, smith apply): an
// absolute path is long and says nothing the user does not know. A path
// outside the workspace, or before a session opened one, stays absolute.
func (a *agent) relName(abs string) string {
	a.mu.Lock()
	files := a.files
	a.mu.Unlock()
	if files == nil {
		return abs
	}
	if rel, ok := strings.CutPrefix(abs, files.Root()+string(filepath.Separator)); ok {
		return rel
	}
	return abs
}

// confine checks a path the client or the upstream named against the
// workspace's rules (inside the root, also through symlinks; not .git, not
// smith's state; a regular file or none): the error says which rule.
func (a *agent) confine(path string) (string, error) {
	a.mu.Lock()
	files := a.files
	a.mu.Unlock()
	if files == nil {
		return "", errors.New("no workspace yet: open a session first")
	}
	abs, _, err := files.Confine(path)
	return abs, err
}

// clientWindow is when smith may send the client fs/* requests: while it
// answers one of the client's requests (a prompt, a session/load). ACP
// does not forbid them at other times, but a client may have gone once it
// has its answer (acpx exits at end_turn), and the engine's watcher,
// which re-validates changes when their files change, runs at any time.
// Outside the window the engine reads the disk instead. Closing the
// window waits for the requests under way, so that the answer that
// closes it is sent after them.
type clientWindow struct {
	mu        sync.Mutex
	idle      *sync.Cond // signalled when calls drops to 0
	answering int        // client requests being answered
	calls     int        // fs/* requests under way
}

// open marks a client request as being answered.
func (w *clientWindow) open() {
	w.mu.Lock()
	w.answering++
	w.mu.Unlock()
}

// shut ends what open began; the last one waits for the fs/* requests
// under way (each bounded by fsTimeout and the connection's life).
func (w *clientWindow) shut() {
	w.mu.Lock()
	w.answering--
	for w.answering == 0 && w.calls > 0 {
		w.idle.Wait()
	}
	w.mu.Unlock()
}

func (w *clientWindow) isOpen() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.answering > 0
}

// enter reports whether fs/* requests may be sent now, and if so counts
// one under way until leave.
func (w *clientWindow) enter() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.answering == 0 {
		return false
	}
	w.calls++
	return true
}

func (w *clientWindow) leave() {
	w.mu.Lock()
	w.calls--
	if w.calls == 0 {
		w.idle.Broadcast()
	}
	w.mu.Unlock()
}
