package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/diffapply"
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
func (f *fsEditor) Document(path string) ([]byte, int32, bool) {
	a := f.a
	caps := a.clientCaps()
	if !caps.Fs.ReadTextFile && !caps.Fs.WriteTextFile {
		return nil, 0, false
	}
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
	if !a.clientCaps().Fs.WriteTextFile || a.fsSessionID() == "" {
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

// ApplyEdit writes through fs/write_text_file, all or none: before writing
// it checks (when the client can read) that each file still holds the text
// the engine planned against, and that a file to create does not exist on
// disk yet, and if a later write fails it puts the earlier files back (a
// file it created is removed from the disk, the one undo ACP cannot say),
// each only while it still holds what smith wrote (rollBack).
// A deletion, or a client without fs.writeTextFile, is
// daemon.ErrUnsupported before anything is written: the engine then
// writes on disk, guarded by the text it read.
func (f *fsEditor) ApplyEdit(ctx context.Context, label string, edits []daemon.FileEdit) error {
	a := f.a
	caps := a.clientCaps()
	if !caps.Fs.WriteTextFile {
		return fmt.Errorf("%w: the client did not declare fs.writeTextFile", daemon.ErrUnsupported)
	}
	for _, e := range edits {
		if e.Delete {
			return fmt.Errorf("%w: ACP's fs/write_text_file cannot delete %s", daemon.ErrUnsupported, a.relName(e.Path))
		}
	}
	sid := a.fsSessionID()
	if sid == "" {
		return fmt.Errorf("%w: no session to write through", daemon.ErrUnsupported)
	}
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
			// The take-back runs to its end even when ctx is cancelled:
			// stopping it halfway would leave some files written, some not.
			return a.rollBack(context.WithoutCancel(ctx), sid, caps.Fs.ReadTextFile, edits[:i], fmt.Errorf("fs/write_text_file %s: %w", a.relName(e.Path), err))
		}
	}
	return nil
}

// rollBack takes back the writes of an ApplyEdit made before one of its
// writes failed (failed says which and why), so that the edit stays all
// or none — but only where that loses nothing. Between smith's write and
// now, someone (the user typing in the editor, the agent, another tool)
// may have changed a file; putting smith's text before back over it, or
// removing a file smith created, would then throw their text away
// silently. So each file is taken back only while it holds exactly the
// text smith wrote, and is otherwise left as it is. The error names every
// file and what became of it: the user sees it in the tool call (or the
// /undo answer) and must know which files to review.
func (a *agent) rollBack(ctx context.Context, sid string, canRead bool, done []daemon.FileEdit, failed error) error {
	if len(done) == 0 {
		return writeFailed(failed.Error() + "; nothing was written")
	}
	parts := make([]string, 0, len(done))
	left := false
	for _, e := range done {
		what, ok := a.takeBack(ctx, sid, canRead, e)
		if !ok {
			left = true
			a.log.Warn("a file written before a failed fs/write_text_file is left as it is", "path", e.Path, "why", what)
		}
		parts = append(parts, a.relName(e.Path)+" "+what)
	}
	msg := fmt.Sprintf("%v. The files smith had written before it: %s.", failed, strings.Join(parts, ". "))
	if left {
		msg += " Review the files left as they are: they may hold part of smith's edit."
	}
	return writeFailed(msg)
}

// writeFailed is the error of an ApplyEdit whose write failed: its text
// says what became of every file, and the engine passes it on as it is
// (daemon.ErrEditorWrite).
type writeFailed string

func (w writeFailed) Error() string        { return string(w) }
func (w writeFailed) Is(target error) bool { return target == daemon.ErrEditorWrite }

// takeBack undoes one write of a failed ApplyEdit when the file still
// holds what smith wrote: an edited file gets its text before back through
// fs/write_text_file, a created file is removed from the disk. ok false
// means the file was left as it is, what saying why; ok true, what says
// what was done.
//
// What "still holds" is checked against: with fs.readTextFile, the
// client's text. smith's write went through the client into the editor's
// buffer, and the put-back goes there too: the buffer is what it would
// overwrite, and text typed in it since is on no disk until it is saved,
// so a check of the disk alone would pass and lose it. Without
// fs.readTextFile, smith cannot see the buffer and the disk is all it can
// check (as the engine's own write is then planned against the disk). A
// removal acts on the disk, so a created file must hold smith's text there
// as well (diffapply checks it again right before removing it); with
// fs.readTextFile the client's buffer of it must hold it too, else the
// user's unsaved text would be left in a buffer whose file smith deleted.
//
// ACP has no conditional write: a change that lands between the check and
// the put-back is not seen. The check runs right before each step to keep
// that window as short as a round trip.
func (a *agent) takeBack(ctx context.Context, sid string, canRead bool, e daemon.FileEdit) (what string, ok bool) {
	const changed = "changed since smith wrote it; left as it is"
	if canRead {
		now, err := a.readText(e.Path)
		if err != nil {
			return fmt.Sprintf("cannot be read back through fs/read_text_file (%v), so smith cannot tell whether it changed since smith wrote it; left as it is", err), false
		}
		if now != string(e.NewText) {
			return changed, false
		}
	}
	if e.Create {
		switch _, err := os.Lstat(e.Path); {
		case errors.Is(err, os.ErrNotExist):
			return "is not on disk (the editor holds it unsaved) and ACP cannot delete a file; left as it is: close it without saving", false
		case err != nil:
			return fmt.Sprintf("cannot be checked on disk (%v); left as it is", err), false
		}
		a.mu.Lock()
		files := a.files
		a.mu.Unlock()
		if files == nil {
			return "cannot be removed: the workspace is closed; left as it is", false
		}
		rm := diffapply.Write{Path: e.Path, ExpectHash: diffapply.Hash(e.NewText)} // no Content: a removal
		if err := files.Commit(ctx, []diffapply.Write{rm}, ""); err != nil {
			if errors.Is(err, diffapply.ErrStale) {
				return changed, false
			}
			return fmt.Sprintf("cannot be removed (%v); left as it is", err), false
		}
		return "was removed (smith had created it)", true
	}
	if !canRead {
		b, err := os.ReadFile(e.Path)
		if err != nil {
			return fmt.Sprintf("cannot be read back from disk (%v), so smith cannot tell whether it changed since smith wrote it; left as it is", err), false
		}
		if string(b) != string(e.NewText) {
			return "does not hold on disk what smith wrote (changed since, or not saved by the editor: smith cannot read the editor's buffer without fs.readTextFile); left as it is", false
		}
	}
	if err := a.writeText(ctx, sid, e.Path, string(e.OldText)); err != nil {
		return fmt.Sprintf("cannot be put back: fs/write_text_file failed too (%v); it still holds smith's text", err), false
	}
	return "was put back", true
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
