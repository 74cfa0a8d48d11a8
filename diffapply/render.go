package diffapply

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// This file renders planned hunks into content and turns a Patch into
// the writes of one atomic Commit.

// selected reports whether hunk id is in ids (nil means all).
func selected(ids []int, id int) bool { return ids == nil || slices.Contains(ids, id) }

// Render returns the file's content with the chosen hunks applied (nil ids
// means all; hunks with a conflict are skipped). The result is never nil.
// Hunks are placed where Plan matched them in Before, so any subset
// renders consistently.
func (f *File) Render(ids []int) []byte { return f.render(ids) }

// placed gives the matched hunks among ids (nil: all) in the order of
// their places in Before.
func (f *File) placed(ids []int) []*job {
	ps := make([]*job, 0, len(f.jobs))
	for _, j := range f.jobs {
		if j.pub.Conflict == nil && j.done && selected(ids, j.pub.ID) {
			ps = append(ps, j)
		}
	}
	slices.SortStableFunc(ps, func(a, b *job) int { return a.place.at - b.place.at })
	return ps
}

func (f *File) render(ids []int) []byte { return f.renderInto(nil, ids) }

// renderInto is render into buf when buf has room for the result (a File
// handed back, see Release), else into a buffer of its own.
func (f *File) renderInto(buf []byte, ids []int) []byte {
	ps := f.placed(ids)
	l := f.lines
	// Built in place, the size known up front: this runs for every file
	// of every plan.
	size := len(f.Before) + len(f.conv)
	for _, j := range ps {
		for _, op := range j.h.lines {
			if op.op == '+' {
				size += len(op.text) + 2
			}
		}
	}
	out := buf[:0]
	if cap(out) < size {
		out = make([]byte, 0, size)
	}
	emit := func(text, eol string) {
		out = append(out, text...)
		out = append(out, eol...)
	}
	pos := 0
	wantFinal := 0 // 0 untouched, 1 newline, -1 none
	for _, j := range ps {
		for ; pos < j.place.at; pos++ {
			emit(l.text[pos], l.eol[pos].String())
		}
		ops := j.h.lines
		// Drop the context lines fuzz left out.
		skipF, skipB := j.place.trimFront, j.place.trimBack
		ops = ops[skipF : len(ops)-skipB]
		oi := j.place.at
		literal := l.len() == 0 || crAware(l, j.place.at, ops)
		for _, op := range ops {
			switch op.op {
			case ' ':
				emit(l.text[oi], l.eol[oi].String())
				oi++
			case '-':
				oi++
			case '+':
				emit(op.text, f.addedEOL(op, literal))
			}
		}
		pos = oi
		if j.place.reachesEOF {
			switch {
			case j.h.newNoNL:
				wantFinal = -1
			case j.h.oldNoNL:
				wantFinal = 1
			case j.h.eolPair && l.noFinalNewline():
				wantFinal = 1 // the marker was lost: the pair adds the newline
			case j.h.eolPair:
				wantFinal = -1 // ... or takes it away
			case l.noFinalNewline():
				wantFinal = -1
			default:
				wantFinal = 1
			}
		}
	}
	for ; pos < l.len(); pos++ {
		emit(l.text[pos], l.eol[pos].String())
	}
	if bytes.HasPrefix(f.Before, []byte(bom)) && !bytes.HasPrefix(out, []byte(bom)) && len(out) > 0 && !f.diffHasBOM() {
		out = append([]byte(bom), out...) // the diff rewrote line 1 without the mark it never saw
	}
	switch {
	case wantFinal < 0:
		out = bytes.TrimSuffix(bytes.TrimSuffix(out, []byte("\n")), []byte("\r"))
	case wantFinal > 0 && len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")):
		out = append(out, f.conv...) // an old-side marker with the file's own last line
	}
	return out
}

// diffHasBOM reports whether any line of the diff carries a byte-order
// mark, i.e. the diff itself says what happens to it.
func (f *File) diffHasBOM() bool {
	for _, j := range f.jobs {
		for _, l := range j.h.lines {
			if strings.Contains(l.text, bom) {
				return true
			}
		}
	}
	return false
}

// addedEOL is the ending of an added line: as the diff wrote it when the
// hunk is literal (see crAware; a new or empty file is always literal, so
// it is created byte for byte as the diff says, mixed endings included),
// else the file's convention.
func (f *File) addedEOL(op hunkLine, literal bool) string {
	switch {
	case !literal:
		return f.conv
	case op.cr:
		return "\r\n"
	}
	return "\n"
}

// crAware reports whether a hunk's old side (ops, placed at line at) carries
// the file's carriage returns exactly: every context and removed line ends
// in CR in the diff if and only if it does in the file. Such a diff is
// byte-exact (git diff of a CRLF or mixed file), so its added lines say
// which ending they get, and a "-foo\r" / "+foo" pair is a real conversion
// to LF. A diff that is not, is CR-blind (an LF diff from a model against a
// CRLF file, or a CRLF diff against an LF file): its added lines' endings
// carry no information and take the file's convention instead.
//
// Blanks after the CR are skipped on the diff's side, since the whitespace
// rungs match them anyway; a file's last line without a newline counts as
// ending in CR when its text does.
func crAware(l lines, at int, ops []hunkLine) bool {
	oi := at
	for _, op := range ops {
		if op.op == '+' {
			continue
		}
		diffCR := op.cr || endsInCR(op.text)
		fileCR := l.eol[oi] == eolCRLF || (l.eol[oi] == eolNone && strings.HasSuffix(l.text[oi], "\r"))
		if diffCR != fileCR {
			return false
		}
		oi++
	}
	return true
}

// endsInCR reports whether s ends in a carriage return before any blanks
// (spaces and tabs): strings.TrimRight(s, " \t") ends in "\r". A loop,
// not TrimRight, which builds its set of characters on every call: this
// runs for every old line of every hunk rendered.
func endsInCR(s string) bool {
	i := len(s)
	for i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
		i--
	}
	return i > 0 && s[i-1] == '\r'
}

// Writes returns the writes that apply the chosen hunks (nil ids means
// every hunk), each guarded by the pre-image hash. It fails with a
// *ConflictError when a chosen hunk (or its file) has a conflict. A file
// none of whose hunks is chosen is left out, unless it has no hunks
// (a pure rename, mode change, or empty create/delete).
func (p *Patch) Writes(ids []int) ([]Write, error) {
	var out []Write
	var bad []*Hunk
	for _, f := range p.Files {
		ws, conflicts, err := f.writes(p.Root, ids)
		if err != nil {
			return nil, err
		}
		out = append(out, ws...)
		bad = append(bad, conflicts...)
	}
	if len(bad) > 0 {
		return nil, &ConflictError{Hunks: bad}
	}
	return out, nil
}

// Writes is Patch.Writes for one file, for a plan streamed with
// PlanFiles, which keeps no Patch of the files: the file's writes, its
// chosen hunks that conflict (Patch.Writes reports those of every file
// together, as a *ConflictError, after the files' other refusals), or
// the refusal of the file (a conflict of the whole file, a deletion
// chosen in part).
func (f *File) Writes(ids []int) (writes []Write, conflicts []*Hunk, err error) {
	return f.writes(f.root, ids)
}

func (f *File) writes(root string, ids []int) ([]Write, []*Hunk, error) {
	var chosen []int
	var bad []*Hunk
	for _, h := range f.Hunks {
		if selected(ids, h.ID) {
			chosen = append(chosen, h.ID)
			if !h.OK() {
				bad = append(bad, h)
			}
		}
	}
	if len(chosen) == 0 && (len(f.Hunks) > 0 || ids != nil) {
		return nil, bad, nil
	}
	if f.Conflict != nil && len(f.Hunks) == 0 {
		return nil, bad, conflictf("%s", f.Conflict) // its reason names the file
	}
	if f.Op == OpDelete {
		if len(chosen) != len(f.Hunks) {
			return nil, bad, conflictf("the diff deletes %s whole, so its hunks cannot be applied in part: choose all of them", f.Path)
		}
		return []Write{{Path: f.Path, ExpectHash: f.BeforeHash}}, bad, nil
	}
	content := f.After // every hunk: what Plan rendered
	if ids != nil {
		content = f.Render(chosen)
	}
	if f.Op == OpModify && f.Mode == 0 && string(content) == string(f.Before) {
		return nil, bad, nil
	}
	w := Write{Path: f.Path, Content: content, Mode: f.Mode, ExpectHash: f.BeforeHash}
	switch f.Op {
	case OpRename, OpCopy:
		w.ExpectHash = HashAbsent
		if f.Mode == 0 {
			w.Mode = modeOf(root, f.OldPath)
		}
		if f.Op == OpRename {
			return []Write{w, {Path: f.OldPath, ExpectHash: f.BeforeHash}}, bad, nil
		}
	}
	return []Write{w}, bad, nil
}

func modeOf(root, rel string) fs.FileMode {
	ws, err := newWorkspace(root)
	if err != nil {
		return 0
	}
	defer ws.Close()
	abs, err := ws.resolve(rel)
	if err != nil {
		return 0
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return 0
	}
	return fi.Mode().Perm()
}

// Apply writes the chosen hunks (nil ids means all) atomically, as Commit
// does, with its journal in journalDir ("" for none). Nothing is written
// if a chosen hunk conflicts or a file changed since Plan. Hunks that
// change nothing (their old and new lines are the same) apply, as with git
// apply: Apply then writes nothing and returns nil, so that a real apply
// agrees with a check of the same diff (Patch.Unchanged tells it).
func (p *Patch) Apply(ctx context.Context, ids []int, journalDir string) error {
	ws, err := p.Writes(ids)
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		return nil
	}
	w, err := OpenWorkspace(p.Root, p.protect...)
	if err != nil {
		return fmt.Errorf("workspace root: %w", err)
	}
	defer w.Close()
	return w.Commit(ctx, ws, journalDir)
}

// Unchanged reports whether the chosen hunks (nil: all) apply and change
// no file: applying them writes nothing.
func (p *Patch) Unchanged(ids []int) bool {
	ws, err := p.Writes(ids)
	return err == nil && len(ws) == 0
}

func joinInts(xs []int, max int) string {
	var parts []string
	for i, x := range xs {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(xs)-max))
			break
		}
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}
