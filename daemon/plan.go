package daemon

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

// This file is the engine's use of diffapply: planning a change against
// the text the user sees, rendering a subset of its hunks, reverse-applying
// hunks that were already written, and the atomic disk write.

// filePlan is a change planned against one text.
type filePlan struct {
	hunks  []Hunk // statuses pending or conflict
	noop   bool   // the text already is the result
	file   *diffapply.File
	del    bool   // the change deletes the file (no hunks needed)
	same   []byte // a plan without a diff renders this
	rename bool   // the rendered text goes to the target, the source is removed
}

// hunkID names a hunk of a change: "h" + its 1-based index in the file.
func hunkID(index int) string { return "h" + strconv.Itoa(index) }

func hunkIndex(id string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "h"))
	return n, err == nil && strings.HasPrefix(id, "h")
}

// render returns the text with the chosen hunks applied (all when ids is
// nil) and whether the file exists afterwards.
func (fp *filePlan) render(ids []string) ([]byte, bool, error) {
	if fp.del {
		return nil, false, nil
	}
	if fp.file == nil {
		return fp.same, true, nil
	}
	f := fp.file
	if f.Op == diffapply.OpDelete {
		if ids != nil && len(ids) != len(f.Hunks) {
			return nil, false, errors.New("a deletion cannot be applied in part; apply all its hunks")
		}
		return nil, false, nil
	}
	var sel []int
	if ids != nil {
		sel = []int{}
		for _, id := range ids {
			n, ok := hunkIndex(id)
			if !ok || n < 1 || n > len(f.Hunks) {
				return nil, false, fmt.Errorf("no hunk %s", id)
			}
			h := f.Hunks[n-1]
			if !h.OK() {
				return nil, false, fmt.Errorf("hunk %s conflicts: %s", id, conflictText(h))
			}
			sel = append(sel, h.ID)
		}
	}
	return f.Render(sel), true, nil
}

func conflictText(h *diffapply.Hunk) string {
	if h.File.Conflict != nil {
		return h.File.Conflict.String()
	}
	if h.Conflict != nil {
		return h.Conflict.String()
	}
	return ""
}

// planChange plans c against text (the buffer or disk content of c.Abs).
// An error is a refusal of the whole change; single hunks that do not match
// come back with status conflict.
func (e *Engine) planChange(c *changeRecord, text []byte, exists bool) (*filePlan, error) {
	if c.diffErr != nil {
		return nil, fmt.Errorf("the change's diff cannot be read: %w", c.diffErr)
	}
	if c.OldAbs != "" {
		return e.planRename(c, text, exists)
	}
	switch {
	case c.Diff != "":
		return e.planDiff(c, text, exists, false)
	case c.Content != nil:
		// The diff derived from the content is empty: the base already
		// held the content.
		if exists && string(text) == *c.Content {
			return &filePlan{noop: true, same: text}, nil
		}
		if !exists && *c.Content == "" {
			return &filePlan{same: []byte{}}, nil // an empty file created
		}
		return nil, fmt.Errorf("%s changed since the change was planned", c.Path)
	case c.Kind == protocol.ChangeDelete:
		if !exists {
			return &filePlan{del: true, noop: true}, nil
		}
		return &filePlan{del: true}, nil
	case c.Src.Mode != 0 && c.Kind == protocol.ChangeModify:
		// A mode change without a diff (git's "old mode"/"new mode"
		// alone): the text stays, the write gives it the mode.
		if !exists {
			return nil, fmt.Errorf("%s does not exist", c.Path)
		}
		return &filePlan{same: text}, nil
	}
	return nil, errors.New("the change carries neither a diff nor the new content")
}

// planRename plans a rename: the source (text) must exist and the target
// must not; the target gets the source's text with c's diff applied (a
// rename with edits), or c's content, or the text as it is.
func (e *Engine) planRename(c *changeRecord, text []byte, exists bool) (*filePlan, error) {
	if !exists {
		return nil, fmt.Errorf("%s does not exist", c.OldPath)
	}
	if _, err := os.Lstat(c.Abs); err == nil {
		return nil, fmt.Errorf("%s already exists; renaming %s would overwrite it", c.Path, c.OldPath)
	}
	switch {
	case c.Diff != "":
		fp, err := e.planDiff(c, text, true, false)
		if err != nil {
			return nil, err
		}
		fp.rename = true
		return fp, nil
	case c.Content != nil:
		return &filePlan{same: []byte(*c.Content), rename: true}, nil
	}
	return &filePlan{same: text, rename: true}, nil
}

// planDiff plans c's diff (backwards with reverse) against text.
func (e *Engine) planDiff(c *changeRecord, text []byte, exists, reverse bool) (*filePlan, error) {
	f, err := e.planFile(c, text, exists, reverse)
	if err != nil {
		return nil, err
	}
	return planOf(f, text, exists)
}

// planFile plans c's diff (backwards with reverse) against text and
// returns diffapply's plan of its one file, a file-level conflict included.
func (e *Engine) planFile(c *changeRecord, text []byte, exists, reverse bool) (*diffapply.File, error) {
	if f := c.given; f != nil && !reverse {
		// The caller's plan of this diff against this text (plan checked
		// the hash): the same as planning it here.
		c.given = nil
		return f, nil
	}
	p, err := diffapply.Plan(e.ws.root, []byte(c.Diff), diffapply.Options{
		Target:  c.sourceRel(),
		Reverse: reverse,
		ReadFile: func(rel string) ([]byte, bool, error) {
			if rel != c.sourceRel() {
				return nil, false, fmt.Errorf("the diff of %s also names %s", c.sourceRel(), rel)
			}
			return text, exists, nil
		},
	})
	if err != nil {
		return nil, err
	}
	if len(p.Files) != 1 {
		return nil, fmt.Errorf("the diff names %d files, want 1", len(p.Files))
	}
	return p.Files[0], nil
}

// contentDiff derives a diff from a whole-content change: the base text
// the change was first planned against, to the new content. From then on
// the change is planned like any diff, so that an edit of the base is
// re-anchored or a conflict, never silently overwritten.
func contentDiff(path string, base []byte, content string) string {
	return udiff.Unified("a/"+path, "b/"+path, string(base), content)
}

func planOf(f *diffapply.File, text []byte, exists bool) (*filePlan, error) {
	if f.Conflict != nil && len(f.Hunks) == 0 {
		return nil, errors.New(f.Conflict.String())
	}
	fp := &filePlan{file: f, hunks: make([]Hunk, 0, len(f.Hunks))}
	for _, h := range f.Hunks {
		fh := Hunk{ID: hunkID(h.Index), Header: h.Header, Status: StatusPending, Match: string(h.Level), Offset: h.Offset}
		if !h.OK() {
			fh.Status, fh.Match = StatusConflict, ""
		}
		fp.hunks = append(fp.hunks, fh)
	}
	if f.Conflict != nil {
		return nil, errors.New(f.Conflict.String())
	}
	switch f.Op {
	case diffapply.OpDelete:
		fp.noop = !exists
	default:
		fp.noop = exists && string(f.After) == string(text) && len(f.Hunks) > 0
	}
	return fp, nil
}

// verifyPostImage checks that disk holds the post-image of a change the
// upstream says it wrote: the diff planned backwards must match
// everywhere. It returns the hunks, all appliedUpstream.
func (e *Engine) verifyPostImage(c *changeRecord, disk []byte) ([]Hunk, error) {
	fp, err := e.planDiff(c, disk, true, true)
	if err != nil {
		return nil, err
	}
	for i := range fp.hunks {
		if fp.hunks[i].Status == StatusConflict {
			h := fp.file.Hunks[i]
			return nil, fmt.Errorf("hunk %s: %s", fp.hunks[i].ID, conflictText(h))
		}
		fp.hunks[i].Status = StatusAppliedUpstream
	}
	return fp.hunks, nil
}

// reverseHunks takes back the chosen written hunks of c from cur (all of
// the change when ids is empty and the change has no hunks).
func (e *Engine) reverseHunks(c *changeRecord, cur []byte, ids []string) ([]byte, bool, error) {
	if c.OldAbs != "" {
		return nil, false, Errorf(ErrUnsupported, "a rename is taken back as a whole, with Undo")
	}
	if len(c.Hunks) == 0 {
		return e.reverseWhole(c, cur)
	}
	fp, err := e.planDiff(c, cur, true, true)
	if err != nil {
		return nil, false, err
	}
	return fp.render(ids)
}

// reverseWhole takes back a change without hunks: a creation by the
// upstream with known content becomes a deletion; anything else needs the
// bytes before, which smith knows only for its own writes.
func (e *Engine) reverseWhole(c *changeRecord, cur []byte) ([]byte, bool, error) {
	if c.Kind == protocol.ChangeCreate && c.Content != nil {
		if string(cur) != *c.Content {
			return nil, false, fmt.Errorf("%s changed since it was created", c.Path)
		}
		return nil, false, nil
	}
	before, exists, err := e.bytesBefore(c)
	if err != nil {
		return nil, false, err
	}
	return before, exists, nil
}

// bytesBefore returns the bytes c's file had before smith first wrote c.
func (e *Engine) bytesBefore(c *changeRecord) ([]byte, bool, error) {
	e.cs.mu.Lock()
	var first *undoRecord
	for _, r := range e.cs.st.Undo {
		if r.ChangeID == c.ID && r.Action == "apply" && r.State != undoFailed {
			first = r
			break
		}
	}
	e.cs.mu.Unlock()
	if first == nil {
		return nil, false, Errorf(ErrUnsupported, "smith does not know %s's content before the upstream wrote it; only the upstream's session reset or restore can take it back", c.Path)
	}
	b, err := e.store.getBlob(first.Before)
	return b, first.Before.Exists, err
}

// unifiedDiff renders a preview diff.
func unifiedDiff(path string, a, b []byte) string {
	return udiff.Unified("a/"+path, "b/"+path, string(a), string(b))
}

func relTo(root, abs string) (string, error) {
	r, ok := strings.CutPrefix(abs, root+string(os.PathSeparator))
	if !ok {
		return "", Errorf(ErrOutsideWorkspace, "%s is outside the workspace %s", abs, root)
	}
	return r, nil
}
