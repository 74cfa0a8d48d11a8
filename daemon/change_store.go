package daemon

import (
	"fmt"
	"slices"
	"sync"
)

// Lock order. The engine has three parts, each with its own lock, plus a
// few locks taken around or under them. A lock may be taken while holding
// the ones above it in this list, never one above while holding one below:
//
//	changeStore.writeMu   one write of smith's to the workspace at a time
//	                      (apply, reject, undo, re-validation); taken first
//	Engine.mu             the coordinator: Peers, running turns, outbox, closed
//	dialogRegistry.mu     local dialogs, current dialog, single-flight locks,
//	                      turn ids (under Engine.mu only in reserveTurn, for
//	                      the turn id)
//	changeStore.mu        change records, the undo journal, their counters
//	stateFile.mu, watcher.mu, a Peer's mailbox lock
//	                      leaves: a part saving state.json, the change store
//	                      telling the watcher, Engine.mu queuing a notification
//
// changeStore.mu is never held with Engine.mu or dialogRegistry.mu: code
// that needs the changes and another part (a dialog taking the server's id
// renames the dialog of its changes; Status counts pending changes) takes
// one, lets it go, then takes the other. No lock but writeMu is held while
// waiting on the network or on an Editor.

// changeStore holds every change smith recorded (proposals and the
// upstream's writes), their hunks and statuses, and the undo journal: the
// records apply, reject, batch writes, undo, recovery and re-validation
// work on. It is the change part of state.json and saves it.
//
// mu guards byID, st and every field of the records in them. writeMu
// serialises smith's writes to workspace files (apply, reject, undo,
// re-validation's re-plan), so that "check the file, then write it" is not
// interleaved with another write of smith's; it is taken before mu, never
// while holding it.
type changeStore struct {
	writeMu sync.Mutex

	mu    sync.Mutex
	byID  map[string]*changeRecord
	st    changesState
	file  *stateFile
	moved func()   // told when a save changes the files with open changes (the watcher)
	open  []string // those files at the last save, sorted: moved is told only when they change
	// syncParent: the state folder may be new; the first write-ahead
	// save syncs the folder holding it (saveUndos), once.
	syncParent bool
}

func newChangeStore(st changesState, file *stateFile) *changeStore {
	cs := &changeStore{byID: map[string]*changeRecord{}, st: st, file: file}
	for _, c := range st.Changes {
		cs.byID[c.ID] = c
		c.blobs = file.store
	}
	return cs
}

// setMoved installs the hook saveLocked calls (the watcher's).
func (cs *changeStore) setMoved(f func()) {
	cs.mu.Lock()
	cs.moved = f
	cs.mu.Unlock()
}

// nextID hands out the next change id (c1, c2, ...; never reused).
func (cs *changeStore) nextID() string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	id := fmt.Sprintf("c%d", cs.st.NextChange)
	cs.st.NextChange++
	return id
}

// add records c, and saves when save is set (a caller recording many
// changes at once saves once after them all: each save rewrites the whole
// state file).
func (cs *changeStore) add(c *changeRecord, save bool) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.byID[c.ID] = c
	cs.st.Changes = append(cs.st.Changes, c)
	if !save {
		return nil
	}
	return cs.saveLocked()
}

// record returns the change record id.
func (cs *changeStore) record(id string) (*changeRecord, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.recordLocked(id)
}

// recordSnapshot returns change id's record and a copy of it (snapshot),
// both taken in one hold of mu.
func (cs *changeStore) recordSnapshot(id string) (*changeRecord, changeRecord, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, err := cs.recordLocked(id)
	if err != nil {
		return nil, changeRecord{}, err
	}
	return c, c.snapshot(), nil
}

// applySnapshot is recordSnapshot for an apply: a change whose plan was
// kept (planned) comes without its diff when only the pack holds it
// (loadDiff reads it back should the apply plan after all), since the
// kept plan needs none.
func (cs *changeStore) applySnapshot(id string) (*changeRecord, changeRecord, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, err := cs.recordLocked(id)
	if err != nil {
		return nil, changeRecord{}, err
	}
	s := c.copyOf()
	if c.planned == nil {
		s.loadDiff()
	}
	return c, s, nil
}

// flushDiffs makes the large diffs that records still hold durable in a
// pack of their own and lets the records go of them (stageDiffsLocked),
// without a save of the state file: the records refer to a durable blob
// from then on, whenever they are saved. A patch of many large files
// calls it while it records them (applyPatch), so that its diffs are not
// all held until the journal's save. On failure the records keep them.
func (cs *changeStore) flushDiffs() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	bs := cs.file.store.newBlobStage()
	moveOut := cs.stageDiffsLocked(bs)
	if bs.commit() == nil {
		moveOut()
	}
}

func (cs *changeStore) recordLocked(id string) (*changeRecord, error) {
	c, ok := cs.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownChange, id)
	}
	return c, nil
}

// snapshots copies the records that keep returns true for, oldest first.
func (cs *changeStore) snapshots(keep func(*changeRecord) bool) []changeRecord {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []changeRecord
	for _, c := range cs.st.Changes {
		if keep(c) {
			out = append(out, c.snapshot())
		}
	}
	return out
}

// count counts the records in status.
func (cs *changeStore) count(status string) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	n := 0
	for _, c := range cs.st.Changes {
		if c.Status == status {
			n++
		}
	}
	return n
}

// renameDialog files the changes of dialog old under id (the dialog took
// the server's id).
func (cs *changeStore) renameDialog(old, id string) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.st.Changes {
		if c.DialogID == old {
			c.DialogID = id
		}
	}
	return cs.saveLocked()
}

// newUndoGroup numbers the writes of one apply.
func (cs *changeStore) newUndoGroup() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	g := cs.st.NextUndo
	cs.st.NextUndo++
	return g
}

// upstreamWrote reports whether the upstream wrote c (or some of its
// hunks) itself: an AgentSmithy v1/v2 server's change.
func (c *changeRecord) upstreamWrote() bool {
	return c.Status == StatusAppliedUpstream || slices.ContainsFunc(c.Hunks, func(h Hunk) bool { return h.Status == StatusAppliedUpstream })
}

// upstreamWroteSince is the id of the latest change recorded after
// change id that the upstream wrote itself to rel (an AgentSmithy v1/v2
// server's), "" when there is none: what a refused undo of id names as
// the edit it would lose.
func (cs *changeStore) upstreamWroteSince(rel, id string) string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range slices.Backward(cs.st.Changes) {
		if c.ID == id {
			return ""
		}
		if c.Path == rel && c.upstreamWrote() {
			return c.ID
		}
	}
	return ""
}

// undoTargets picks the journal records an Undo takes back.
func (cs *changeStore) undoTargets(changeID string) ([]*undoRecord, error) {
	cs.mu.Lock()
	var rec *undoRecord
	for _, r := range slices.Backward(cs.st.Undo) {
		if r.State == undoDone && (changeID == "" || r.ChangeID == changeID) {
			rec = r
			break
		}
	}
	// The writes of one apply share a group: Undo("") takes the group
	// back, Undo(id) the change's writes in it (both files of a rename).
	var recs []*undoRecord
	if rec != nil && rec.Group != 0 {
		for _, r := range cs.st.Undo {
			if r.Group == rec.Group && r.State == undoDone && (changeID == "" || r.ChangeID == changeID) {
				recs = append(recs, r)
			}
		}
	} else if rec != nil {
		recs = []*undoRecord{rec}
	}
	// Writes there were, all taken back already.
	undone := slices.ContainsFunc(cs.st.Undo, func(r *undoRecord) bool {
		return r.State == undoUndone && (changeID == "" || r.ChangeID == changeID)
	})
	c, known := cs.byID[changeID]
	upstream := known && c.upstreamWrote()
	var path string
	if known {
		path = c.Path
	}
	// The change the upstream wrote last: undoing "the most recent
	// change" after a turn of a server that writes files itself finds
	// no write of smith's, though the user sees the server's; the
	// refusal then says where to go instead.
	var serverWrote string
	if changeID == "" {
		for _, c := range slices.Backward(cs.st.Changes) {
			if c.upstreamWrote() {
				serverWrote = fmt.Sprintf("; the upstream wrote %s (%s) itself: undoing %s says what can be done instead", c.ID, c.Path, c.ID)
				break
			}
		}
	}
	cs.mu.Unlock()
	switch {
	case len(recs) > 0:
		return recs, nil
	case changeID != "" && !known:
		return nil, fmt.Errorf("%w: %s", ErrUnknownChange, changeID)
	case upstream:
		// The fronts say what can be done instead (reject its hunks, or
		// the upstream's own session reset or restore).
		return nil, Errorf(ErrUnsupported, "nothing to undo for change %s: the upstream wrote %s itself, and smith has no copy of what was there before", changeID, path)
	case changeID != "" && undone:
		return nil, Errorf(ErrInvalidState, "nothing to undo for change %s: it is undone already", changeID)
	case changeID != "":
		return nil, Errorf(ErrInvalidState, "nothing to undo for change %s: smith has not written it", changeID)
	case undone:
		return nil, Errorf(ErrInvalidState, "nothing to undo: every write smith made in this workspace is undone already%s", serverWrote)
	}
	return nil, Errorf(ErrInvalidState, "nothing to undo: smith has written no change in this workspace%s", serverWrote)
}

// undone records that an Undo restored the bytes from before recs (after[i]
// is the hash of what recs[i]'s file holds now) and puts each change's
// hunks back as the undone write found them, with rules that keep the list
// truthful and the change's status in step with its hunks:
//
//   - a hunk the write did not touch that was decided since (a pending hunk
//     rejected after another hunk was applied) keeps that decision: Undo
//     restores what the write did, nothing else;
//   - a hunk the undone apply wrote goes back to review (pending) when the
//     change still is in review: another of its hunks is pending, in
//     conflict, or written by an earlier apply. The user took back one
//     step of deciding the change; it is as it was before that step, and
//     every hunk not decided can be decided again;
//   - otherwise it becomes undone, not pending: the user had decided the
//     whole change and took it back, so a later re-validation must not
//     offer it for review again (it can still be applied on purpose).
//
// The change's status then follows its hunks (deriveStatus).
//
// It clears the journal of the undo's disk commit (Txn) in the same save.
func (cs *changeStore) undone(recs []*undoRecord, after []string) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.undoneLocked(recs, after)
	cs.st.Txn = nil
	return cs.saveLocked()
}

// saveTxn saves the state with tx, the write-ahead record of a disk
// commit (undoLogged); on failure the state forgets it again.
func (cs *changeStore) saveTxn(tx *txnRecord) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.st.Txn = tx
	if err := cs.saveLocked(); err != nil {
		cs.st.Txn = nil
		return err
	}
	return nil
}

// undoneLocked is undone without the save; the caller holds mu.
func (cs *changeStore) undoneLocked(recs []*undoRecord, after []string) {
	for i, r := range recs {
		c := cs.byID[r.ChangeID]
		r.State = undoUndone
		if c == nil {
			continue
		}
		var back []int // hunks this apply wrote, taken back
		for j := range c.Hunks {
			s, ok := r.Prev[c.Hunks[j].ID]
			if !ok {
				continue
			}
			if len(r.Hunks) > 0 && !slices.Contains(r.Hunks, c.Hunks[j].ID) && c.Hunks[j].Status != s {
				continue // not this write's, decided since
			}
			if cur := c.Hunks[j].Status; r.Action == "apply" && (cur == StatusApplied || cur == StatusUndone) && s != StatusApplied {
				back = append(back, j)
				continue
			}
			c.Hunks[j].Status = s
		}
		if r.Path == c.source() {
			c.BaseHash = after[i]
		}
		c.Reason = ""
		if r.Action != "apply" {
			c.Status = r.PrevStat
			continue
		}
		open := false
		for j, h := range c.Hunks {
			if !slices.Contains(back, j) && (h.Status == StatusPending || h.Status == StatusConflict || written(h.Status)) {
				open = true
			}
		}
		for _, j := range back {
			c.Hunks[j].Status = StatusUndone
			if open && r.Prev[c.Hunks[j].ID] != StatusUndone {
				c.Hunks[j].Status = StatusPending
			}
		}
		c.Status = deriveStatus(c.Hunks, StatusUndone)
		if c.Status == StatusConflict {
			c.Reason = fmt.Sprintf("%s: %s", c.Path, conflictReason(c.Hunks))
		}
	}
}

// applied records a finished apply: the hunks each step wrote (all of
// its change's when it names none) are applied, the change is planned
// against what its file holds now, and the write's journal records are
// done (undo may take them back).
func (cs *changeStore) applied(steps []*applyStep) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, st := range steps {
		c := st.c
		j := 0 // st.ids is in the order of c.Hunks when selectHunks chose them
		for i := range c.Hunks {
			hit := st.ids == nil
			if !hit && j < len(st.ids) && st.ids[j] == c.Hunks[i].ID {
				hit = true
				j++
			} else if !hit {
				hit = slices.Contains(st.ids, c.Hunks[i].ID)
			}
			if hit {
				c.Hunks[i].Status = StatusApplied
			}
		}
		if w := st.ws[0]; w.nextExists && w.nextHash != "" {
			c.BaseHash = w.nextHash // hashed when the write was journalled
		} else {
			c.BaseHash = contentHash(w.next, w.nextExists)
		}
		c.Status = deriveStatus(c.Hunks, StatusApplied)
		c.Reason = ""
		for i, r := range st.recs {
			r.State, r.Via = undoDone, st.ws[i].via
		}
	}
	cs.st.Txn = nil // settled: the records say what happened
	return cs.saveLocked()
}

// failed marks journal records of a write that did not happen (undo
// never offers them).
func (cs *changeStore) failed(recs []*undoRecord) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, r := range recs {
		r.State, r.Via = undoFailed, ""
	}
	cs.st.Txn = nil
	return cs.saveLocked()
}

// dropUndos forgets journal records that were never saved (their write
// was refused before its write-ahead record).
func (cs *changeStore) dropUndos(recs []*undoRecord) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.st.Undo = slices.DeleteFunc(cs.st.Undo, func(r *undoRecord) bool { return slices.Contains(recs, r) })
}

// undoStage is a blob stage for the texts a write replaces (addUndo):
// small ones stay in their records (blobRef.Inline) while the state
// file's budget (inlineTotal) allows. When it is nearly spent, the inline
// texts of the earlier records go to this stage's pack, all at once, and
// the records take its references when it is committed: one pack per
// budget's worth of small writes, not one per write.
func (cs *changeStore) undoStage() *blobStage {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	bs := cs.file.store.newBlobStage()
	var used int64
	for _, r := range cs.st.Undo {
		used += int64(len(r.Before.Inline))
	}
	if used+inlineBelow > inlineTotal {
		for _, r := range cs.st.Undo {
			if r.Before.Inline == nil {
				continue
			}
			ref := bs.add(packPart{b: r.Before.Inline}, int64(len(r.Before.Inline)), r.Before.Hash)
			// Run by commit, under mu (saveUndos holds it).
			bs.moved = append(bs.moved, func() { r.Before = ref })
		}
		used = 0
	}
	bs.inline = inlineTotal - used
	return bs
}

// rejected marks hunks ids of c rejected; the change's status follows its
// hunks. The caller saves (with the journal record of a reverse-apply).
func (cs *changeStore) rejected(c *changeRecord, ids []string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for i := range c.Hunks {
		if slices.Contains(ids, c.Hunks[i].ID) {
			c.Hunks[i].Status = StatusRejected
		}
	}
	c.Status = deriveStatus(c.Hunks, StatusRejected)
	if c.Status != StatusConflict {
		c.Reason = ""
	}
}

// saveLocked writes the state file. Called with mu held. Every change
// of the set of open changes is saved, so this is also where the watcher
// learns that the directories it should watch may have moved: only when
// the files with open changes are others than at the last save (an apply
// that is journalled, then written, is two saves and one move).
func (cs *changeStore) saveLocked() error {
	if open := cs.openFilesLocked(); cs.moved != nil && !slices.Equal(open, cs.open) {
		cs.open = open
		cs.moved()
	}
	bs := cs.file.store.newBlobStage()
	moveOut := cs.stageDiffsLocked(bs)
	if bs.commit() == nil {
		moveOut()
	} // else the diffs stay in the state file, as before
	return cs.file.saveChanges(&cs.st)
}

// openFilesLocked lists, sorted, the files of the open changes (those
// the watcher re-validates: watcher.wanted).
func (cs *changeStore) openFilesLocked() []string {
	var files []string
	for _, c := range cs.st.Changes {
		if !revalidatable(c.Status) || c.Abs == "" {
			continue
		}
		files = append(files, c.Abs)
		if c.OldAbs != "" {
			files = append(files, c.OldAbs)
		}
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// stageDiffsLocked stages in bs the large diffs still kept in the state
// file (largeDiff); the returned func, called once bs is committed,
// makes the records refer to their blobs instead. Called with mu held.
func (cs *changeStore) stageDiffsLocked(bs *blobStage) func() {
	var out []*changeRecord
	var refs []blobRef
	for _, c := range cs.st.Changes {
		if c.DiffRef != nil || len(c.Diff) < largeDiff {
			continue
		}
		out, refs = append(out, c), append(refs, bs.putString(c.Diff))
	}
	return func() {
		for i, c := range out {
			c.DiffRef, c.Diff, c.blobs = &refs[i], "", cs.file.store
		}
	}
}
