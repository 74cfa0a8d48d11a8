package diffapply

import (
	"fmt"
	"slices"
	"sort"
)

// Level says how a hunk was located; see the ladder in the package doc.
type Level string

// The matching ladder, strictest first.
const (
	LevelExact      Level = "exact"      // byte-exact (line terminators aside) at the stated line
	LevelOffset     Level = "offset"     // byte-exact, at one other place in the file
	LevelUnique     Level = "unique"     // byte-exact, the only place in the file (hunk had no line numbers)
	LevelWhitespace Level = "whitespace" // equal after folding runs of blanks and trailing blanks
	LevelFuzz       Level = "fuzz"       // whitespace-insensitive with up to 2 context lines dropped at each end
)

// step is one rung of the ladder.
type step struct {
	anywhere bool // search the whole file, not only the stated line
	ws       bool // whitespace-insensitive compare
	fuzz     int  // context lines that may be dropped at each end
}

// minFuzzBlock is the fewest old lines a hunk may keep after fuzz drops
// context: a unique match of fewer lines is too weak to trust.
const minFuzzBlock = 3

// rungs returns the ladder, strictest first; strict stops after the
// byte-exact rungs.
func rungs(strict bool) []step {
	if strict {
		return []step{{}, {anywhere: true}}
	}
	return []step{{}, {anywhere: true}, {anywhere: true, ws: true}, {anywhere: true, ws: true, fuzz: 1}, {anywhere: true, ws: true, fuzz: 2}}
}

// matcher locates the hunks of one file in its pre-image.
type matcher struct {
	l      lines
	norm   []string // normWS of every line, built on first use
	exact  map[string][]int
	wsIdx  map[string][]int
	claims []span // in the order the hunks claimed them (whyNot names the first in its way)
	// byStart is claims by start line: they never overlap, so their ends
	// are in order too, and fits finds the one a block could overlap by
	// binary search, not by looking at every claim (a file with thousands
	// of hunks made that quadratic).
	byStart []span
}

type span struct{ start, end int }

// job is one hunk being located.
type job struct {
	h           *hunk
	old         []string // context and '-' lines
	lead, trail int      // context lines before the first and after the last change
	pub         *Hunk
	place       placement
	done        bool
}

// placement is where a hunk goes: its (trimmed) old block starts at line
// index at of the pre-image.
type placement struct {
	at         int
	trimFront  int
	trimBack   int
	blockLen   int
	reachesEOF bool
}

// makeJob makes the job of h, its old lines appended to old (room for
// h.oldCount of them, which the hunk's check made its number of old
// lines): the caller allocates the jobs and their old lines of a file
// together.
func makeJob(h *hunk, pub *Hunk, old []string) job {
	j := job{h: h, pub: pub, old: old}
	first, last := -1, -1
	for i, l := range h.lines {
		if l.op != ' ' {
			if first < 0 {
				first = i
			}
			last = i
		}
		if l.op != '+' {
			j.old = append(j.old, l.text)
		}
	}
	if first < 0 {
		j.lead = len(h.lines)
		return j
	}
	j.lead, j.trail = first, len(h.lines)-1-last
	return j
}

// locate runs the ladder over all hunks of a file, level by level, so that
// a hunk that fits exactly where it says claims its lines before another
// hunk searches the file.
func (m *matcher) locate(jobs []*job, strict bool) {
	if m.claims == nil {
		m.claims = make([]span, 0, len(jobs)) // one claim per hunk, mostly
		m.byStart = make([]span, 0, len(jobs))
	}
	for _, st := range rungs(strict) {
		for _, j := range jobs {
			if !j.done {
				m.try(j, st)
			}
		}
	}
	for _, j := range jobs {
		if !j.done {
			j.pub.Conflict = m.nearest(j, strict)
			j.done = true
		}
	}
}

func (m *matcher) try(j *job, st step) {
	h := j.h
	tf, tb := 0, 0
	if st.fuzz > 0 {
		tf, tb = min(st.fuzz, j.lead), min(st.fuzz, j.trail)
		if tf == 0 && tb == 0 || len(j.old)-tf-tb < minFuzzBlock {
			return // nothing to drop, or too little would be left to match
		}
		if st.fuzz > 1 && tf < st.fuzz && tb < st.fuzz {
			return // the same trim as the previous rung
		}
	}
	block := j.old[tf : len(j.old)-tb]
	stated := -1
	if h.numbered {
		stated = h.oldStart - 1
		if h.oldCount == 0 {
			stated = h.oldStart // "-N,0" inserts after line N
		}
		stated += tf
	}
	ok := func(at int) bool {
		return m.fits(j, block, at, tb, st)
	}
	if len(block) == 0 {
		m.tryInsert(j)
		return
	}
	if stated >= 0 && ok(stated) {
		m.found(j, st, stated, tf, tb, len(block), stated)
		return
	}
	if !st.anywhere {
		return
	}
	cands := m.candidates(block, st.ws, ok)
	// Away from the stated line a match must be unique: two places that
	// fit equally well are a conflict, however near one of them is (line
	// numbers from agents are hints, not anchors). Candidates are listed
	// nearest first.
	sort.Slice(cands, func(a, b int) bool { return dist(cands[a], stated) < dist(cands[b], stated) })
	switch {
	case len(cands) == 1:
		m.found(j, st, cands[0], tf, tb, len(block), stated)
	case len(cands) > 1:
		j.pub.Conflict = &Conflict{
			Reason:     fmt.Sprintf("ambiguous: matches %s in %d places", describeStep(st), len(cands)),
			NearLine:   cands[0] + 1 - tf,
			Candidates: lineNumbers(cands, tf),
		}
		j.done = true
	}
}

// tryInsert places a hunk with no old lines at all: only its line number
// can say where, so only a numbered hunk (or any hunk on an empty file)
// is placed.
func (m *matcher) tryInsert(j *job) {
	// Without a single old line nothing verifies the place: only an empty
	// file is safe (git, too, refuses -U0 insertions without
	// --unidiff-zero), and there the place is line 0 whatever the header
	// says.
	if m.l.len() != 0 {
		return
	}
	m.found(j, step{}, 0, 0, 0, 0, 0)
}

func (m *matcher) found(j *job, st step, at, tf, tb, blen, stated int) {
	j.place = placement{at: at, trimFront: tf, trimBack: tb, blockLen: blen, reachesEOF: at+blen == m.l.len() && tb == 0}
	m.claims = append(m.claims, span{at, at + blen})
	k, _ := slices.BinarySearchFunc(m.byStart, at, func(c span, at int) int { return c.start - at })
	m.byStart = slices.Insert(m.byStart, k, span{at, at + blen})
	p := j.pub
	p.Line = at + 1 - tf
	p.Fuzz = max(tf, tb)
	if j.h.numbered {
		p.Offset = at - tf - (j.h.oldStart - 1)
		if j.h.oldCount == 0 {
			p.Offset = at - j.h.oldStart
			p.Line = at // the line after which the lines are inserted
		}
	}
	switch {
	case st.fuzz > 0:
		p.Level = LevelFuzz
	case st.ws:
		p.Level = LevelWhitespace
	case at == stated:
		p.Level = LevelExact
	case j.h.numbered:
		p.Level = LevelOffset
	default:
		p.Level = LevelUnique
	}
	j.done = true
}

// claimed reports whether a claim overlaps the lines [at, end): the first
// claim that ends after at, if it starts before end.
func (m *matcher) claimed(at, end int) bool {
	k := sort.Search(len(m.byStart), func(k int) bool { return m.byStart[k].end > at })
	return k < len(m.byStart) && m.byStart[k].start < end
}

// fits reports whether block matches the pre-image at line index at,
// respecting claims, anchors and, for exact steps, the final newline.
func (m *matcher) fits(j *job, block []string, at, tb int, st step) bool {
	ws := st.ws
	n := m.l.len()
	end := at + len(block)
	if at < 0 || end > n {
		return false
	}
	if m.claimed(at, end) {
		return false
	}
	h := j.h
	// git's anchoring (t4113) holds on the full-context rungs; like git -C,
	// the fuzz rungs, which reduce context, drop it.
	if h.numbered && st.fuzz == 0 {
		if j.trail == 0 && j.lead > 0 && end != n {
			return false // no trailing context: the hunk ends the file
		}
		if j.lead == 0 && j.trail > 0 && h.oldStart <= 1 && at != 0 {
			return false // no leading context at line 1: the hunk starts the file
		}
	}
	if h.oldNoNL && tb == 0 && end != n {
		return false
	}
	if !ws && tb == 0 && end == n && (h.oldNoNL || h.newNoNL) && m.l.noFinalNewline() != h.oldNoNL {
		return false // the diff's marker disagrees with the file's last line
	}
	if ws {
		m.buildNorm()
		for i, b := range block {
			if m.norm[at+i] != normWS(b) {
				return false
			}
		}
		return true
	}
	for i, b := range block {
		if m.l.text[at+i] != b {
			return false
		}
	}
	return true
}

func (m *matcher) buildNorm() {
	if m.norm != nil {
		return
	}
	m.norm = make([]string, len(m.l.text))
	for i, t := range m.l.text {
		m.norm[i] = normWS(t)
	}
}

func (m *matcher) index(ws bool) map[string][]int {
	if ws {
		if m.wsIdx == nil {
			m.buildNorm()
			m.wsIdx = make(map[string][]int, len(m.norm))
			for i, t := range m.norm {
				m.wsIdx[t] = append(m.wsIdx[t], i)
			}
		}
		return m.wsIdx
	}
	if m.exact == nil {
		m.exact = make(map[string][]int, len(m.l.text))
		for i, t := range m.l.text {
			m.exact[t] = append(m.exact[t], i)
		}
	}
	return m.exact
}

// candidates returns every start index where block fits, found through
// the block's rarest line.
func (m *matcher) candidates(block []string, ws bool, ok func(int) bool) []int {
	idx := m.index(ws)
	key := func(s string) string {
		if ws {
			return normWS(s)
		}
		return s
	}
	best, bestN := 0, -1
	for k, b := range block {
		n := len(idx[key(b)])
		if n == 0 {
			return nil
		}
		if bestN < 0 || n < bestN {
			best, bestN = k, n
		}
	}
	var out []int
	for _, p := range idx[key(block[best])] {
		if at := p - best; ok(at) {
			out = append(out, at)
		}
	}
	return out
}

// nearest explains why a hunk found no place: the position where most of
// its old lines match (whitespace-insensitive), and the first difference.
func (m *matcher) nearest(j *job, strict bool) *Conflict {
	c := &Conflict{Reason: "no match"}
	if strict {
		c.Reason = "no exact match (--strict)"
	}
	if len(j.old) == 0 {
		c.Reason = "the hunk only adds lines and has no context to check where they go; regenerate the diff with context lines (diff -U3)"
		return c
	}
	m.buildNorm()
	idx := m.index(true)
	votes := map[int]int{}
	for k, b := range j.old {
		ps := idx[normWS(b)]
		if len(ps) > 1000 {
			ps = ps[:1000]
		}
		for _, p := range ps {
			votes[p-k]++
		}
	}
	stated := -1
	if j.h.numbered {
		stated = j.h.oldStart - 1
	}
	// Most votes wins; a tie goes to the place nearer the stated line, then
	// to the earlier one, so the message does not depend on map order. A
	// best place may be negative (the hunk would start before line 1).
	found, best, bestV := false, 0, 0
	for at, v := range votes {
		if !found || v > bestV || v == bestV && nearer(at, best, stated) {
			found, best, bestV = true, at, v
		}
	}
	if !found {
		c.Reason += ": none of the hunk's old lines occur in the file"
		return c
	}
	c.NearLine = best + 1
	c.NearMatched, c.NearTotal = bestV, len(j.old)
lines:
	for k, b := range j.old {
		i := best + k
		switch {
		case i < 0:
			c.Detail = fmt.Sprintf("the hunk would start before line 1 (expects %q)", b)
		case i >= m.l.len():
			c.Detail = fmt.Sprintf("the file ends before the hunk does (expects %q at line %d)", b, i+1)
		case m.l.text[i] != b:
			c.Detail = fmt.Sprintf("line %d: file has %q, hunk expects %q", i+1, m.l.text[i], b)
		default:
			continue
		}
		break lines
	}
	if c.Detail == "" {
		c.Detail = m.whyNot(j, best)
	}
	if bestV < len(j.old) {
		if at, ok := m.alreadyApplied(j); ok {
			c.Detail += fmt.Sprintf("; the hunk's new text is already at line %d: was the diff applied already?", at+1)
		}
	}
	return c
}

// nearer reports whether a is nearer than b to the stated line (the
// earlier one when they are as near).
func nearer(a, b, stated int) bool {
	if da, db := dist(a, stated), dist(b, stated); da != db {
		return da < db
	}
	return a < b
}

func dist(a, b int) int {
	if b < 0 {
		return a
	}
	if a > b {
		return a - b
	}
	return b - a
}

func lineNumbers(at []int, tf int) []int {
	out := make([]int, len(at))
	for i, a := range at {
		out[i] = a + 1 - tf
	}
	return out
}

func describeStep(st step) string {
	switch {
	case st.fuzz > 0:
		return fmt.Sprintf("with fuzz %d", st.fuzz)
	case st.ws:
		return "whitespace-insensitively"
	}
	return "exactly"
}

// whyNot explains why a position where all old lines match was refused.
func (m *matcher) whyNot(j *job, at int) string {
	end := at + len(j.old)
	for _, c := range m.claims {
		if at < c.end && c.start < end {
			return fmt.Sprintf("the text is at line %d, but another hunk already changes lines %d-%d", at+1, c.start+1, c.end)
		}
	}
	h := j.h
	switch {
	case h.numbered && j.trail == 0 && j.lead > 0 && end != m.l.len():
		return fmt.Sprintf("the text is at line %d, but the hunk has no trailing context, so it must end the file (line %d is not the last)", at+1, end)
	case h.numbered && j.lead == 0 && j.trail > 0 && h.oldStart <= 1 && at != 0:
		return fmt.Sprintf("the text is at line %d, but the hunk says line 1 and has no leading context, so it must start the file", at+1)
	case h.oldNoNL && end != m.l.len():
		return fmt.Sprintf("the text is at line %d, but the diff says its last line ends the file without a newline", at+1)
	}
	return fmt.Sprintf("the text is at line %d, but it does not fit there", at+1)
}

// alreadyApplied finds the hunk's post-image (context and added lines)
// in the file, whitespace-insensitively, at exactly one place.
func (m *matcher) alreadyApplied(j *job) (int, bool) {
	var post []string
	for _, l := range j.h.lines {
		if l.op != '-' {
			post = append(post, l.text)
		}
	}
	if len(post) == 0 {
		return 0, false
	}
	c := m.candidates(post, true, func(at int) bool {
		if at < 0 || at+len(post) > m.l.len() {
			return false
		}
		for i, p := range post {
			if m.norm[at+i] != normWS(p) {
				return false
			}
		}
		return true
	})
	if len(c) != 1 {
		return 0, false
	}
	return c[0], true
}
