package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

// This file holds the writes of changes: Apply, ApplyChanges, ApplyPatch
// and Undo, and the batch write they share.
//
// A batch is a set of file writes that happen together or not at all:
// the files open in an editor go to that editor in one ApplyEdit (which is
// all-or-none by the Editor contract), the others to disk in one
// diffapply.Commit (atomic, with a crash journal). Editors go first
// because they may refuse; should the disk commit fail after them, their
// edits are taken back.

// fileWrite is one file of a batch.
type fileWrite struct {
	abs        string
	rel        string
	tg         target // what smith read; the write is guarded by it
	next       []byte
	nextExists bool
	nextHash   string  // hashBytes(next) once the journal has it ("": not yet)
	before     blobRef // where the journal keeps tg's text (addUndo)
	staged     bool    // before is staged already (stageBefore)
	via        string  // "editor" | "disk", set by writeBatch
	// mode is the permission bits the write gives the file (0: a file
	// keeps its bits, one created gets diffapply.NewFileMode): a change
	// that sets a mode (protocol.Change.Mode), the target of a rename,
	// the undo of a deletion or of a mode change (undoRecord.Mode). A
	// file an editor writes gets it on disk (setModes).
	mode fs.FileMode
	// nextFrom gives next when it is not held (next nil, nextHash set):
	// the undo of a large file on disk, whose text before the disk
	// commit reads from the journal as it writes that file.
	nextFrom func() ([]byte, error)
	// beforeFrom gives tg's text when it is not held and the journal does
	// not keep it (the undo of a large file: spareFile).
	beforeFrom func() ([]byte, error)
}

// nextStreamed reports whether what w writes is not held but given by
// nextFrom when the commit writes it (its hash in nextHash).
func (w *fileWrite) nextStreamed() bool {
	return w.nextExists && w.next == nil && w.nextFrom != nil
}

// nextContentHash is contentHash of what w writes.
func (w *fileWrite) nextContentHash() string {
	if w.nextStreamed() {
		return w.nextHash
	}
	return contentHash(w.next, w.nextExists)
}

// dropBefore lets go of the text w replaces once the journal holds it,
// when the write goes to disk, the text's hash is known and it is of
// keepTextBelow or more: the disk commit guards the write by that hash
// (and reads the file itself), so a patch of many large files does not
// keep every file's old text until its one commit. A smaller text is
// kept: the disk commit takes it as the file's bytes (diffapply's
// Write.Expect), which it would otherwise read and hash again, and holds
// it until its end either way. An editor's write keeps it (the edit
// names it, and a failed batch puts it back).
func (w *fileWrite) dropBefore() {
	if !w.tg.open && (w.tg.hash != "" || !w.tg.exists) && len(w.tg.text) >= keepTextBelow {
		w.tg.text = nil
	}
}

func (e *Engine) writeBatch(ctx context.Context, label string, ws []*fileWrite) error {
	// Group the open files by editor, keeping the order of first use.
	var eds []Editor
	byEd := map[Editor][]FileEdit{}
	writes := map[Editor][]*fileWrite{}
	var disk []diffapply.Write
	toDisk := func(w *fileWrite) error {
		dw, err := e.diskWrite(w)
		if err != nil {
			return err
		}
		disk = append(disk, dw)
		w.via = "disk"
		return nil
	}
	for _, w := range ws {
		if w.tg.open {
			if _, ok := byEd[w.tg.ed]; !ok {
				eds = append(eds, w.tg.ed)
			}
			byEd[w.tg.ed] = append(byEd[w.tg.ed], FileEdit{Path: w.abs, Version: w.tg.version, OldText: w.tg.text, NewText: w.next, Create: !w.tg.exists && w.nextExists, Delete: !w.nextExists})
			writes[w.tg.ed] = append(writes[w.tg.ed], w)
			w.via = "editor"
			continue
		}
		if err := toDisk(w); err != nil {
			return err
		}
	}
	var done []editorPart
	// fail takes back what the editors in done applied: err then says
	// what became of their files.
	fail := func(err error) error { return e.takeBack(ctx, label, done, err) }
	for _, ed := range eds {
		err := ed.ApplyEdit(ctx, label, byEd[ed])
		if errors.Is(err, ErrUnsupported) {
			// The editor cannot express the edit (deleting a file without
			// the resource-operation capability) and has changed nothing:
			// its files are written on disk like closed ones, guarded by
			// the text smith read (a buffer with unsaved edits that differ
			// from the disk makes the commit refuse: a conflict, never a
			// wrong write), and the editors are told to reload them
			// (fileChanged, since via is "disk").
			e.log.Debug("editor cannot apply the edit; writing on disk", "paths", editPaths(byEd[ed]), "err", err)
			for _, w := range writes[ed] {
				if err := toDisk(w); err != nil {
					return fail(err)
				}
			}
			continue
		}
		if errors.Is(err, ErrEditorWrite) {
			// An editor that wrote part of its edit leaves it: it is taken
			// back with the parts of the editors before it.
			if pe := (*PartialEditError)(nil); errors.As(err, &pe) && len(pe.Written) > 0 {
				done = append(done, editorPart{ed, pe.Written})
			}
			err = Errorf(ErrConflict, "the editor could not write the edit of %s: %v", e.relNames(byEd[ed]), err)
			if len(done) == 0 {
				err = fmt.Errorf("%w; nothing was written", err)
			}
			return fail(err)
		}
		if why, ok := refusal(err); ok {
			if why != "" {
				why = " (" + why + ")"
			}
			return fail(Errorf(ErrConflict, "the editor refused the edit of %s%s; the buffer may have changed since smith read it: review the change and apply again", e.relNames(byEd[ed]), why))
		}
		if err != nil {
			return fail(Errorf(ErrConflict, "the editor refused the edit of %s: %v; the buffer may have changed since smith read it: review the change and apply again", e.relNames(byEd[ed]), err))
		}
		done = append(done, editorPart{ed, byEd[ed]})
	}
	// The modes of the files the editors wrote, on disk: before the disk
	// commit, which then fails the batch with them set back.
	unsetModes, err := setModes(ws)
	if err != nil {
		return fail(err)
	}
	if len(disk) == 0 {
		return nil
	}
	if err := e.ws.fs.Commit(ctx, disk, e.store.txnDir()); err != nil {
		unsetModes()
		if je := (journalError{}); errors.As(err, &je) {
			if u := (*undoDataErr)(nil); len(done) > 0 && errors.As(je.err, &u) {
				u.edited = true
			}
			return journalError{fail(je.err)} // Undo says it as it is
		}
		if len(done) == 0 {
			return commitError(disk, err)
		}
		// Not "nothing was written": the editors wrote, and fail says
		// what became of their files.
		if errors.Is(err, diffapply.ErrStale) || errors.Is(err, diffapply.ErrConflict) {
			return fail(Errorf(ErrConflict, "a file changed while smith was writing it: %v", err))
		}
		return fail(fmt.Errorf("write %s: %w", diskPaths(disk), err))
	}
	return nil
}

// setModes gives the files of ws that an editor wrote (via "editor") the
// permission bits their writes set (fileWrite.mode): an editor changes a
// buffer's text, never its file's mode, so smith sets the mode of the
// file on disk, which the editor's save keeps. unset gives them their
// bits before again, for a batch that fails after. A file that is not on
// disk (a buffer never saved) cannot take a mode: the batch is refused,
// saying what to do, and nothing of it is left set.
func setModes(ws []*fileWrite) (unset func(), err error) {
	type set struct {
		abs string
		old fs.FileMode
	}
	var done []set
	unset = func() {
		for _, s := range slices.Backward(done) {
			os.Chmod(s.abs, s.old) // best effort: the file was chmodded just before
		}
	}
	for _, w := range ws {
		if w.via != "editor" || w.mode == 0 || !w.nextExists {
			continue
		}
		fi, err := os.Lstat(w.abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			err = errors.New("it is open in an editor but not on disk")
		case err == nil && !fi.Mode().IsRegular():
			err = errors.New("it is not a regular file on disk")
		case err == nil && fi.Mode().Perm() == w.mode:
			continue
		case err == nil:
			err = os.Chmod(w.abs, w.mode)
		}
		if err != nil {
			unset()
			return nil, Errorf(ErrConflict, "%s cannot be given mode %o: %v; save it to disk and apply again", w.rel, w.mode, err)
		}
		done = append(done, set{w.abs, fi.Mode().Perm()})
	}
	return unset, nil
}

// commitError is the error of a disk commit that wrote nothing.
func commitError(disk []diffapply.Write, err error) error {
	if errors.Is(err, diffapply.ErrStale) || errors.Is(err, diffapply.ErrConflict) {
		return Errorf(ErrConflict, "a file changed while smith was writing it; nothing was written: %v", err)
	}
	return fmt.Errorf("write %s: %w (nothing was written)", diskPaths(disk), err)
}

// onDisk reports whether every write of a batch goes to disk (no editor
// has its file open).
func onDisk(ws []*fileWrite) bool {
	for _, w := range ws {
		if w.tg.open {
			return false
		}
	}
	return true
}

// commitLogged writes a batch that goes to disk only, with one
// write-ahead record: the undo records (recs, one per write, in order),
// the blobs they staged in bs, and the disk commit's journal are saved
// together, durably, once the commit has read and checked every target
// and before it creates anything (diffapply.CommitLogged); a crash after
// that is settled at the next start from the state file alone
// (settleTxn), and the commit needs no journal folder of its own. logged
// reports whether that record was saved (else nothing was journalled:
// the records were never on disk).
func (e *Engine) commitLogged(ctx context.Context, bs *blobStage, recs []*undoRecord, ws []*fileWrite) (logged bool, err error) {
	disk := make([]diffapply.Write, 0, len(ws))
	seqs := make([]int, len(recs))
	for i, w := range ws {
		dw, err := e.diskWrite(w)
		if err != nil {
			bs.abort()
			return false, err
		}
		disk = append(disk, dw)
		w.via = "disk"
		seqs[i] = recs[i].Seq
	}
	var logErr error
	err = e.ws.fs.CommitLogged(ctx, disk, func(j *diffapply.Journal) error {
		if logErr = e.saveUndos(bs, &txnRecord{Journal: *j, Undo: seqs}, recs...); logErr != nil {
			return logErr
		}
		logged = true
		for _, w := range ws {
			w.dropBefore()
		}
		return nil
	})
	bs.abort() // the pack of a commit refused before its record (a no-op once committed)
	switch {
	case err == nil:
		return true, nil
	case logErr != nil:
		return false, logErr
	}
	return logged, commitError(disk, err)
}

// diskWrite is w as a diffapply write guarded by the hash of what smith
// read.
func (e *Engine) diskWrite(w *fileWrite) (diffapply.Write, error) {
	rel, err := relTo(e.ws.root, w.abs)
	if err != nil {
		return diffapply.Write{}, err
	}
	dw := diffapply.Write{Path: rel, ExpectHash: diffapply.HashAbsent, Mode: w.mode}
	switch {
	case w.tg.exists && w.tg.hash != "":
		dw.ExpectHash = diffapply.HashOfDigest(w.tg.hash) // hashed when read
	case w.tg.exists:
		dw.ExpectHash = diffapply.Hash(w.tg.text)
	}
	if w.tg.exists && !w.tg.open && w.tg.text != nil {
		// The bytes read from disk, which ExpectHash names: the commit
		// need not read and hash the file again before its journal.
		dw.Expect = w.tg.text
	}
	if w.beforeFrom != nil {
		dw.Before = w.beforeFrom
	} else if ref := w.before; ref.Exists && ref.Len >= keepTextBelow {
		// A large file's text before is in the journal's pack: the commit
		// need not hold it beside the new text, only take it back from
		// there to roll back.
		dw.Before = func() ([]byte, error) { return e.store.getBlob(ref) }
	}
	if w.nextStreamed() {
		dw.ContentFrom, dw.ContentHash = w.nextFrom, diffapply.HashOfDigest(w.nextHash)
	} else if w.nextExists {
		dw.Content = w.next
		if dw.Content == nil {
			dw.Content = []byte{} // nil would delete
		}
		if w.nextHash != "" {
			dw.ContentHash = diffapply.HashOfDigest(w.nextHash) // hashed for the journal
		}
	}
	return dw, nil
}

func editPaths(fes []FileEdit) string {
	var ps []string
	for _, fe := range fes {
		ps = append(ps, fe.Path)
	}
	return strings.Join(ps, ", ")
}

func diskPaths(ws []diffapply.Write) string {
	var ps []string
	for _, w := range ws {
		ps = append(ps, w.Path)
	}
	return strings.Join(ps, ", ")
}

// applyStep is one change of an apply, planned and ready to write.
type applyStep struct {
	c    *changeRecord
	path string
	ids  []string     // hunks to apply; nil for a change without hunks
	ws   []*fileWrite // the target; for a rename also the removal of the source
	recs []*undoRecord
}

// prepareApply plans the given hunks of change id against the text the
// user sees. Nothing is written. A file changed since the plan re-validates
// the change and is ErrConflict.
//
// scratch, when not nil, is a buffer to read the file into (nil: none),
// set on return to one that the step does not hold (or nil): the file is
// read only to be compared with the kept plan's text, which the step then
// holds instead, so that applying many files reads them all into one
// buffer.
func (e *Engine) prepareApply(p *Peer, changeID string, hunks []string, scratch *[]byte) (*applyStep, error) {
	c, snap, err := e.cs.applySnapshot(changeID)
	if err != nil {
		return nil, err
	}
	switch snap.Status {
	case StatusPending, StatusUndone:
	case StatusConflict:
		return nil, Errorf(ErrConflict, "change %s is in conflict: %s", changeID, snap.Reason)
	default:
		why := ""
		if snap.Reason != "" {
			why = " (" + snap.Reason + ")"
		}
		return nil, Errorf(ErrInvalidState, "change %s is %s%s; only pending changes can be applied", changeID, snap.Status, why)
	}
	var buf []byte
	if scratch != nil {
		buf, *scratch = *scratch, nil
	}
	tg, err := e.currentInto(p, snap.source(), buf)
	if err != nil {
		return nil, err
	}
	// The text the change was planned against, byte for byte, when its
	// plan was kept (recordChange): no need to hash it again.
	k := snap.planned
	same := k != nil && !k.hashOnly && k.base == snap.BaseHash && k.exists == tg.exists && bytes.Equal(k.text, tg.text)
	if !same {
		if contentHash(tg.text, tg.exists) != snap.BaseHash {
			e.revalidate(changeID, tg.text, tg.exists)
			now := e.view(changeID)
			e.queue(Notification{Kind: NoteChangeUpdated, Change: now})
			return nil, Errorf(ErrConflict, "%s changed since change %s was planned; nothing was written. The change was re-validated against the new text (now %s): review it and apply again", snap.Path, changeID, now.Status)
		}
		// A plan kept without its text holds for the text of its hash.
		same = k != nil && k.hashOnly && k.base == snap.BaseHash && k.exists == tg.exists
	}
	tg.hash = snap.BaseHash // what tg holds: checked just above
	var fp *filePlan
	var kept *keptPlan
	fresh := func() (err error) {
		snap.loadDiff() // applySnapshot left it out for the kept plan
		fp, err = e.planChange(&snap, tg.text, tg.exists)
		if err != nil {
			return Errorf(ErrConflict, "%s: %v", snap.Path, err)
		}
		return nil
	}
	if same {
		kept = k
		if !k.hashOnly {
			if scratch != nil && !tg.open {
				*scratch = tg.text // read only to compare: free for the next
			}
			tg.text = k.text // the same bytes: one copy of them lives on, not two
		}
		// Used once: the record lets go of it.
		e.cs.mu.Lock()
		c.planned = nil
		e.cs.mu.Unlock()
		snap.Hunks = mergeStatusesInto(snap.Hunks, snap.Hunks, kept.hunks) // snap's are a copy
	} else if err := fresh(); err != nil {
		return nil, err
	} else {
		snap.Hunks = mergeStatusesInto(snap.Hunks, snap.Hunks, fp.hunks)
	}
	ids, err := selectHunks(&snap, hunks, StatusPending)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 && slices.ContainsFunc(snap.Hunks, func(h Hunk) bool { return h.Status == StatusConflict }) {
		// An undone change applied again on purpose, planned against a
		// text that no longer holds what it was made for.
		return nil, Errorf(ErrConflict, "change %s is in conflict: %s: %s", changeID, snap.Path, conflictReason(snap.Hunks))
	}
	if len(ids) == 0 && len(snap.Hunks) > 0 {
		return nil, Errorf(ErrInvalidState, "change %s has no pending hunk to apply", changeID)
	}
	var next []byte
	var nextExists bool
	if kept != nil && slices.Equal(ids, kept.ids) {
		next, nextExists = kept.next, kept.nextExists // rendered for these hunks
	} else {
		if fp == nil {
			if err := fresh(); err != nil {
				return nil, err
			}
		}
		if next, nextExists, err = fp.render(ids); err != nil {
			return nil, Errorf(ErrConflict, "%s: %v", snap.Path, err)
		}
	}
	st := &applyStep{c: c, path: snap.Path, ids: ids}
	if fp == nil || !fp.rename { // a kept plan is never a rename's
		w := &fileWrite{abs: snap.Abs, rel: snap.Path, tg: tg, next: next, nextExists: nextExists}
		if nextExists {
			w.mode = snap.Src.Mode // a mode change, a file created executable
		}
		st.ws = []*fileWrite{w}
		return st, nil
	}
	// A rename writes the target (which must not exist: the disk commit
	// checks it again) and removes the source.
	dst, err := e.current(p, snap.Abs)
	if err != nil {
		return nil, err
	}
	if dst.exists {
		return nil, Errorf(ErrConflict, "%s already exists; renaming %s would overwrite it", snap.Path, snap.OldPath)
	}
	// The renamed file keeps its mode, as git apply keeps it, unless the
	// change sets one (an editor that holds the source open writes the
	// target itself).
	mode := snap.Src.Mode
	if mode == 0 {
		mode = diskMode(snap.OldAbs)
	}
	st.ws = []*fileWrite{
		{abs: snap.Abs, rel: snap.Path, tg: dst, next: next, nextExists: true, mode: mode},
		{abs: snap.OldAbs, rel: snap.OldPath, tg: tg, next: nil, nextExists: false},
	}
	return st, nil
}

// diskMode is the permission bits of the regular file abs when they are
// not the ones a write gives a file it creates (diffapply.NewFileMode),
// else 0 (or when abs cannot be read): what a write that creates the
// file elsewhere or again must give it (fileWrite.mode).
func diskMode(abs string) fs.FileMode {
	if fi, err := os.Lstat(abs); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() != diffapply.NewFileMode {
		return fi.Mode().Perm()
	}
	return 0
}

// Apply applies the given hunks (all pending ones when empty) of a change:
// through the Editor that has the file open (p's first), atomically on disk
// otherwise. A stale buffer or a file changed since the plan is
// ErrConflict (wrapped with the reason); nothing is written then, and the
// change is re-validated against the new text (announced with
// changeUpdated) so that a second Apply can succeed when it still matches.
func (e *Engine) Apply(ctx context.Context, changeID string, hunks []string) (*Change, error) {
	p := e.peerOf(ctx)
	defer e.flush()
	e.cs.writeMu.Lock()
	defer e.cs.writeMu.Unlock()
	st, err := e.prepareApply(p, changeID, hunks, nil)
	if err != nil {
		return nil, err
	}
	out, err := e.commitApply(ctx, fmt.Sprintf("smith: apply %s to %s", changeID, st.path), []*applyStep{st}, true, nil)
	if err != nil {
		return nil, err
	}
	return &out[0], nil
}

// ApplyChanges applies every pending hunk of several changes (of
// different files) together: all are written or none (open buffers in one
// ApplyEdit per editor, the rest in one atomic disk commit). They share an
// undo group: Undo("") takes them all back at once.
func (e *Engine) ApplyChanges(ctx context.Context, changeIDs []string) ([]Change, error) {
	return e.applyChanges(ctx, changeIDs, true)
}

// applyChanges is ApplyChanges; without views it returns no changes and
// presents them only to listening editors (announce).
func (e *Engine) applyChanges(ctx context.Context, changeIDs []string, views bool) ([]Change, error) {
	p := e.peerOf(ctx)
	defer e.flush()
	e.cs.writeMu.Lock()
	defer e.cs.writeMu.Unlock()
	if len(changeIDs) == 0 {
		return nil, errors.New("no change to apply")
	}
	var steps []*applyStep
	files := map[string]string{}
	// Each file's text before goes to the journal's pack as its change is
	// prepared, and a disk write lets go of it there (stageBefore): a
	// patch of many large files does not hold them all until the save.
	bs := e.cs.undoStage()
	scratch := []byte{} // not nil: read into, with room to spare (ReadFileInto)
	for _, id := range changeIDs {
		st, err := e.prepareApply(p, id, nil, &scratch)
		if err != nil {
			bs.abort()
			return nil, err
		}
		for _, w := range st.ws {
			if other, ok := files[w.abs]; ok {
				bs.abort()
				return nil, Errorf(ErrConflict, "changes %s and %s both change %s; apply them one after the other", other, id, w.rel)
			}
			files[w.abs] = id
			if err := w.stageBefore(bs); err != nil {
				bs.abort()
				return nil, err
			}
		}
		steps = append(steps, st)
	}
	return e.commitApply(ctx, fmt.Sprintf("smith: apply %s", strings.Join(changeIDs, ", ")), steps, views, bs)
}

// stageBefore stages the text w replaces in bs (the journal's pack) and,
// for a disk write, lets go of it (dropBefore); addUndo then journals the
// write with that blob.
func (w *fileWrite) stageBefore(bs *blobStage) error {
	ref, err := bs.put(w.tg.text, w.tg.exists, w.tg.hash)
	if err != nil {
		return fmt.Errorf("journal the bytes before the write (nothing was written): %w", err)
	}
	w.before, w.staged = ref, true
	w.dropBefore()
	return nil
}

// commitApply journals, writes and records a planned apply. It returns
// the changes' views only with views.
//
// bs may hold the texts before already (stageBefore); nil starts a stage.
func (e *Engine) commitApply(ctx context.Context, label string, steps []*applyStep, views bool, bs *blobStage) ([]Change, error) {
	group := e.cs.newUndoGroup()
	if bs == nil {
		bs = e.cs.undoStage()
	}
	var ws []*fileWrite
	for _, st := range steps {
		for _, w := range st.ws {
			rec, err := e.addUndo(st.c, "apply", w, group, st.ids, bs)
			if err != nil {
				bs.abort()
				e.failUndo(steps)
				return nil, err
			}
			st.recs = append(st.recs, rec)
			ws = append(ws, w)
		}
	}
	// One save journals every file of the batch before the first write
	// (a save per file rewrote the whole state file once per file).
	var recs []*undoRecord
	for _, st := range steps {
		recs = append(recs, st.recs...)
	}
	if onDisk(ws) {
		if logged, err := e.commitLogged(ctx, bs, recs, ws); err != nil {
			if logged {
				e.failUndo(steps)
			} else {
				e.cs.dropUndos(recs)
			}
			return nil, err
		}
	} else {
		if err := e.saveUndos(bs, nil, recs...); err != nil {
			return nil, err
		}
		for _, w := range ws {
			w.dropBefore()
		}
		if err := e.writeBatch(ctx, label, ws); err != nil {
			e.failUndo(steps)
			return nil, err
		}
	}
	if err := e.cs.applied(steps); err != nil {
		e.log.Error("save state", "err", err)
	}
	if !views && !e.listened() {
		return nil, nil // no one to present the changes to
	}
	var out []Change
	for _, st := range steps {
		out = append(out, *e.announce(st.c.ID, st.ws...))
	}
	if !views {
		return nil, nil
	}
	return out, nil
}

func (e *Engine) failUndo(steps []*applyStep) {
	var recs []*undoRecord
	for _, st := range steps {
		recs = append(recs, st.recs...)
	}
	if err := e.cs.failed(recs); err != nil {
		e.log.Error("save state", "err", err)
	}
}

// Undo restores the exact bytes from before the most recent write smith
// made for changeID (an apply, or the reverse-apply of a reject). With an
// empty changeID it takes back the most recent write of any change, and
// with it every write of the same ApplyChanges. It refuses with
// ErrConflict, writing nothing, when a file changed since smith's write.
// It works across restarts: the bytes come from the journal in the state
// directory. The returned change is the (last) one undone.
func (e *Engine) Undo(ctx context.Context, changeID string) (*Change, error) {
	p := e.peerOf(ctx)
	defer e.flush()
	e.cs.writeMu.Lock()
	defer e.cs.writeMu.Unlock()
	recs, err := e.cs.undoTargets(changeID)
	if err != nil {
		return nil, err
	}
	// The texts of large files smith wrote, kept while the undo may roll
	// back (undoWrite).
	spare := newSpareFile(e.store.dir)
	defer spare.Close()
	var ws []*fileWrite
	for _, r := range recs {
		w, err := e.undoWrite(p, r, spare)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	label := "smith: undo " + recs[0].ChangeID
	if len(recs) > 1 {
		label = fmt.Sprintf("smith: undo %d changes", len(recs))
	}
	after := make([]string, len(recs))
	for i, w := range ws {
		after[i] = w.nextContentHash()
	}
	if onDisk(ws) {
		if err := e.undoLogged(ctx, recs, ws, after); err != nil {
			return nil, err
		}
	} else if err := e.writeBatch(ctx, label, ws); err != nil {
		if je := (journalError{}); errors.As(err, &je) {
			return nil, je.err // nothing was written
		}
		return nil, err
	}
	if err := e.cs.undone(recs, after); err != nil {
		e.log.Error("save state", "err", err)
	}
	// Each view plans its change against its file again: the changes
	// before the last are presented only to listening editors.
	listened := e.listened()
	var last *Change
	for i, r := range recs {
		if i < len(recs)-1 && !listened {
			continue
		}
		last = e.announce(r.ChangeID, ws[i])
	}
	if last != nil && len(recs) > 1 {
		// A copy: the notification queued with last says no more than
		// any change update.
		c := *last
		for _, r := range recs {
			c.Restored = append(c.Restored, RestoredFile{ChangeID: r.ChangeID, Path: filepath.ToSlash(r.Rel)})
		}
		last = &c
	}
	return last, nil
}

// ApplyPatch records changes that did not come from a turn (the files of
// a diff given to `smith apply`) and applies them together, exactly like
// ApplyChanges: all or none, journalled as one undo group, so that Undo("")
// takes the whole patch back. When they cannot all be applied, nothing is
// written and the recorded changes are rejected, with the error returned.
func (e *Engine) ApplyPatch(ctx context.Context, dialogID string, chs []protocol.Change) ([]Change, error) {
	out, _, err := e.applyPatch(ctx, dialogID, func(yield func(PlannedChange) bool) {
		for _, ch := range chs {
			if !yield(PlannedChange{Change: ch}) {
				return
			}
		}
	}, true, nil)
	return out, err
}

// PlannedChange is a change of a patch with the caller's plan of its
// diff, for a caller that planned it already (smith apply writes each
// file's as-applied diff from its own plan of the patch: diffapply's
// File.AppliedPlan), so that the engine need not plan the same diff
// against the same text again.
type PlannedChange struct {
	protocol.Change
	// Plan, when not nil, is diffapply's plan of Change.Diff against the
	// text Plan.Before, whose diffapply.Hash is Plan.BeforeHash (as Plan
	// makes them). The engine takes it instead of planning the diff only
	// for a modification, a creation or a deletion by a diff (no rename,
	// no content), and only when the text it plans the change against
	// (the editor's buffer, else the disk) is Plan.Before byte for byte
	// and exists as Plan.Existed says (a creation: no file, no buffer,
	// Plan.BeforeHash diffapply.HashAbsent): the same diff and the same
	// text make the same plan, and the text's hash is Plan.BeforeHash (a
	// wrong one makes the write refuse, as for a file changed since).
	// Otherwise it plans as it would without. It is used once, when the
	// change is recorded, and never kept.
	Plan *diffapply.File
}

// ApplyPlannedSeq is ApplyPatch for a caller that reports the result
// itself (smith apply): it returns the recorded changes' ids, not their
// views, so that the changes are not planned again just to present them
// (attached editors are still told). chs gives the changes one at a time,
// each recorded before the next is asked for, so that the caller need not
// hold every diff of a large patch at once (smith apply reads them back
// from a spool), each with its plan when the caller has one
// (PlannedChange). An error chs gives stops the patch: nothing is written
// and the changes recorded so far are rejected.
func (e *Engine) ApplyPlannedSeq(ctx context.Context, dialogID string, chs iter.Seq2[PlannedChange, error]) ([]string, error) {
	var serr error
	_, ids, err := e.applyPatch(ctx, dialogID, func(yield func(PlannedChange) bool) {
		for ch, err := range chs {
			if err != nil {
				serr = err
				return
			}
			if !yield(ch) {
				return
			}
		}
	}, false, &serr)
	return ids, err
}

// flushDiffsAt is how many bytes of diffs a patch records before it makes
// them durable and lets its records go of them (flushDiffs): a patch
// below it keeps them until the journal's one save, as the pack of that
// save costs no fsync more; above it, a 50 MB patch does not hold every
// diff (go-udiff's as-applied diff of a large file can be twice its
// size) beside every file's text, for two fsyncs per 16 MiB.
const flushDiffsAt = 16 << 20

// applyPatch is ApplyPatch; without views it is ApplyPatchIDs. serr, when
// given, holds an error chs met, which stops the patch.
func (e *Engine) applyPatch(ctx context.Context, dialogID string, chs iter.Seq[PlannedChange], views bool, serr *error) ([]Change, []string, error) {
	var ids []string
	var recs []*changeRecord
	defer func() {
		// The plans kept for this apply are of no use after it.
		e.cs.mu.Lock()
		for _, c := range recs {
			c.planned = nil
		}
		e.cs.mu.Unlock()
	}()
	giveUp := func() {
		for _, id := range ids {
			if _, err := e.Reject(ctx, id, nil); err != nil {
				e.log.Warn("reject a change of a patch that was not applied", "change", id, "err", err)
			}
		}
	}
	// One save for the whole patch (ApplyChanges saves after writing):
	// a save per file rewrote the state file once per file.
	held := 0 // bytes of diffs recorded since the last flushDiffs
	var perr error
	buf := []byte{} // each file is read into it (proposal)
	for ch := range chs {
		c, _, err := e.propose(ctx, dialogID, ch.Change, ch.Plan, true, views, &buf)
		if err != nil {
			perr = err
			break
		}
		ids, recs = append(ids, c.ID), append(recs, c)
		if held += len(ch.Diff); held >= e.flushDiffsAt {
			e.cs.flushDiffs()
			held = 0
		}
	}
	if perr == nil && serr != nil && *serr != nil {
		perr = *serr // the caller could not give a change
	}
	if perr == nil && len(ids) == 0 {
		perr = errors.New("no change to apply")
	}
	if perr != nil {
		giveUp()
		return nil, nil, perr
	}
	out, err := e.applyChanges(ctx, ids, views)
	if err != nil {
		giveUp()
		return nil, nil, err
	}
	return out, ids, nil
}
