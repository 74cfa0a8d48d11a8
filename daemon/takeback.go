package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/smith-dev/smith/diffapply"
)

// This file holds the take-back of a failed batch: the edits editors
// applied before the batch failed (elsewhere, or in the middle of an
// editor's own file-by-file write) are reverted, and the error the user
// sees says what became of each of their files. It is smith's one
// take-back: a front that writes file by file (ACP) reports what it wrote
// (PartialEditError) instead of taking it back itself.

// editorPart is what one editor wrote of a batch: its whole part, or, when
// its own write failed halfway, the edits it wrote (PartialEditError).
type editorPart struct {
	ed    Editor
	edits []FileEdit
}

// takeBack reverts the edits that editors applied for a batch that then
// failed with failed (parts, in the order they were written), and returns
// failed followed by what became of each of their files (failed itself
// when parts is empty).
//
// Each file is taken back only while the editor still holds exactly what
// smith put there: someone may have typed into it since, and putting
// smith's text before back over that would lose it. A file left as it is
// is named in the error, so that the user knows which file may hold part
// of a change that failed: a log line alone would leave them believing
// nothing was written.
//
// Each file is taken back through its editor on its own (takeBackEdit),
// so that the error says for certain what became of it. An editor that
// cannot delete a file (ACP's fs/write_text_file, an LSP editor without
// the delete resource operation) cannot take back a file it created: that
// file is removed on disk, by diffapply's commit guarded by the hash of
// what smith wrote (removeCreated). A file that an editor deleted cannot
// be put back through it (it no longer has the buffer): it is written
// back on disk while it is still absent (restoreDeleted).
//
// The take-back runs to its end even when ctx is cancelled: stopping it
// halfway would leave some files written, some not.
func (e *Engine) takeBack(ctx context.Context, label string, parts []editorPart, failed error) error {
	if len(parts) == 0 {
		return failed
	}
	ctx = context.WithoutCancel(ctx)
	var said []string
	left := false
	for _, p := range parts {
		for _, r := range e.takeBackEdits(ctx, label, p.ed, p.edits) {
			said = append(said, r.said)
			if !r.ok {
				left = true
				e.log.Warn("a file of a failed batch is left as the editor has it", "said", r.said)
			}
		}
	}
	msg := "The files smith had already written through the editor: " + strings.Join(said, ". ") + "."
	if left {
		msg += " Review the files left as they are: they may hold part of smith's edit."
	}
	return takenBack{err: failed, said: msg}
}

// takenBack is the error of a batch that failed after editors applied
// their part: err, then what became of those files.
type takenBack struct {
	err  error
	said string
}

func (t takenBack) Error() string {
	return strings.TrimSuffix(t.err.Error(), ".") + ". " + t.said
}

func (t takenBack) Unwrap() error { return t.err }

// takeBackResult is what became of one file, said for the user; ok
// false means left as it is.
type takeBackResult struct {
	said string
	ok   bool
}

// takeBackEdits takes back the edits fes that ed applied, in their order,
// one file at a time: the take-back is best effort, and the user must
// learn what became of each file, which an all-or-none edit of several
// that fails halfway does not say for certain.
func (e *Engine) takeBackEdits(ctx context.Context, label string, ed Editor, fes []FileEdit) []takeBackResult {
	out := make([]takeBackResult, 0, len(fes))
	for _, fe := range fes {
		out = append(out, e.takeBackEdit(ctx, label+" (taken back)", ed, fe))
	}
	return out
}

// takeBackEdit takes back fe, which ed applied.
func (e *Engine) takeBackEdit(ctx context.Context, label string, ed Editor, fe FileEdit) takeBackResult {
	name := e.relName(fe.Path)
	if fe.Delete {
		// The editor deleted the file (on disk, as an LSP editor's
		// delete operation does); whether it still has a buffer of it or
		// not, a create through it would be refused or make a new
		// buffer: the file is written back on disk.
		return e.restoreDeleted(ctx, fe)
	}
	text, v, ok := ed.Document(fe.Path)
	if !ok || !bytes.Equal(text, fe.NewText) {
		return takeBackResult{said: name + " changed since smith wrote it; left as it is"}
	}
	back := FileEdit{Path: fe.Path, Version: v, OldText: fe.NewText, NewText: fe.OldText, Delete: fe.Create}
	err := ed.ApplyEdit(ctx, label, []FileEdit{back})
	switch {
	case err == nil && back.Delete:
		return takeBackResult{said: name + " was removed (smith had created it)", ok: true}
	case err == nil:
		return takeBackResult{said: name + " was put back", ok: true}
	case back.Delete && errors.Is(err, ErrUnsupported):
		// The editor cannot delete the file it created, and has changed
		// nothing.
		return e.removeCreated(ctx, back)
	case errors.Is(err, ErrEditorWrite):
		return takeBackResult{said: fmt.Sprintf("%s cannot be taken back (the editor's write failed: %v); left as it is", name, err)}
	}
	if why, ok := refusal(err); ok {
		// The editor's words only: the advice of an apply ("list the
		// change again") is wrong here, where smith was putting the file
		// back; the closing sentence of the error says to review it.
		if why != "" {
			why = " (" + why + ")"
		}
		return takeBackResult{said: fmt.Sprintf("%s cannot be taken back: the editor refused the edit%s; left as it is, holding smith's edit", name, why)}
	}
	return takeBackResult{said: fmt.Sprintf("%s cannot be taken back: the editor refused (%v); left as it is", name, err)}
}

// removeCreated removes on disk a file that smith created through an
// editor that cannot delete it (fe is the deletion that takes the
// creation back: OldText is what smith wrote), only while the disk holds
// exactly what smith wrote.
func (e *Engine) removeCreated(ctx context.Context, fe FileEdit) takeBackResult {
	name := e.relName(fe.Path)
	left := func(why string) takeBackResult { return takeBackResult{said: name + " " + why + "; left as it is"} }
	rel, err := relTo(e.ws.root, fe.Path)
	if err != nil {
		return left(fmt.Sprintf("cannot be removed (%v)", err))
	}
	b, exists, err := e.ws.readFile(fe.Path)
	switch {
	case err != nil:
		return left(fmt.Sprintf("cannot be checked on disk (%v)", err))
	case !exists:
		return takeBackResult{said: name + " is not on disk (the editor holds it unsaved) and the editor cannot delete a file; left as it is: close it without saving"}
	case !bytes.Equal(b, fe.OldText):
		return left("does not hold on disk what smith wrote (changed since, or not saved by the editor)")
	}
	rm := diffapply.Write{Path: rel, ExpectHash: diffapply.Hash(fe.OldText)} // no Content: a removal
	if err := e.ws.fs.Commit(ctx, []diffapply.Write{rm}, e.store.txnDir()); err != nil {
		if errors.Is(err, diffapply.ErrStale) || errors.Is(err, diffapply.ErrConflict) {
			return left("changed since smith wrote it")
		}
		return left(fmt.Sprintf("cannot be removed (%v)", err))
	}
	e.queue(Notification{Kind: NoteFileChanged, Path: fe.Path})
	return takeBackResult{said: name + " was removed (smith had created it)", ok: true}
}

// restoreDeleted writes back on disk a file that an editor deleted for
// the batch (fe is that deletion), only while it is still absent.
func (e *Engine) restoreDeleted(ctx context.Context, fe FileEdit) takeBackResult {
	name := e.relName(fe.Path)
	rel, err := relTo(e.ws.root, fe.Path)
	if err != nil {
		return takeBackResult{said: fmt.Sprintf("%s was deleted by the editor and cannot be written back (%v); left deleted", name, err)}
	}
	put := diffapply.Write{Path: rel, ExpectHash: diffapply.HashAbsent, Content: fe.OldText}
	if put.Content == nil {
		put.Content = []byte{} // nil would delete
	}
	if err := e.ws.fs.Commit(ctx, []diffapply.Write{put}, e.store.txnDir()); err != nil {
		if errors.Is(err, diffapply.ErrStale) || errors.Is(err, diffapply.ErrConflict) {
			return takeBackResult{said: name + " was deleted by the editor and exists again (written since); left as it is"}
		}
		return takeBackResult{said: fmt.Sprintf("%s was deleted by the editor and cannot be written back (%v); left deleted", name, err)}
	}
	e.queue(Notification{Kind: NoteFileChanged, Path: fe.Path})
	return takeBackResult{said: name + " was written back on disk (the editor had deleted it)", ok: true}
}

// relNames names the files of fes as errors do, relative to the
// workspace.
func (e *Engine) relNames(fes []FileEdit) string {
	ps := make([]string, 0, len(fes))
	for _, fe := range fes {
		ps = append(ps, e.relName(fe.Path))
	}
	return strings.Join(ps, ", ")
}

// relName is abs relative to the workspace, as errors name files.
func (e *Engine) relName(abs string) string {
	if rel, err := relTo(e.ws.root, abs); err == nil {
		return rel
	}
	return abs
}
