package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// This file holds Reject, the undo journal's records (written before a
// write, settled after it), their recovery at start, and re-validation.

// target is where a write goes: an open buffer of some editor, or disk.
type target struct {
	text    []byte
	exists  bool
	hash    string // contentHash of text, when known ("": not computed)
	open    bool
	version int32
	ed      Editor
}

// current reads the text the user sees of abs, preferring p's editor.
func (e *Engine) current(p *Peer, abs string) (target, error) {
	return e.currentInto(p, abs, nil)
}

// currentInto is current reading a file on disk into buf when buf can
// hold it (an editor's buffer is never copied into it).
func (e *Engine) currentInto(p *Peer, abs string, buf []byte) (target, error) {
	if t, v, ed, ok := e.document(p, abs); ok {
		return target{text: t, exists: true, open: true, version: v, ed: ed}, nil
	}
	b, exists, err := e.ws.readFileInto(abs, buf)
	if err != nil {
		return target{}, fmt.Errorf("read %s: %w", abs, err)
	}
	if !exists {
		if ed := e.creator(p, abs); ed != nil {
			return target{open: true, ed: ed}, nil
		}
	}
	return target{text: b, exists: exists}, nil
}

// creator returns the editor that creates abs (FileCreator), preferring
// p's, as document prefers p's buffer; nil when none does.
func (e *Engine) creator(p *Peer, abs string) Editor {
	if p != nil {
		if c, ok := p.ed.(FileCreator); ok && c.Creates(abs) {
			return c
		}
	}
	e.mu.Lock()
	var eds []Editor
	for q := range e.peers {
		if q != p && q.ed != nil {
			eds = append(eds, q.ed)
		}
	}
	e.mu.Unlock()
	for _, ed := range eds {
		if c, ok := ed.(FileCreator); ok && c.Creates(abs) {
			return c
		}
	}
	return nil
}

// deletedBehindBuffer is the target of undoing a deletion that smith made
// on disk while an editor kept the file's buffer open (an editor without
// the delete resource operation gets the deletion on disk): when the file
// is still absent and the buffer holds exactly the bytes from before, the
// file comes back on disk, which loses nothing. Otherwise tg is kept, and
// the undo is refused as usual.
func (e *Engine) deletedBehindBuffer(r *undoRecord, tg target) target {
	b, exists, err := e.ws.readFile(r.Path)
	if err != nil || exists || !r.Before.matches(tg.text, true) {
		return tg
	}
	return target{text: b, exists: false}
}

// mergeStatuses keeps the recorded status of hunks that are no longer
// pending and takes match data of the fresh plan.
func mergeStatuses(old, fresh []Hunk) []Hunk {
	return mergeStatusesInto(nil, old, fresh)
}

// mergeStatusesInto is mergeStatuses written into dst's array when it
// can hold the result (dst may be old itself: each old status is read
// before its place is written). A change's hunks are thousands for a
// large patch, merged at its record and at its apply: fresh memory for
// each copy is paid for in page faults.
func mergeStatusesInto(dst, old, fresh []Hunk) []Hunk {
	out := dst[:0]
	if cap(dst) < len(fresh) {
		out = make([]Hunk, 0, len(fresh))
	}
	out = out[:len(fresh)]
	if sameIDs(old, fresh) {
		// The same hunks (a plan of the same diff): the old status of
		// each is at its own index, no map needed.
		for i := range fresh {
			s := old[i].Status
			out[i] = fresh[i]
			if s != StatusPending && s != StatusUndone {
				out[i].Status = s
			}
		}
		return out
	}
	prev := make(map[string]string, len(old))
	for _, h := range old {
		prev[h.ID] = h.Status
	}
	copy(out, fresh)
	for i := range out {
		if s, ok := prev[out[i].ID]; ok && s != StatusPending && s != StatusUndone {
			out[i].Status = s
		}
	}
	return out
}

// sameIDs reports whether a and b hold hunks of the same ids in the same
// order (a change's ids are unique: hunkID of the hunk's index).
func sameIDs(a, b []Hunk) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}

// announce tells every peer that a change changed (and that its file was
// written behind the editors when it went to disk) and returns its view.
func (e *Engine) announce(changeID string, ws ...*fileWrite) *Change {
	v := e.view(changeID)
	e.queue(Notification{Kind: NoteChangeUpdated, Change: v})
	for _, w := range ws {
		if w.via == "disk" {
			e.queue(Notification{Kind: NoteFileChanged, Path: w.abs})
		}
	}
	return v
}

// Reject rejects hunks (all when empty) of a change. Pending hunks are
// marked rejected and nothing is written. For hunks already written
// (applied, appliedUpstream) it reverse-applies exactly those hunks to the
// text the user sees; an unsure reverse match is ErrConflict and nothing is
// written.
func (e *Engine) Reject(ctx context.Context, changeID string, hunks []string) (*Change, error) {
	p := e.peerOf(ctx)
	defer e.flush()
	e.cs.writeMu.Lock()
	defer e.cs.writeMu.Unlock()
	c, snap, err := e.cs.recordSnapshot(changeID)
	if err != nil {
		return nil, err
	}
	if snap.Abs == "" {
		return nil, Errorf(ErrInvalidState, "change %s was refused (%s); there is nothing to reject", changeID, snap.Reason)
	}
	ids, err := selectHunks(&snap, hunks, StatusPending, StatusConflict, StatusApplied, StatusAppliedUpstream, StatusUndone)
	if err != nil {
		return nil, err
	}
	var written []string
	for _, h := range snap.Hunks {
		if slices.Contains(ids, h.ID) && (h.Status == StatusApplied || h.Status == StatusAppliedUpstream) {
			written = append(written, h.ID)
		}
	}
	wholeWritten := len(snap.Hunks) == 0 && (snap.Status == StatusApplied || snap.Status == StatusAppliedUpstream)
	var w *fileWrite
	var rec *undoRecord
	if len(written) > 0 || wholeWritten {
		tg, err := e.current(p, snap.Abs)
		if err != nil {
			return nil, err
		}
		next, nextExists, err := e.reverseHunks(&snap, tg.text, written)
		if errors.Is(err, ErrUnsupported) {
			return nil, fmt.Errorf("reject %s: %w", changeID, err)
		}
		if err != nil {
			return nil, Errorf(ErrConflict, "cannot take back change %s from %s: %v; nothing was written", changeID, snap.Path, err)
		}
		w = &fileWrite{abs: snap.Abs, rel: snap.Path, tg: tg, next: next, nextExists: nextExists}
		if snap.Src.Mode != 0 && nextExists && len(written) == appliedHunks(snap.Hunks) {
			// Nothing of the change stays written: nor does the mode it set.
			w.mode = e.modeBefore(c)
		}
		if rec, err = e.beginUndo(c, "reject", w, 0, ids); err != nil {
			return nil, err
		}
		if err := e.writeBatch(ctx, fmt.Sprintf("smith: reject %s in %s", changeID, snap.Path), []*fileWrite{w}); err != nil {
			e.finishUndo(rec, "", undoFailed)
			return nil, err
		}
		e.cs.mu.Lock()
		c.BaseHash = contentHash(next, nextExists)
		e.cs.mu.Unlock()
	}
	e.cs.rejected(c, ids)
	if rec != nil {
		e.finishUndo(rec, w.via, undoDone)
	} else {
		e.saveLogged()
	}
	if w == nil {
		return e.announce(changeID), nil
	}
	return e.announce(changeID, w), nil
}

// appliedHunks counts the hunks whose text is in the file (written).
func appliedHunks(hs []Hunk) int {
	n := 0
	for _, h := range hs {
		if written(h.Status) {
			n++
		}
	}
	return n
}

// modeBefore is the permission bits c's file had before smith first set
// its mode (the undo record of c's first apply: undoRecord.Mode), 0 when
// it has none to give back.
func (e *Engine) modeBefore(c *changeRecord) fs.FileMode {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	for _, r := range e.cs.st.Undo {
		if r.ChangeID == c.ID && r.Action == "apply" && r.State != undoFailed {
			return r.Mode
		}
	}
	return 0
}

// beginUndo journals a write before it happens: the bytes before go to the
// blob store and a pending record to the state file, so that a crash
// between here and the write is resolved at the next start (recover).
func (e *Engine) beginUndo(c *changeRecord, action string, w *fileWrite, group int, hunks []string) (*undoRecord, error) {
	bs := e.cs.undoStage()
	r, err := e.addUndo(c, action, w, group, hunks, bs)
	if err != nil {
		bs.abort()
		return nil, err
	}
	if err := e.saveUndos(bs, nil, r); err != nil {
		return nil, err
	}
	return r, nil
}

// saveUndos makes records added by addUndo durable, with the blobs they
// staged in bs (one pass; none when their texts are inline), then one
// save of the state file for all of them, with tx, the journal of the
// disk commit that writes them (nil: none, or diffapply's own): a
// write-ahead record only has to be on disk before the first write. On
// failure the records are dropped again.
func (e *Engine) saveUndos(bs *blobStage, tx *txnRecord, recs ...*undoRecord) error {
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	// New changes' large diffs are made durable in the same pass.
	moveOut := e.cs.stageDiffsLocked(bs)
	if err := bs.commit(); err != nil {
		e.cs.st.Undo = slices.DeleteFunc(e.cs.st.Undo, func(r *undoRecord) bool { return slices.Contains(recs, r) })
		return fmt.Errorf("journal the bytes before the write (nothing was written): %w", err)
	}
	moveOut()
	e.cs.st.Txn = tx
	if err := e.cs.saveLocked(); err != nil {
		e.cs.st.Undo = slices.DeleteFunc(e.cs.st.Undo, func(r *undoRecord) bool { return slices.Contains(recs, r) })
		e.cs.st.Txn = nil
		return fmt.Errorf("journal the write (nothing was written): %w", err)
	}
	// The record must survive an operating-system crash before the first
	// write: its rename too, not only the file's bytes.
	syncDir(e.store.dir)
	if e.cs.syncParent {
		// A state folder made for this engine: its own entry too, once.
		syncDir(filepath.Dir(e.store.dir))
		e.cs.syncParent = false
	}
	return nil
}

// addUndo is beginUndo without the save: the bytes before go to bs, and
// the caller saves (saveUndos) before it writes anything.
func (e *Engine) addUndo(c *changeRecord, action string, w *fileWrite, group int, hunks []string, bs *blobStage) (*undoRecord, error) {
	before := w.before
	if !w.staged {
		var err error
		if before, err = bs.put(w.tg.text, w.tg.exists, w.tg.hash); err != nil {
			return nil, fmt.Errorf("journal the bytes before the write (nothing was written): %w", err)
		}
	}
	after := hashRef(w.next, w.nextExists)
	w.nextHash, w.before = after.Hash, before
	e.cs.mu.Lock()
	defer e.cs.mu.Unlock()
	prev := map[string]string{}
	for _, h := range c.Hunks {
		prev[h.ID] = h.Status
	}
	r := &undoRecord{
		Seq: e.cs.st.NextUndo, ChangeID: c.ID, Action: action, Path: w.abs, Rel: w.rel, At: now(),
		Before: before, After: after, State: undoPending, Prev: prev, PrevStat: c.Status, Group: group,
		Hunks: hunks,
	}
	switch {
	case w.tg.exists && !w.nextExists && !w.tg.open:
		r.Mode = diskMode(w.abs) // a deletion on disk: its undo gives the file its mode again
	case w.tg.exists && w.nextExists && w.mode != 0:
		// A write that sets the mode of a file that exists: its undo
		// gives the file its bits before again, 0644 included.
		if fi, err := os.Lstat(w.abs); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() != w.mode {
			r.Mode = fi.Mode().Perm()
		}
	}
	e.cs.st.NextUndo++
	e.cs.st.Undo = append(e.cs.st.Undo, r)
	return r, nil
}

func (e *Engine) finishUndo(r *undoRecord, via, state string) {
	e.cs.mu.Lock()
	r.State, r.Via = state, via
	err := e.cs.saveLocked()
	e.cs.mu.Unlock()
	if err != nil {
		e.log.Error("save state", "err", err)
	}
}

func (e *Engine) saveLogged() {
	e.cs.mu.Lock()
	err := e.cs.saveLocked()
	e.cs.mu.Unlock()
	if err != nil {
		e.log.Error("save state", "err", err)
	}
}

// recover resolves writes that were journalled but not finished when the
// previous engine stopped: a file holding the bytes after is marked done
// (undo can restore it) and its change settled as the finished write
// would have left it (applied or rejected, not stale); one holding the
// bytes before is marked failed. Anything else is left to the user and
// logged; Undo then refuses.
func (e *Engine) recover() error {
	dirty := e.settleTxn()
	for _, r := range e.cs.st.Undo {
		if r.State != undoPending {
			continue
		}
		b, exists, err := e.ws.readFile(r.Path)
		if err != nil {
			e.log.Warn("cannot read a file an interrupted write named; its record is marked failed", "path", r.Path, "err", err)
			r.State, dirty = undoFailed, true
			continue
		}
		switch {
		case r.After.matches(b, exists):
			r.State, r.Via = undoDone, "disk"
			e.settle(r)
		case r.Before.matches(b, exists):
			r.State = undoFailed
		default:
			r.State = undoFailed
			e.log.Warn("interrupted write left a file in neither state", "path", r.Path, "change", r.ChangeID)
		}
		dirty = true
	}
	if dirty {
		return e.cs.saveLocked()
	}
	return nil
}

// settleTxn finishes or rolls back the disk commit of an apply that was
// cut short after its write-ahead record (Txn), so that its files are all
// before or all after it; recover then reads which from the files. The
// commit of an undo is settled the same way, and its records follow the
// files at once (undoneAsFound): undone when restored, done (the undo can
// be made again) when not. It reports whether there was one (the state
// must be saved without it).
func (e *Engine) settleTxn() bool {
	tx := e.cs.st.Txn
	if tx == nil {
		return false
	}
	e.cs.st.Txn = nil
	bySeq := map[int]*undoRecord{}
	for _, r := range e.cs.st.Undo {
		bySeq[r.Seq] = r
	}
	undo := tx.Action == txnUndo
	written, err := e.ws.fs.Settle(&tx.Journal, func(i int) ([]byte, error) {
		if undo {
			// What an undo replaces is what smith wrote, of which the
			// journal keeps only the hash: a file the commit had restored
			// stays restored, and its record says so (undoneAsFound).
			return nil, errors.New("smith keeps no copy of the text it had written there")
		}
		if i >= len(tx.Undo) || bySeq[tx.Undo[i]] == nil {
			return nil, errors.New("the journal has no record of its bytes before")
		}
		return e.store.getBlob(bySeq[tx.Undo[i]].Before)
	})
	what := "write"
	if undo {
		what = "undo"
		var recs []*undoRecord
		for _, seq := range tx.Undo {
			if r := bySeq[seq]; r != nil {
				recs = append(recs, r)
			}
		}
		e.undoneAsFound(recs)
	}
	if err != nil {
		e.log.Error("an interrupted "+what+" could not be settled completely; see the files named", "err", err)
	} else {
		e.log.Warn("settled an interrupted "+what, "files", len(tx.Entries), "written", written)
	}
	return true
}

// settle sets the change of a write that recovery found done to what the
// writer would have set had it not been killed.
func (e *Engine) settle(r *undoRecord) {
	c := e.cs.byID[r.ChangeID]
	if c == nil {
		return
	}
	status := StatusApplied
	if r.Action == "reject" {
		status = StatusRejected
	}
	for i := range c.Hunks {
		if r.Hunks == nil || slices.Contains(r.Hunks, c.Hunks[i].ID) {
			c.Hunks[i].Status = status
		}
	}
	if r.Path == c.Abs || r.Action == "reject" {
		c.BaseHash = contentHash(nil, false)
		if r.After.Exists {
			c.BaseHash = r.After.Hash
		}
	}
	c.Status = deriveStatus(c.Hunks, status)
	c.Reason = ""
}

// snapshot copies a record so that it can be used without e.cs.mu, with
// its diff read back from the blob store when it is kept there.
func (c *changeRecord) snapshot() changeRecord {
	s := c.copyOf()
	s.loadDiff()
	return s
}

// copyOf is a copy of c that shares no hunk with it; its diff is what c
// holds (maybe only a reference: see loadDiff).
func (c *changeRecord) copyOf() changeRecord {
	s := *c
	s.Hunks = slices.Clone(c.Hunks)
	return s
}

// loadDiff reads back the diff of a snapshot whose record holds only its
// reference (DiffRef), for whoever plans it.
func (c *changeRecord) loadDiff() {
	if c.Diff == "" && c.DiffRef != nil && c.diffErr == nil {
		b, err := c.blobs.getBlob(*c.DiffRef)
		c.Diff, c.diffErr = string(b), err
	}
}

// revalidate re-plans a pending change against text and reports whether
// its status or hunks changed.
func (e *Engine) revalidate(id string, text []byte, exists bool) bool {
	c, snap, err := e.cs.recordSnapshot(id)
	if err != nil {
		return false
	}
	if snap.Abs == "" || snap.Src.AppliedUpstream {
		return false
	}
	if contentHash(text, exists) == snap.BaseHash {
		return false
	}
	before := snap.snapshot()
	e.plan(&snap, text, exists)
	changed := before.Status != snap.Status || !slices.Equal(before.Hunks, snap.Hunks)
	e.cs.mu.Lock()
	c.Hunks, c.Status, c.Reason, c.BaseHash = snap.Hunks, snap.Status, snap.Reason, snap.BaseHash
	err = e.cs.saveLocked()
	e.cs.mu.Unlock()
	if err != nil {
		e.log.Error("save state", "err", err)
	}
	return changed
}
