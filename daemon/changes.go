package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

// The life cycle of a change (docs/engine.md draws it in full): a change
// event becomes rejected (outside the workspace), appliedUpstream or
// conflict (written by the upstream: verified against disk), or pending,
// conflict or stale (a proposal, planned against the text the user sees).
// Apply makes hunks applied, Reject rejected (reverse-applying written
// ones), Undo restores the statuses before smith's last write (an undone
// apply is "undone", applicable again). Open changes are re-planned when
// their text changes.
//
// A change's status follows its hunks: pending while any hunk is pending,
// else applied/appliedUpstream while any hunk is, else rejected. conflict
// and stale are set on the whole change with a reason.

// recordChange turns one change event into a change record. It returns a
// violation message when the change targets a path outside the workspace.
//
// The state is saved with the record unless batch is set: a caller that
// records many changes to apply them at once (ApplyPatch) saves once after
// them all, since each save rewrites the whole state file, and the record
// keeps its plan for that apply (planned), which then need not plan again.
//
// given (nil: none) is the caller's plan of src.Diff (PlannedChange.Plan).
//
// pre (nil: none) is what propose has ready (proposal).
func (e *Engine) recordChange(p *Peer, dialog, turnID string, src protocol.Change, given *diffapply.File, batch bool, pre *proposal) (*changeRecord, string) {
	id := e.cs.nextID()

	c := &changeRecord{
		Change: Change{ID: id, DialogID: dialog, TurnID: turnID, Path: src.Path, Kind: src.Kind, Hunks: []Hunk{}},
		Src:    src,
	}
	if c.Kind == "" {
		c.Kind = protocol.ChangeModify
	}
	if src.HasContent {
		s := src.Content
		c.Content = &s
	}
	c.Diff = src.Diff
	// The diff and the content are kept once, in c.Diff and c.Content:
	// the state file holds every change.
	c.Src.Diff, c.Src.Content = "", ""
	var violation string
	var abs, rel, oldAbs, oldRel string
	var err error
	if pre != nil {
		abs, rel, oldAbs, oldRel = pre.abs, pre.rel, pre.oldAbs, pre.oldRel
	} else {
		abs, rel, err = e.ws.resolve(src.Path)
		if err == nil && src.OldPath != "" {
			oldAbs, oldRel, err = e.ws.resolve(src.OldPath)
		}
	}
	switch {
	case err != nil:
		c.Status = StatusRejected
		c.Reason = fmt.Sprintf("refused: %s; smith writes only regular files under the workspace, outside .git and its own state", pathRefusal(err))
		violation = fmt.Sprintf("change %s targets %s, which smith may not write in the workspace %s: %s (smith wrote nothing)", id, src.Path, e.ws.root, pathRefusal(err))
		if src.AppliedUpstream {
			// "Nothing was written" would be false: the server wrote it.
			c.Reason = fmt.Sprintf("the server itself wrote %s, which smith may not write in the workspace %s (%s); smith did not touch it: check that file", src.Path, e.ws.root, pathRefusal(err))
			violation = fmt.Sprintf("change %s: the server itself wrote %s, which smith may not write in the workspace %s: %s (smith did not touch it)", id, src.Path, e.ws.root, pathRefusal(err))
		}
	case src.AppliedUpstream:
		c.Abs, c.Path = abs, rel
		c.setRename(oldAbs, oldRel)
		e.verifyUpstream(c)
	default:
		c.Abs, c.Path = abs, rel
		c.setRename(oldAbs, oldRel)
		var buf []byte
		if pre != nil && pre.buf != nil {
			buf, *pre.buf = *pre.buf, nil
		}
		text, exists, disk, err := e.userTextInto(p, c.source(), buf)
		if err != nil {
			c.Status, c.Reason = StatusConflict, err.Error()
			break
		}
		if c.Diff == "" && c.Content != nil {
			c.Diff = contentDiff(c.Path, text, *c.Content)
			if !exists {
				c.Kind = protocol.ChangeCreate
			}
		}
		if given != nil && c.OldAbs == "" && c.Content == nil && c.Diff == src.Diff &&
			(c.Kind == protocol.ChangeModify || c.Kind == protocol.ChangeCreate || c.Kind == protocol.ChangeDelete) {
			c.given = given // plan takes it when text is what it was planned against
		}
		g := c.given
		fp := e.plan(c, text, exists)
		c.given = nil
		if g != nil && fp != nil && fp.file == g {
			// Planned by the caller against g.Before, which text equals
			// byte for byte (plan checked): keep that copy, and read the
			// next file into this one.
			if disk && pre != nil && pre.buf != nil {
				*pre.buf = text
			}
			text = g.Before
		}
		if batch {
			c.planned = keepPlan(c, fp, text, exists)
		}
	}

	if err := e.cs.add(c, !batch); err != nil {
		e.log.Error("save state", "err", err)
	}
	return c, violation
}

// setRename makes c a rename when its source differs from its target.
func (c *changeRecord) setRename(oldAbs, oldRel string) {
	if oldAbs != "" && oldAbs != c.Abs {
		c.OldAbs, c.OldPath, c.Kind = oldAbs, oldRel, protocol.ChangeRename
	}
}

// Propose records a change that did not come from a turn (a diff file
// given to `smith apply`, a front's own proposal): it is planned against
// the text the user sees, exactly like a change of a stream, and then
// applied, rejected and undone like one. A path outside the workspace is
// refused with ErrOutsideWorkspace and nothing is recorded. dialogID may
// be empty.
func (e *Engine) Propose(ctx context.Context, dialogID string, ch protocol.Change) (*Change, error) {
	_, v, err := e.propose(ctx, dialogID, ch, nil, false, true, nil)
	return v, err
}

// propose is Propose; batch leaves saving the state to the caller, which
// applies the change at once (recordChange). Without views the change is
// not presented (nil is returned) unless an editor listens. given (nil:
// none) is the caller's plan of ch.Diff (PlannedChange.Plan).
//
// buf (nil: none) is a buffer to read the file into (proposal).
func (e *Engine) propose(ctx context.Context, dialogID string, ch protocol.Change, given *diffapply.File, batch, views bool, buf *[]byte) (*changeRecord, *Change, error) {
	p := e.peerOf(ctx)
	pre := proposal{buf: buf}
	var err error
	if pre.abs, pre.rel, err = e.ws.resolve(ch.Path); err != nil {
		return nil, nil, err
	}
	if ch.OldPath != "" {
		if pre.oldAbs, pre.oldRel, err = e.ws.resolve(ch.OldPath); err != nil {
			return nil, nil, err
		}
	}
	ch.AppliedUpstream = false
	c, _ := e.recordChange(p, dialogID, "", ch, given, batch, &pre)
	if !views && !e.listened() {
		return c, nil, nil
	}
	v := e.view(c.ID)
	e.notifyAll(Notification{Kind: NoteChangeUpdated, Change: v})
	return c, v, nil
}

// proposal is what propose has ready for recordChange: the change's
// paths, resolved just before (propose refuses a path outside the
// workspace before recording; each resolution walks the path's
// components), and buf (nil: none), a buffer to read the file into,
// set on return to one the record does not hold (or nil).
type proposal struct {
	abs, rel, oldAbs, oldRel string
	buf                      *[]byte
}

// userText is the text the user sees of abs: the open buffer (p's editor
// first, then any attached one), else the file on disk.
func (e *Engine) userText(p *Peer, abs string) ([]byte, bool, error) {
	b, exists, _, err := e.userTextInto(p, abs, nil)
	return b, exists, err
}

// userTextInto is userText reading a file on disk into buf when buf can
// hold it; disk reports that it did read the disk (not a buffer).
func (e *Engine) userTextInto(p *Peer, abs string, buf []byte) (text []byte, exists, disk bool, err error) {
	if t, _, _, ok := e.document(p, abs); ok {
		return t, true, false, nil
	}
	b, exists, err := e.ws.readFileInto(abs, buf)
	if err != nil {
		return nil, false, false, fmt.Errorf("read %s: %w", abs, err)
	}
	return b, exists, true, nil
}

// plan (re)plans a proposal against text and sets its hunks, status and
// base hash. Hunks already applied or rejected keep their status. Called
// without e.cs.mu for a new record, with it held by no one else for an old one
// (see revalidate).
//
// An undone change stays undone (its hunks keep that status): it is
// re-planned only so that an Apply on purpose starts from the text now,
// and a plan that fails just says so in its reason.
//
// It returns the plan when the change is pending on it (nil otherwise).
func (e *Engine) plan(c *changeRecord, text []byte, exists bool) *filePlan {
	if g := c.given; g != nil && !exists && !g.Existed && len(text) == 0 && len(g.Before) == 0 && g.BeforeHash == diffapply.HashAbsent {
		// A creation planned, as here, against no file.
		c.BaseHash = contentHash(nil, false)
	} else if g != nil && exists && g.Existed && bytes.Equal(text, g.Before) && strings.HasPrefix(g.BeforeHash, "sha256:") {
		// The text the caller planned against, byte for byte (cheaper to
		// compare than to hash): its hash is the plan's.
		c.BaseHash = strings.TrimPrefix(g.BeforeHash, "sha256:")
	} else {
		c.given = nil // planned against another text: planFile plans it
		c.BaseHash = contentHash(text, exists)
	}
	fp, err := e.planChange(c, text, exists)
	if c.Status == StatusUndone {
		c.Reason = ""
		if err != nil {
			c.Reason = fmt.Sprintf("%s: no longer applies: %v", c.Path, err)
		}
		return nil
	}
	if err != nil && e.holdsResult(c, text, exists) {
		c.Status = StatusStale
		c.Reason = fmt.Sprintf("%s already holds the result of this change; nothing to apply", c.Path)
		return nil
	}
	if err != nil {
		c.Status = StatusConflict
		c.Reason = fmt.Sprintf("%s: %v", c.Path, err)
		for i := range c.Hunks {
			if c.Hunks[i].Status == StatusPending {
				c.Hunks[i].Status = StatusConflict
			}
		}
		return nil
	}
	prev := map[string]string{}
	for _, h := range c.Hunks {
		prev[h.ID] = h.Status
	}
	hunks := fp.hunks
	for i := range hunks {
		if s, ok := prev[hunks[i].ID]; ok && s != StatusPending && s != StatusConflict {
			hunks[i].Status = s
		}
	}
	c.Hunks = slices.Clone(hunks) // fp's stay as planned (recordChange may keep fp)
	c.Reason = ""
	c.Status = deriveStatus(c.Hunks, StatusPending)
	if c.Status == StatusConflict && e.holdsResult(c, text, exists) {
		c.Status = StatusStale
		c.Reason = fmt.Sprintf("%s already holds the result of this change; nothing to apply", c.Path)
		return nil
	}
	if c.Status == StatusConflict {
		c.Reason = fmt.Sprintf("%s: %s", c.Path, conflictReason(c.Hunks))
	}
	if c.Status == StatusPending && fp.noop {
		c.Status = StatusStale
		c.Reason = fmt.Sprintf("%s already holds the result of this change; nothing to apply", c.Path)
		return nil
	}
	if c.Status != StatusPending {
		return nil
	}
	return fp
}

// holdsResult reports whether text already is what c would produce (the
// user or another tool made the same edit): its diff, planned backwards,
// matches everywhere.
func (e *Engine) holdsResult(c *changeRecord, text []byte, exists bool) bool {
	if c.Diff == "" {
		return false
	}
	fp, err := e.planDiff(c, text, exists, true)
	if err != nil || fp.file == nil {
		return false
	}
	for _, h := range fp.hunks {
		if h.Status != StatusPending {
			return false
		}
	}
	return len(fp.hunks) > 0
}

// deriveStatus computes a change's status from its hunks; empty is the
// status of a change without hunks.
func deriveStatus(hs []Hunk, empty string) string {
	if len(hs) == 0 {
		return empty
	}
	count := map[string]int{}
	for _, h := range hs {
		count[h.Status]++
	}
	switch {
	case count[StatusConflict] > 0 && count[StatusPending] == 0 && count[StatusApplied] == 0 && count[StatusAppliedUpstream] == 0:
		return StatusConflict
	case count[StatusPending] > 0:
		return StatusPending
	case count[StatusConflict] > 0:
		return StatusConflict
	case count[StatusApplied] > 0:
		return StatusApplied
	case count[StatusAppliedUpstream] > 0:
		return StatusAppliedUpstream
	case count[StatusUndone] > 0:
		return StatusUndone
	}
	return StatusRejected
}

func conflictReason(hs []Hunk) string {
	var ids []string
	for _, h := range hs {
		if h.Status == StatusConflict {
			ids = append(ids, h.ID)
		}
	}
	return fmt.Sprintf("hunks %s no longer match the file; ask the agent to redo the change", strings.Join(ids, ", "))
}

func contentHash(b []byte, exists bool) string {
	if !exists {
		return "absent"
	}
	return hashBytes(b)
}

// verifyUpstream checks a change the upstream says it already wrote
// against disk: the file must hold the post-image.
func (e *Engine) verifyUpstream(c *changeRecord) {
	disk, exists, err := e.ws.readFile(c.Abs)
	if err != nil {
		c.Status, c.Reason = StatusConflict, fmt.Sprintf("read %s: %v", c.Path, err)
		return
	}
	c.BaseHash = contentHash(disk, exists)
	if c.OldAbs != "" {
		if _, oldExists, _ := e.ws.readFile(c.OldAbs); oldExists {
			c.Status, c.Reason = StatusConflict, fmt.Sprintf("the upstream reported renaming %s to %s, but %s still exists", c.OldPath, c.Path, c.OldPath)
			return
		}
	}
	switch {
	case c.Kind == protocol.ChangeDelete:
		if exists {
			c.Status, c.Reason = StatusConflict, fmt.Sprintf("the upstream reported deleting %s, but it still exists", c.Path)
			return
		}
		c.Status = StatusAppliedUpstream
		return
	case !exists:
		c.Status, c.Reason = StatusConflict, fmt.Sprintf("the upstream reported writing %s, but it does not exist", c.Path)
		return
	case c.Content != nil && !bytes.Equal(disk, []byte(*c.Content)):
		c.Status, c.Reason = StatusConflict, fmt.Sprintf("%s does not hold the content the upstream reported writing (changed since?)", c.Path)
		return
	}
	if c.Diff == "" {
		c.Status = StatusAppliedUpstream
		return
	}
	hunks, err := e.verifyPostImage(c, disk)
	if err != nil {
		c.Status, c.Reason = StatusConflict, fmt.Sprintf("%s does not hold the upstream's post-image: %v", c.Path, err)
		return
	}
	c.Hunks = hunks
	c.Status = StatusAppliedUpstream
}

// view returns a copy of change id for the fronts, or nil, its hunks
// placed in the text the user sees now (present).
func (e *Engine) view(id string) *Change {
	_, snap, err := e.cs.recordSnapshot(id)
	if err != nil {
		return nil
	}
	v := snap.Change
	v.Hunks = slices.Clone(snap.Hunks)
	e.present(&snap, &v)
	return &v
}

// Changes lists change proposals, oldest first, as they are now: a written
// change whose file no longer holds it (reset, edited) is listed stale,
// whatever was recorded (present). The status filter applies to that.
func (e *Engine) Changes(_ context.Context, f ChangeFilter) ([]Change, error) {
	e.cs.mu.Lock()
	if f.DialogID != "" {
		// A prefix of a dialog id the changes were recorded under.
		var ids []string
		for _, c := range e.cs.st.Changes {
			if !slices.Contains(ids, c.DialogID) {
				ids = append(ids, c.DialogID)
			}
		}
		if id, err := matchDialogID(f.DialogID, ids); err == nil {
			f.DialogID = id
		} else if errors.Is(err, ErrAmbiguousDialog) {
			e.cs.mu.Unlock()
			return nil, err
		}
	}
	var snaps []changeRecord
	for _, c := range e.cs.st.Changes {
		maybe := f.Status == "" || c.Status == f.Status || (f.Status == StatusStale && written(c.Status))
		if (f.DialogID == "" || c.DialogID == f.DialogID) && maybe && (f.TurnID == "" || c.TurnID == f.TurnID) {
			snaps = append(snaps, c.snapshot())
		}
	}
	e.cs.mu.Unlock()
	out := make([]Change, 0, len(snaps))
	for i := range snaps {
		v := snaps[i].Change
		v.Hunks = slices.Clone(snaps[i].Hunks)
		e.present(&snaps[i], &v)
		if f.Status == "" || v.Status == f.Status {
			out = append(out, v)
		}
	}
	return out, nil
}

// Change returns one change by id.
func (e *Engine) Change(id string) (*Change, error) {
	if v := e.view(id); v != nil {
		return v, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownChange, id)
}

// Preview returns the text before and after applying the given hunks (all
// pending ones when hunks is empty) of a change, against the text the user
// sees now. For a change already written it shows the given hunks (all
// written ones when empty) as they were written: Original is the text with
// them taken back, Result the text now. The diff is forward either way.
func (e *Engine) Preview(ctx context.Context, changeID string, hunks []string) (*Preview, error) {
	c, err := e.cs.record(changeID)
	if err != nil {
		return nil, err
	}
	text, exists, err := e.userText(nil, c.source())
	if err != nil {
		return nil, err
	}
	e.cs.mu.Lock()
	snap := c.snapshot()
	e.cs.mu.Unlock()
	if snap.Abs == "" {
		return nil, Errorf(ErrInvalidState, "change %s was refused (%s); there is nothing to preview", changeID, snap.Reason)
	}
	var before, after []byte
	var ids []string
	switch snap.Status {
	case StatusAppliedUpstream, StatusApplied:
		ids, err = selectHunks(&snap, hunks, StatusApplied, StatusAppliedUpstream)
		if err != nil {
			return nil, err
		}
		before, _, err = e.reverseHunks(&snap, text, ids)
		if err != nil {
			return nil, fmt.Errorf("preview %s: %w", changeID, err)
		}
		after = text
	default:
		fp, err := e.planChange(&snap, text, exists)
		if err != nil {
			return nil, Errorf(ErrConflict, "%s: %v", snap.Path, err)
		}
		snap.Hunks = mergeStatuses(snap.Hunks, fp.hunks)
		ids, err = selectHunks(&snap, hunks, StatusPending)
		if err != nil {
			return nil, err
		}
		after, _, err = fp.render(ids)
		if err != nil {
			return nil, Errorf(ErrConflict, "%s: %v", snap.Path, err)
		}
		before = text
	}
	all := slices.Clone(snap.Hunks)
	describe(&snap, all, e.place(&snap, text, exists), func(h Hunk) bool { return slices.Contains(ids, h.ID) })
	shown := []Hunk{}
	for _, h := range all {
		if slices.Contains(ids, h.ID) {
			shown = append(shown, h)
		}
	}
	return &Preview{
		Path: snap.Path, Original: string(before), Result: string(after),
		Diff: unifiedDiff(snap.Path, before, after), Hunks: shown, Status: snap.Status,
	}, nil
}

// orList is "a", "a or b", "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// selectHunks validates requested hunk ids of c (all hunks in one of the
// given statuses when none are requested). A requested hunk in another
// status is an error naming it.
func selectHunks(c *changeRecord, requested []string, statuses ...string) ([]string, error) {
	if len(requested) == 0 {
		n := 0
		for _, h := range c.Hunks {
			if slices.Contains(statuses, h.Status) {
				n++
			}
		}
		if n == 0 {
			return nil, nil
		}
		ids := make([]string, 0, n)
		for _, h := range c.Hunks {
			if slices.Contains(statuses, h.Status) {
				ids = append(ids, h.ID)
			}
		}
		return ids, nil
	}
	for _, id := range requested {
		i := slices.IndexFunc(c.Hunks, func(h Hunk) bool { return h.ID == id })
		if i < 0 {
			have := make([]string, len(c.Hunks))
			for j, h := range c.Hunks {
				have[j] = h.ID
			}
			return nil, fmt.Errorf("%w: change %s has no hunk %s (its hunks: %s)", ErrUnknownChange, c.ID, id, strings.Join(have, ", "))
		}
		if st := c.Hunks[i].Status; !slices.Contains(statuses, st) {
			already := ""
			if st == StatusRejected || st == StatusApplied {
				already = " already" // asked again what was done
			}
			return nil, Errorf(ErrInvalidState, "change %s hunk %s is %s%s; only %s hunks can be used here", c.ID, id, st, already, orList(statuses))
		}
	}
	return requested, nil
}
