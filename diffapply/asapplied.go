package diffapply

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	udiff "github.com/aymanbagabas/go-udiff"
)

// AppliedDiff is the as-applied diff of the chosen hunks (nil ids means
// all) for a caller that records it (smith apply hands it to the engine):
// a diff that takes Before to Render(ids), with the file's real context
// lines, like Diff. It differs from Diff only in how it is made: when it
// can, it writes the diff straight from the plan, which knows which lines
// each hunk replaced, instead of diffing the whole file again with
// go-udiff (most of the CPU of smith apply on a large diff); else it is
// Diff. The two can differ in text (where go-udiff aligns a changed run
// differently, or numbers a merged hunk's new side wrongly), never in what
// they do to Before.
func (f *File) AppliedDiff(ids []int) string {
	d, _, _ := f.AppliedPlan(ids, false)
	return d
}

// AppliedPlan is AppliedDiff and, with withPlan, what a caller that
// records the diff as the change needs to know of it:
//
//   - plan, when not nil, is the File that Plan of the diff against
//     Before gives (Path is f's, ID 1, hunk IDs 1 to n), so that the
//     caller need not plan it again. For a modification of an existing
//     file, a creation or a whole deletion whose diff was written from the
//     plan without "\ No newline at end of file" and without a carriage
//     return other than a CRLF line end, it is built from the plan (the
//     same hunks, headers, bodies and matches, each exact at the line it
//     states); otherwise it is planned.
//   - ok is false when planning the diff against Before does not give
//     Render(ids): a text with carriage returns a unified diff does not
//     carry (a lone CR ending a file, or a line's text) can make go-udiff's
//     diff say something else than the plan, and a caller that recorded it
//     would write that. Without withPlan, ok is always true (not checked).
func (f *File) AppliedPlan(ids []int, withPlan bool) (diff string, plan *File, ok bool) {
	oldLabel, newLabel, after := f.diffSides(ids)
	if bytes.Equal(f.Before, after) {
		return "", nil, true
	}
	edits, off, ps, fast := f.appliedEdits(ids, after)
	var hunks []writtenHunk
	if fast {
		diff, hunks = writeUnified(oldLabel, newLabel, f.Before, off, edits)
	} else {
		diff = udiff.Unified(oldLabel, newLabel, string(f.Before), string(after))
	}
	if !withPlan {
		return diff, nil, true
	}
	if fast {
		if g := f.appliedFile(oldLabel, newLabel, diff, hunks, edits, after, ps); g != nil {
			return diff, g, true
		}
	}
	g := f.planApplied(diff)
	if g == nil || g.Conflict != nil || !allOK(g) || !bytes.Equal(g.After, after) {
		return diff, nil, false
	}
	return diff, g, true
}

// CheckedDiff is Diff (go-udiff's diff of the whole file, whose hunks are
// coarser than AppliedDiff's on a large file) and, as AppliedPlan's ok,
// whether planning it against Before gives Render(ids). Only a carriage
// return can make a unified diff say something else than the plan (a
// lone CR ending a file, or in a line's text: see AppliedPlan), so the
// diff is planned to check it only when Before or the result holds one.
func (f *File) CheckedDiff(ids []int) (diff string, ok bool) {
	oldLabel, newLabel, after := f.diffSides(ids)
	diff = udiff.Unified(oldLabel, newLabel, string(f.Before), string(after))
	if diff == "" || bytes.IndexByte(f.Before, '\r') < 0 && bytes.IndexByte(after, '\r') < 0 {
		return diff, true
	}
	g := f.planApplied(diff)
	return diff, g != nil && g.Conflict == nil && allOK(g) && bytes.Equal(g.After, after)
}

// planApplied plans d, an as-applied diff of f, against f's text before,
// as the engine plans a change (its one file named by f's source path);
// nil when it cannot.
func (f *File) planApplied(d string) *File {
	src := f.Path
	if f.OldPath != "" {
		src = f.OldPath
	}
	p, err := Plan(f.root, []byte(d), Options{Target: src, ReadFile: func(rel string) ([]byte, bool, error) {
		if rel != src {
			return nil, false, fmt.Errorf("the diff of %s names %s", src, rel)
		}
		return f.Before, f.Existed, nil
	}})
	if err != nil || len(p.Files) != 1 {
		return nil
	}
	return p.Files[0]
}

// diffSides returns the labels and the text after of the as-applied diff
// of ids (Diff).
func (f *File) diffSides(ids []int) (oldLabel, newLabel string, after []byte) {
	oldLabel, newLabel = "a/"+f.Path, "b/"+f.Path
	if f.OldPath != "" {
		oldLabel = "a/" + f.OldPath
	}
	if ids == nil && f.Op != OpDelete {
		after = f.After // Plan rendered every hunk already
	} else {
		after = f.Render(ids)
	}
	switch f.Op {
	case OpCreate:
		oldLabel = "/dev/null"
	case OpDelete:
		if ids == nil || len(ids) == len(f.Hunks) {
			newLabel, after = "/dev/null", nil
		}
	}
	return oldLabel, newLabel, after
}

// lineEdit replaces the lines [start, end) of Before by add.
type lineEdit struct {
	start, end int
	add        []addedLine
}

// addedLine is a line an edit adds, as Render writes it.
type addedLine struct{ text, eol string }

func (a addedLine) equals(b []byte) bool {
	return len(b) == len(a.text)+len(a.eol) && string(b[:len(a.text)]) == a.text && string(b[len(a.text):]) == a.eol
}

// appliedEdits finds the as-applied diff of ids in the plan: each chosen
// hunk's runs of removed and added lines, at the place it matched, become
// line edits of Before (a line removed and added back the same at a run's
// either end is no change, as a line diff would see it). It gives up
// (false) unless the edits, applied to Before, give exactly after, which
// is what Render does and what go-udiff's diff would do; it also gives up
// on what diffapply would read differently from what it says (a run at
// the end of the file that removes a line and adds it back, which Plan
// takes for a final newline changing). It returns the edits, where
// Before's lines start (off) and the chosen hunks as placed gives them.
func (f *File) appliedEdits(ids []int, after []byte) ([]lineEdit, []int, []*job, bool) {
	ps := f.placed(ids)
	l := f.lines
	n := l.len()
	// off[i] is where line i starts in Before; off[n] is its end.
	off := make([]int, n+1)
	for i := range n {
		off[i+1] = off[i] + len(l.text[i]) + len(l.eol[i].String())
	}
	if off[n] != len(f.Before) {
		return nil, nil, nil, false
	}
	line := func(i int) []byte { return f.Before[off[i]:off[i+1]] }
	// The edits and their added lines are allocated once: about one edit
	// per hunk, the added lines no more than the hunks add.
	nadd := 0
	for _, j := range ps {
		for _, op := range j.h.lines {
			if op.op == '+' {
				nadd++
			}
		}
	}
	edits, adds := make([]lineEdit, 0, len(ps)), make([]addedLine, 0, nadd)
	flush := func(e lineEdit) {
		for e.start < e.end && len(e.add) > 0 && e.add[0].equals(line(e.start)) {
			e.start, e.add = e.start+1, e.add[1:]
		}
		for e.start < e.end && len(e.add) > 0 && e.add[len(e.add)-1].equals(line(e.end-1)) {
			e.end, e.add = e.end-1, e.add[:len(e.add)-1]
		}
		if e.start < e.end || len(e.add) > 0 {
			edits = append(edits, e)
		}
	}
	for _, j := range ps {
		ops := j.h.lines[j.place.trimFront : len(j.h.lines)-j.place.trimBack]
		oi := j.place.at
		literal := n == 0 || crAware(l, oi, ops)
		run, in := lineEdit{}, false
		for _, op := range ops {
			if op.op == ' ' {
				if in {
					run.end = oi
					flush(run)
					in = false
				}
				oi++
				continue
			}
			if !in {
				run, in = lineEdit{start: oi}, true
				run.add = adds[len(adds):] // grows into adds, whose room never runs out
			}
			switch op.op {
			case '-':
				oi++
			case '+':
				run.add = append(run.add, addedLine{op.text, f.addedEOL(op, literal)})
				if len(adds) < cap(adds) {
					adds = adds[:len(adds)+1]
				}
			}
		}
		if in {
			run.end = oi
			flush(run)
		}
	}
	if len(edits) == 0 || !editsGive(f.Before, off, edits, after) {
		return nil, nil, nil, false
	}
	if last := edits[len(edits)-1]; last.end == n && last.start < last.end && len(last.add) > 0 {
		// The diff's last hunk ends with this run: if it removes a line
		// and adds back the same text, Plan reads an end-of-file pair.
		if strings.TrimRight(string(line(last.end-1)), "\r\n") == strings.TrimRight(last.add[len(last.add)-1].text, "\r") {
			return nil, nil, nil, false
		}
	}
	return edits, off, ps, true
}

// editsGive reports whether edits, applied to before (whose lines start at
// off), give exactly after.
func editsGive(before []byte, off []int, edits []lineEdit, after []byte) bool {
	pos, prev := 0, 0
	take := func(b []byte) bool {
		if len(after)-pos < len(b) || !bytes.Equal(after[pos:pos+len(b)], b) {
			return false
		}
		pos += len(b)
		return true
	}
	for _, e := range edits {
		if e.start < prev || !take(before[off[prev]:off[e.start]]) {
			return false
		}
		for _, a := range e.add {
			if !take([]byte(a.text)) || !take([]byte(a.eol)) {
				return false
			}
		}
		prev = e.end
	}
	return take(before[off[prev]:]) && pos == len(after)
}

// udiffContext and udiffGap are go-udiff's: lines of context around a
// change, and the distance up to which two changes share a hunk.
const (
	udiffContext = udiff.DefaultContextLines
	udiffGap     = 2 * udiffContext
)

// writtenHunk is a hunk writeUnified wrote: its header's numbers, its
// edits (edits[first:last]) and where its body is in the diff.
type writtenHunk struct {
	from, oldCount, newStart, newCount int // from is 0-based
	first, last                        int
	body                               [2]int
}

// writeUnified writes edits of before (its lines start at off) as go-udiff
// writes a diff: the same labels, context, joining of hunks, short
// headers ("-N" for one line, "-0,0" for none at the start) and
// "\ No newline at end of file" markers. It numbers the new side of a
// hunk that follows joined ones by the lines before it (go-udiff v0.4.1
// forgets the context lines that joined them; diffapply reads only the
// old side's numbers).
func writeUnified(oldLabel, newLabel string, before []byte, off []int, edits []lineEdit) (string, []writtenHunk) {
	var hunks []writtenHunk
	n := len(off) - 1
	size := len(oldLabel) + len(newLabel) + 10
	for _, e := range edits {
		size += 40 + off[min(n, e.end+udiffContext)] - off[max(0, e.start-udiffContext)] + e.end - e.start
		for _, a := range e.add {
			size += 1 + len(a.text) + len(a.eol)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, "--- "...)
	b = append(b, oldLabel...)
	b = append(b, "\n+++ "...)
	b = append(b, newLabel...)
	b = append(b, '\n')
	emit := func(op byte, text []byte) {
		b = append(b, op)
		b = append(b, text...)
		if len(text) == 0 || text[len(text)-1] != '\n' {
			b = append(b, "\n\\ No newline at end of file\n"...)
		}
	}
	delta := 0 // lines added minus lines removed before the hunk
	for i := 0; i < len(edits); {
		// The edits [i, k) share a hunk.
		k := i + 1
		for k < len(edits) && edits[k].start <= edits[k-1].end+udiffGap {
			k++
		}
		from, to := max(0, edits[i].start-udiffContext), min(n, edits[k-1].end+udiffContext)
		oldCount, newCount := to-from, to-from
		for _, e := range edits[i:k] {
			newCount += len(e.add) - (e.end - e.start)
		}
		wh := writtenHunk{from: from, oldCount: oldCount, newStart: from + 1 + delta, newCount: newCount, first: i, last: k}
		b = append(b, "@@"...)
		b = appendRange(b, " -", from+1, oldCount)
		b = appendRange(b, " +", wh.newStart, newCount)
		b = append(b, " @@\n"...)
		wh.body[0] = len(b)
		at := from
		for _, e := range edits[i:k] {
			for ; at < e.start; at++ {
				emit(' ', before[off[at]:off[at+1]])
			}
			for ; at < e.end; at++ {
				emit('-', before[off[at]:off[at+1]])
			}
			for _, a := range e.add {
				b = append(b, '+')
				b = append(b, a.text...)
				b = append(b, a.eol...)
				if a.eol == "" {
					b = append(b, "\n\\ No newline at end of file\n"...)
				}
			}
			delta += len(e.add) - (e.end - e.start)
		}
		for ; at < to; at++ {
			emit(' ', before[off[at]:off[at+1]])
		}
		wh.body[1] = len(b)
		hunks = append(hunks, wh)
		i = k
	}
	if cap(b)-len(b) > len(b)/8 {
		b = bytes.Clone(b) // the estimate was generous: the caller may keep it long
	}
	// b is not written again: the string is its bytes, not a copy.
	return unsafe.String(unsafe.SliceData(b), len(b)), hunks
}

// statedStart is the start line a header written by appendRange states
// ("-0,0" for no line at the start).
func statedStart(start, count int) int {
	if start == 1 && count == 0 {
		return 0
	}
	return start
}

// appendRange appends one side of a hunk header as go-udiff writes it:
// "-start,count", "-start" for one line, "-0,0" for none at the start.
func appendRange(b []byte, side string, start, count int) []byte {
	switch {
	case count > 1:
		b = append(b, side...)
		b = strconv.AppendInt(b, int64(start), 10)
		b = append(b, ',')
		return strconv.AppendInt(b, int64(count), 10)
	case start == 1 && count == 0:
		return append(b, side+"0,0"...)
	}
	b = append(b, side...)
	return strconv.AppendInt(b, int64(start), 10)
}

// appliedFile builds the File that Plan of d (written by writeUnified as
// hunks, from edits) against f.Before gives, as AppliedPlan says; nil
// when d is not one AppliedPlan builds it for, or when the result is not
// every hunk matched exactly where it says, rendering after. ps are the
// chosen hunks of f, as placed gives them.
//
// A written hunk is most often one of f's own, unchanged (a hunk with its
// context as git writes it, matched exactly where it says): the File then
// shares that hunk's parsed lines rather than building them again, and
// when it shares every chosen hunk of f, placed where f placed them, it
// renders what f renders for them (the same lines of the same text: after)
// and is not rendered again to check it.
func (f *File) appliedFile(oldLabel, newLabel, d string, hunks []writtenHunk, edits []lineEdit, after []byte, ps []*job) *File {
	if f.OldPath != "" || f.SetsMode() || f.Conflict != nil {
		return nil
	}
	// What Plan reads the diff's names as: a creation from /dev/null, a
	// deletion to it (diffSides writes those for a creation, and for a
	// deletion of all its hunks), else a modification.
	op := OpModify
	switch {
	case oldLabel == "/dev/null" && f.Op == OpCreate:
		op = OpCreate
	case newLabel == "/dev/null" && f.Op == OpDelete && f.Existed:
		op = OpDelete
	case f.Op != OpModify || !f.Existed:
		return nil
	}
	l := f.lines
	plain := func(text string, e eol) bool { // what the parser reads back as it is
		return e != eolNone && !strings.HasSuffix(text, "\r")
	}
	// walk hands emit the lines of the written hunk wh, as the parser
	// reads them back; false when one is not read back as it is, or emit
	// refuses it. canonical tells whether the hunk's body in d is in the
	// form Hunk.Body prints.
	walk := func(wh writtenHunk, emit func(hunkLine) bool) (canonical, ok bool) {
		canonical = true
		old := func(op byte, at int) bool {
			if !plain(l.text[at], l.eol[at]) {
				return false
			}
			cr := l.eol[at] == eolCRLF
			canonical = canonical && !cr
			return emit(hunkLine{text: l.text[at], op: op, cr: cr})
		}
		at := wh.from
		for _, e := range edits[wh.first:wh.last] {
			for ; at < e.start; at++ {
				if !old(' ', at) {
					return false, false
				}
			}
			for ; at < e.end; at++ {
				if !old('-', at) {
					return false, false
				}
			}
			for _, a := range e.add {
				if a.eol == "" || strings.HasSuffix(a.text, "\r") {
					return false, false
				}
				cr := a.eol == "\r\n"
				canonical = canonical && !cr
				if !emit(hunkLine{text: a.text, op: '+', cr: cr}) {
					return false, false
				}
			}
		}
		for ; at < wh.from+wh.oldCount; at++ {
			if !old(' ', at) {
				return false, false
			}
		}
		return canonical, true
	}
	g := &File{ID: 1, Path: f.Path, Op: op, Existed: f.Existed, BeforeHash: f.BeforeHash, Before: f.Before, lines: l, conv: f.conv, root: f.root}
	shared := len(hunks) == len(ps)
	// The File's hunks and jobs, allocated once.
	pubs, jobs := make([]Hunk, len(hunks)), make([]job, len(hunks))
	g.Hunks, g.jobs = make([]*Hunk, 0, len(hunks)), make([]*job, 0, len(hunks))
	for i, wh := range hunks {
		oldStart, newStart := statedStart(wh.from+1, wh.oldCount), statedStart(wh.newStart, wh.newCount)
		if shared {
			j := ps[i]
			h := j.h
			shared = j.place == placement{at: wh.from, blockLen: wh.oldCount, reachesEOF: j.place.reachesEOF} &&
				h.numbered && h.section == "" && !h.eolPair && !h.oldNoNL && !h.newNoNL &&
				h.oldStart == oldStart && h.oldCount == wh.oldCount && h.newStart == newStart && h.newCount == wh.newCount
			if shared {
				k := 0
				_, ok := walk(wh, func(hl hunkLine) bool {
					if k == len(h.lines) || h.lines[k] != hl {
						return false
					}
					k++
					return true
				})
				shared = ok && k == len(h.lines)
			}
			if shared {
				// f's hunk is the one Plan of d reads: its lines, header
				// and body as they are.
				pubs[i] = Hunk{
					ID: i + 1, Index: i + 1, File: g, Header: j.pub.Header, Numbered: true,
					OldStart: h.oldStart, OldLines: h.oldCount, NewStart: h.newStart, NewLines: h.newCount,
					Body: j.pub.Body,
				}
				jobs[i] = job{h: h, old: j.old, lead: j.lead, trail: j.trail, pub: &pubs[i]}
				g.Hunks, g.jobs = append(g.Hunks, &pubs[i]), append(g.jobs, &jobs[i])
				continue
			}
		}
		h := &hunk{
			oldStart: oldStart, oldCount: wh.oldCount,
			newStart: newStart, newCount: wh.newCount,
			numbered: true, lines: make([]hunkLine, 0, wh.oldCount+countAdds(edits[wh.first:wh.last])),
		}
		canonical, ok := walk(wh, func(hl hunkLine) bool {
			h.lines = append(h.lines, hl)
			return true
		})
		if !ok {
			return nil
		}
		if canonical {
			h.body = d[wh.body[0]:wh.body[1]]
		}
		pubs[i] = Hunk{
			ID: i + 1, Index: i + 1, File: g, Header: headerOf(h), Numbered: true,
			OldStart: h.oldStart, OldLines: h.oldCount, NewStart: h.newStart, NewLines: h.newCount,
			Body: bodyOf(h),
		}
		jobs[i] = makeJob(h, &pubs[i], make([]string, 0, h.oldCount))
		g.Hunks, g.jobs = append(g.Hunks, &pubs[i]), append(g.jobs, &jobs[i])
	}
	m := &matcher{l: l}
	m.locate(g.jobs, false)
	for i, h := range g.Hunks {
		if !h.OK() || h.Level != LevelExact || h.Offset != 0 {
			return nil
		}
		shared = shared && g.jobs[i].place == ps[i].place
	}
	// Rendering reads the jobs' hunks and places, the lines, the line-end
	// convention and, when the text starts with a byte-order mark, whether
	// any of the File's hunks carries one: shared, all but that last.
	if !shared || bytes.HasPrefix(f.Before, []byte(bom)) {
		if !bytes.Equal(g.render(nil), after) {
			return nil
		}
	}
	g.After = after // nil for a deletion, as Plan leaves it
	return g
}

func countAdds(edits []lineEdit) int {
	n := 0
	for _, e := range edits {
		n += len(e.add)
	}
	return n
}
