package daemon

import (
	"fmt"
	"slices"
	"strings"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

// This file places a change's hunks in the text the user sees now: their
// line ranges, their forward text and the change's whole forward diff. The
// fronts show what it computes (PREVIEWS in docs/protocol.md) and never
// parse hunk headers themselves, so that every front points at the same
// lines and none inverts a diff.

// written reports whether a hunk status means its text is in the file.
func written(status string) bool {
	return status == StatusApplied || status == StatusAppliedUpstream
}

// placement is a change planned both ways against one text: forward for
// the hunks not written yet, backward for those written.
type placement struct {
	fwd, rev *diffapply.File // nil when that plan failed or was not needed
	// lost: a written hunk that rev does not find is gone from the text.
	// False for a rename, whose written text smith does not look for.
	lost bool
}

// place plans c against text in the directions its hunks need.
func (e *Engine) place(c *changeRecord, text []byte, exists bool) placement {
	var pl placement
	if c.Diff == "" || c.Abs == "" {
		return pl
	}
	pl.fwd, _ = e.planFile(c, text, exists, false)
	if c.OldAbs == "" && slices.ContainsFunc(c.Hunks, func(h Hunk) bool { return written(h.Status) }) {
		pl.lost = c.Kind != protocol.ChangeDelete // for a deletion the disk decides (holds)
		if f, err := e.planFile(c, text, exists, true); err == nil && f.Conflict == nil {
			pl.rev = f
		}
	}
	return pl
}

// hunkAt returns the diffapply hunk of f with the given change hunk id.
func hunkAt(f *diffapply.File, id string) *diffapply.Hunk {
	n, ok := hunkIndex(id)
	if f == nil || !ok || n < 1 || n > len(f.Hunks) {
		return nil
	}
	return f.Hunks[n-1]
}

// sides counts the old (context and removed) and new (context and added)
// lines of a hunk body.
func sides(body string) (old, new int) {
	for l := range strings.Lines(body) {
		switch l[0] {
		case ' ':
			old++
			new++
		case '-':
			old++
		case '+':
			new++
		}
	}
	return old, new
}

// pos0 is the 0-based position in the text where the old side of a matched
// hunk begins (for a side without lines: the number of lines before it).
func pos0(h *diffapply.Hunk, oldLines int) int {
	if oldLines == 0 && h.Numbered {
		return h.Line // the line after which the lines are inserted
	}
	return max(h.Line-1, 0)
}

// start turns a 0-based position and a line count into a diff range start.
func start(p0, lines int) int {
	if lines == 0 {
		return p0
	}
	return p0 + 1
}

// forwardBody turns a body planned backwards into the forward one: its
// removed lines are the hunk's added ones and the other way round, and in
// each run of changed lines the removed ones come first.
func forwardBody(body string) string {
	var b strings.Builder
	var minus, plus []string
	flush := func() {
		for _, l := range minus {
			b.WriteString(l)
		}
		for _, l := range plus {
			b.WriteString(l)
		}
		minus, plus = nil, nil
	}
	for l := range strings.Lines(body) {
		switch l[0] {
		case '-':
			plus = append(plus, "+"+l[1:])
		case '+':
			minus = append(minus, "-"+l[1:])
		default:
			flush()
			b.WriteString(l)
		}
	}
	flush()
	return b.String()
}

// section is what follows the closing "@@" of a header (a function name).
func section(header string) string {
	if i := strings.Index(header[min(2, len(header)):], "@@"); i >= 0 && strings.HasPrefix(header, "@@") {
		return header[i+4:]
	}
	return ""
}

func hunkText(header string, oldStart, oldLines, newStart, newLines int, body string) string {
	return fmt.Sprintf("@@ -%d,%d +%d,%d @@%s\n%s", oldStart, oldLines, newStart, newLines, section(header), body)
}

// describe fills the ranges, text and reason of hunks (of change c) from
// pl. inResult tells which hunks not written yet count as applied in the
// result the new ranges refer to (the pending ones for a listing, the
// chosen ones for a preview).
func describe(c *changeRecord, hunks []Hunk, pl placement, inResult func(Hunk) bool) {
	fwdDelta, revDelta := 0, 0
	for i := range hunks {
		h := &hunks[i]
		h.OldStart, h.OldLines, h.NewStart, h.NewLines, h.Text, h.Reason = 0, 0, 0, 0, "", ""
		if written(h.Status) {
			rh := hunkAt(pl.rev, h.ID)
			if rh != nil && rh.OK() {
				body := forwardBody(rh.Body)
				h.OldLines, h.NewLines = sides(body)
				newPos := pos0(rh, h.NewLines)
				h.NewStart = start(newPos, h.NewLines)
				h.OldStart = start(newPos-revDelta, h.OldLines)
				h.Text = hunkText(h.Header, h.OldStart, h.OldLines, h.NewStart, h.NewLines, body)
				revDelta += h.NewLines - h.OldLines
				continue
			}
			if pl.lost {
				// Gone since it was written (the file was reset or
				// edited): no front may show it as applied.
				h.Status = StatusConflict
				h.Reason = "its text is no longer in the file where it was written (the file was reset or edited since)"
			}
		}
		if fh := hunkAt(pl.fwd, h.ID); fh != nil && fh.OK() && !written(h.Status) {
			h.OldLines, h.NewLines = sides(fh.Body)
			oldPos := pos0(fh, h.OldLines)
			h.OldStart = start(oldPos, h.OldLines)
			h.NewStart = start(oldPos+fwdDelta, h.NewLines)
			h.Text = hunkText(h.Header, h.OldStart, h.OldLines, h.NewStart, h.NewLines, fh.Body)
			if inResult(*h) {
				fwdDelta += h.NewLines - h.OldLines
			}
			continue
		} else if fh != nil && (h.Status == StatusConflict || h.Status == StatusUndone) && h.Reason == "" {
			// For an undone hunk: why applying it again would fail.
			h.Reason = conflictText(fh)
		}
		// Not found in the text: the hunk as the diff states it.
		if dh := hunkAt(pl.fwd, h.ID); dh != nil {
			h.OldLines, h.NewLines = sides(dh.Body)
			h.OldStart, h.NewStart = dh.OldStart, dh.NewStart
			h.Text = hunkText(h.Header, h.OldStart, h.OldLines, h.NewStart, h.NewLines, dh.Body)
		}
	}
}

// holds reports whether text still holds written change c: every hunk
// that was written is still found (describe marked the lost ones
// conflict), a deleted file is absent, a whole content is there.
func (e *Engine) holds(c *changeRecord, hunks []Hunk, text []byte, exists bool) bool {
	if c.Kind == protocol.ChangeDelete {
		// An editor may keep the buffer of a file deleted on disk open
		// (one without the delete resource operation): the disk decides.
		_, onDisk, err := e.ws.readFile(c.Abs)
		return err == nil && !onDisk
	}
	if len(hunks) > 0 {
		for i, h := range hunks {
			if written(c.Hunks[i].Status) && h.Status == StatusConflict {
				return false
			}
		}
		return true
	}
	if c.Content != nil {
		return exists && string(text) == *c.Content
	}
	return true
}

// present fills what a front shows of change v (a copy of record c) from
// the text the user sees now (in any attached editor, else on disk): the
// hunks' ranges and texts, and the whole forward diff.
func (e *Engine) present(c *changeRecord, v *Change) {
	v.Diff = c.Diff
	if c.Abs == "" {
		return
	}
	var text []byte
	var exists bool
	var err error
	switch {
	case c.Status == StatusAppliedUpstream:
		// The server wrote the disk; an open buffer may not have been
		// reloaded yet.
		text, exists, err = e.ws.readFile(c.source())
	case c.OldAbs != "" && c.Status == StatusApplied:
		// An applied rename: its text is at the target now.
		text, exists, err = e.userText(nil, c.Abs)
	default:
		text, exists, err = e.userText(nil, c.source())
	}
	if err != nil {
		return
	}
	pl := e.place(c, text, exists)
	describe(c, v.Hunks, pl, func(h Hunk) bool { return h.Status == StatusPending })
	if written(c.Status) && c.OldAbs == "" && !e.holds(c, v.Hunks, text, exists) {
		v.Status = StatusStale
		v.Reason = fmt.Sprintf("%s no longer holds this change: it was reset or edited since the change was written", c.Path)
	}
	switch {
	case written(c.Status) && pl.rev != nil:
		v.Diff = unifiedDiff(c.Path, pl.rev.Render(nil), text)
	case !written(c.Status) && pl.fwd != nil && pl.fwd.Conflict == nil && allPlaced(pl.fwd):
		// A hunk that no longer matches would be missing from the
		// placed diff; the diff as stated keeps every hunk in view.
		v.Diff = pl.fwd.Diff(nil)
	}
}

// allPlaced reports whether every hunk of f matched the text.
func allPlaced(f *diffapply.File) bool {
	for _, h := range f.Hunks {
		if !h.OK() {
			return false
		}
	}
	return true
}
