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
// applied before another part of the batch failed are reverted, and the
// error the user sees says what became of each of their files.

// takeBack reverts the edits that the editors eds applied for a batch
// that then failed with failed, and returns failed followed by what
// became of each of their files (failed itself when eds is empty).
//
// Each file is taken back only while the editor still holds exactly what
// smith put there: someone may have typed into it since, and putting
// smith's text before back over that would lose it. A file left as it is
// is named in the error, so that the user knows which file may hold part
// of a change that failed: a log line alone would leave them believing
// nothing was written.
//
// An editor that cannot delete a file (ACP's fs/write_text_file, an LSP
// editor without the delete resource operation) cannot take back a file
// it created: the other files are taken back through it, and the created
// ones are removed on disk, by diffapply's commit guarded by the hash of
// what smith wrote (removeCreated). A file that an editor deleted cannot
// be put back through it (it no longer has the buffer): it is written
// back on disk while it is still absent (restoreDeleted).
//
// The take-back runs to its end even when ctx is cancelled: stopping it
// halfway would leave some files written, some not.
func (e *Engine) takeBack(ctx context.Context, label string, eds []Editor, byEd map[Editor][]FileEdit, failed error) error {
	if len(eds) == 0 {
		return failed
	}
	ctx = context.WithoutCancel(ctx)
	var said []string
	left := false
	for _, ed := range eds {
		for _, r := range e.takeBackEdits(ctx, label, ed, byEd[ed]) {
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

// takeBackResult is what became of one file (or, for an editor that
// failed to take back several, of those files), said for the user; ok
// false means left as it is.
type takeBackResult struct {
	said string
	ok   bool
}

// takeBackEdits takes back the edits fes that ed applied, in their order.
func (e *Engine) takeBackEdits(ctx context.Context, label string, ed Editor, fes []FileEdit) []takeBackResult {
	out := make([]takeBackResult, len(fes))
	var back []FileEdit
	var at []int // out's index of each of back
	for i, fe := range fes {
		if fe.Delete {
			// The editor deleted the file (on disk, as an LSP editor's
			// delete operation does); whether it still has a buffer of it
			// or not, a create through it would be refused or make a new
			// buffer: the file is written back on disk.
			out[i] = e.restoreDeleted(ctx, fe)
			continue
		}
		text, v, ok := ed.Document(fe.Path)
		switch {
		case !ok || !bytes.Equal(text, fe.NewText):
			out[i] = takeBackResult{said: e.relName(fe.Path) + " changed since smith wrote it; left as it is"}
		default:
			back = append(back, FileEdit{Path: fe.Path, Version: v, OldText: fe.NewText, NewText: fe.OldText, Delete: fe.Create})
			at = append(at, i)
		}
	}
	if len(back) == 0 {
		return out
	}
	label += " (taken back)"
	err := ed.ApplyEdit(ctx, label, back)
	if errors.Is(err, ErrUnsupported) && hasDelete(back) {
		// The editor cannot delete the files it created (and has changed
		// nothing): the others go back through it, the created ones are
		// removed on disk.
		var edits []FileEdit
		var editsAt []int
		for j, fe := range back {
			if fe.Delete {
				out[at[j]] = e.removeCreated(ctx, fe)
				continue
			}
			edits, editsAt = append(edits, fe), append(editsAt, at[j])
		}
		back, at, err = edits, editsAt, nil
		if len(back) > 0 {
			err = ed.ApplyEdit(ctx, label, back)
		}
	}
	switch {
	case len(back) == 0:
	case errors.Is(err, ErrEditorWrite):
		if len(back) == 1 {
			// The editor's write of it failed: it holds smith's edit.
			out[at[0]] = takeBackResult{said: fmt.Sprintf("%s cannot be taken back (the editor's write failed: %v); left as it is", e.relName(back[0].Path), err)}
			break
		}
		// Its text says what became of each file: said once, for all.
		out[at[0]] = takeBackResult{said: fmt.Sprintf("Taking back %s through the editor failed: %v", e.relNames(back), err)}
		out = deleteAt(out, at[1:])
	case err != nil:
		for j, i := range at {
			out[i] = takeBackResult{said: fmt.Sprintf("%s cannot be taken back: the editor refused (%v); left as it is", e.relName(back[j].Path), err)}
		}
	default:
		for j, i := range at {
			switch fe := back[j]; {
			case fe.Delete:
				out[i] = takeBackResult{said: e.relName(fe.Path) + " was removed (smith had created it)", ok: true}
			default:
				out[i] = takeBackResult{said: e.relName(fe.Path) + " was put back", ok: true}
			}
		}
	}
	return out
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
		return takeBackResult{said: fmt.Sprintf("%s was deleted and cannot be written back (%v)", name, err)}
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

func hasDelete(fes []FileEdit) bool {
	for _, fe := range fes {
		if fe.Delete {
			return true
		}
	}
	return false
}

// deleteAt removes out's elements at the indexes at (ascending).
func deleteAt(out []takeBackResult, at []int) []takeBackResult {
	kept := out[:0]
	for i, r := range out {
		if len(at) > 0 && at[0] == i {
			at = at[1:]
			continue
		}
		kept = append(kept, r)
	}
	return kept
}

// relName is abs relative to the workspace, as errors name files.
func (e *Engine) relName(abs string) string {
	if rel, err := relTo(e.ws.root, abs); err == nil {
		return rel
	}
	return abs
}

func (e *Engine) relNames(fes []FileEdit) string {
	ps := make([]string, 0, len(fes))
	for _, fe := range fes {
		ps = append(ps, e.relName(fe.Path))
	}
	return strings.Join(ps, ", ")
}
