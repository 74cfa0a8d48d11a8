package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/internal/spool"
)

// undoWrite is the write that takes r back, refused with ErrConflict when
// the file no longer holds what smith wrote. A file on disk of
// e.holdBelow (keepTextBelow, 1 MiB) or more, before or after, is not
// held until the commit:
// the commit checks it by hash, reads the text before from the journal as
// it writes the file (nextFrom), and to roll back takes the text smith
// wrote from spare, where it goes meanwhile (the journal holds only its
// hash). An undo of many large files then holds one at a time.
func (e *Engine) undoWrite(p *Peer, r *undoRecord, spare spareFile) (*fileWrite, error) {
	tg, err := e.current(p, r.Path)
	if err != nil {
		return nil, err
	}
	if tg.open && !r.After.Exists {
		tg = e.deletedBehindBuffer(r, tg)
	}
	if !r.After.matches(tg.text, tg.exists) {
		if later := e.cs.upstreamWroteSince(r.Rel, r.ChangeID); later != "" {
			// Not the user's edits: the upstream's, which smith recorded.
			return nil, Errorf(ErrConflict, "%s changed since smith wrote change %s there (%s at %s): the upstream wrote change %s to it since; undo would lose that and was refused. Take %s back first (undoing %s says how), or restore %s by hand", r.Rel, r.ChangeID, r.Action, r.At, later, later, later, r.Rel)
		}
		return nil, Errorf(ErrConflict, "%s changed since smith wrote change %s there (%s at %s); undo would lose those edits and was refused. Revert your edits to %s first, or restore it by hand", r.Rel, r.ChangeID, r.Action, r.At, r.Rel)
	}
	w := &fileWrite{abs: r.Path, rel: r.Rel, tg: tg, nextExists: r.Before.Exists}
	if r.Before.Exists {
		// A file smith deleted comes back with its mode, a file whose
		// mode smith changed gets its bits before again (0: it keeps them).
		w.mode = r.Mode
	}
	if tg.open || (len(tg.text) < e.holdBelow && r.Before.Len < int64(e.holdBelow)) {
		if w.next, err = e.store.getBlob(r.Before); err != nil {
			return nil, undoDataError(r, err)
		}
		return w, nil
	}
	if tg.exists {
		w.tg.hash = r.After.Hash // matched just above
		if len(tg.text) >= e.holdBelow {
			if w.beforeFrom, err = spare.put(tg.text); err != nil {
				return nil, fmt.Errorf("keep the text of %s while it is undone (nothing was written): %w", r.Rel, err)
			}
		}
		w.tg.text = nil
	}
	if r.Before.Exists {
		ref := r.Before
		w.nextHash = ref.Hash
		w.nextFrom = func() ([]byte, error) {
			b, err := e.store.getBlob(ref)
			if err != nil {
				return nil, journalError{undoDataError(r, err)}
			}
			return b, nil
		}
	}
	return w, nil
}

// undoDataError is the journal failing to give the text r's file held
// before smith's write: the same words whether the undo reads it before
// its commit (a small file) or while the commit writes it (a large one),
// naming the file, since the journal's own words name only a blob, and
// saying where else the user can take that text from.
func undoDataError(r *undoRecord, err error) error {
	return &undoDataErr{r: r, err: err}
}

// undoDataErr is undoDataError's error. edited: editors had written
// their part of the undo before the disk commit met it (writeBatch), so
// only the disk is untouched, and the take-back says the rest.
type undoDataErr struct {
	r      *undoRecord
	err    error
	edited bool
}

func (u *undoDataErr) Error() string {
	nothing := "nothing was written"
	if u.edited {
		nothing = "nothing was written on disk"
	}
	return fmt.Sprintf("cannot undo change %s: smith's copy of what %s held before it is damaged or missing (%v); %s. Restore %s from version control or a backup if you need its earlier text", u.r.ChangeID, u.r.Rel, u.err, nothing, u.r.Rel)
}

// journalError is the journal failing to give the bytes an undo restores
// while the disk commit writes them: Undo reports it as it is, as when it
// reads them before the commit (a small file), not as a failed write.
type journalError struct{ err error }

func (e journalError) Error() string { return e.err.Error() }
func (e journalError) Unwrap() error { return e.err }

// spareFile keeps texts an undo replaces while the disk commit may roll
// back, in a spool (an unlinked temporary file) in the state folder: never
// synced, and nothing is left of it once the undo ends, whichever way (a
// process killed during the commit leaves its journal, which rolls forward
// or back from backups of its own). Its temp file is named like
// writeAtomic's, which removeTemps deletes should the process die before
// it is unlinked.
type spareFile struct{ *spool.File }

func newSpareFile(dir string) spareFile { return spareFile{spool.New(dir, ".tmp-undo-*")} }

// put keeps b and returns a way to read it back.
func (s spareFile) put(b []byte) (func() ([]byte, error), error) {
	r, err := s.Put(b)
	if err != nil {
		return nil, err
	}
	return func() ([]byte, error) {
		b, err := s.Read(r)
		if err != nil {
			return nil, fmt.Errorf("read back the text smith wrote: %w", err)
		}
		return b, nil
	}, nil
}

// undoLogged writes an undo that goes to disk only, with the same single
// write-ahead record as an apply (commitLogged): once the commit has read
// and checked every target, the state file is saved with the commit's
// journal (Txn, marked as an undo, naming the records it takes back) and
// made durable before anything is renamed. A process killed after that
// is settled at the next start (settleTxn): the files end all restored,
// and the records undone, or all as smith wrote them, and the records
// still done, so that the undo can be made again; never the files
// restored and the records saying they were not. after[i] is the hash of
// what ws[i] writes. The caller records the undo (changeStore.undone,
// which clears Txn in the same save).
func (e *Engine) undoLogged(ctx context.Context, recs []*undoRecord, ws []*fileWrite, after []string) error {
	disk := make([]diffapply.Write, 0, len(ws))
	seqs := make([]int, len(recs))
	for i, w := range ws {
		dw, err := e.diskWrite(w)
		if err != nil {
			return err
		}
		disk = append(disk, dw)
		w.via = "disk"
		seqs[i] = recs[i].Seq
	}
	logged := false
	var logErr error
	err := e.ws.fs.CommitLogged(ctx, disk, func(j *diffapply.Journal) error {
		if logErr = e.cs.saveTxn(&txnRecord{Journal: *j, Undo: seqs, Action: txnUndo}); logErr != nil {
			return logErr
		}
		// The record must survive an operating-system crash before the
		// first rename: its rename too, not only the file's bytes.
		syncDir(e.store.dir)
		logged = true
		return nil
	})
	if err == nil {
		return nil
	}
	if logged {
		// The commit put back what it had renamed (or says what it could
		// not): the records follow the files, and the journal goes.
		e.cs.mu.Lock()
		e.undoneAsFound(recs)
		e.cs.st.Txn = nil
		serr := e.cs.saveLocked()
		e.cs.mu.Unlock()
		if serr != nil {
			e.log.Error("save state", "err", serr)
		}
	}
	if je := (journalError{}); errors.As(err, &je) {
		return je.err // nothing was written
	}
	if logErr != nil {
		return fmt.Errorf("journal the undo (nothing was written): %w", logErr)
	}
	return commitError(disk, err)
}

// undoneAsFound marks undone, as Undo would have, each record of recs
// whose file holds its text before smith's write again (an undo's commit
// that was cut short, or failed and could not put everything back); the
// others stay as they are. Called with e.cs.mu held; the caller saves.
func (e *Engine) undoneAsFound(recs []*undoRecord) {
	var back []*undoRecord
	var after []string
	for _, r := range recs {
		if r.State != undoDone {
			continue
		}
		b, exists, err := e.ws.readFile(r.Path)
		if err != nil {
			e.log.Warn("cannot read a file of an interrupted undo; its change is left as it was", "path", r.Path, "err", err)
			continue
		}
		switch {
		case r.Before.matches(b, exists):
			back = append(back, r)
			after = append(after, contentHash(b, exists))
		case !r.After.matches(b, exists):
			e.log.Warn("an interrupted undo left a file in neither state", "path", r.Path, "change", r.ChangeID)
		}
	}
	e.cs.undoneLocked(back, after)
}
