package diffapply

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"
)

// This file finds the structure of a diff before go-diff parses it: which
// lines are file headers, hunk headers and hunk bodies, and what is prose
// around them. go-diff then parses each file header and each hunk on its
// own. Scanning first is what lets us repair what go-diff cannot:
//   - bodies not bounded by their @@ counts (go-diff D1), recounted here;
//   - @@ headers without numbers (go-diff drops a bare "@@" silently, D2);
//   - a removed "--- x" line followed by an added "+++ y" line, which
//     go-diff takes for a new file header (D9);
//   - prose and Markdown fences around the diff (D7);
//   - AgentSmithy's difflib output with a blank line after every body line
//     and no "\ No newline" markers (reference/agentsmithy.md section 6).

// rawFile is one file's section of a diff, not yet parsed.
type rawFile struct {
	header []string // "diff --git", extended headers, "---", "+++"
	hunks  []*rawHunk
	line   int // 1-based line of the section's first line in the diff
	// off is the byte offset of the section's first line in the text
	// scanned. A streamed plan (stream.go) keeps the sections of a big
	// diff as byte ranges (off, end) and hunk counts only, and scans each
	// section again when it plans that file; then hunks is nil.
	off, end int64
	nhunks   int
}

// rawHunk is one hunk as scanned, with its body repaired and recounted.
type rawHunk struct {
	headerLine  string
	numbered    bool
	oldStart    int
	newStart    int
	oldCount    int // from the header; -1 without numbers
	newCount    int
	section     string
	body        []string // body lines without "\n"; markers as "\ ..."
	line        int
	cutBy       string // the non-diff line that ended the body early, if any
	cutLine     int    // its line in the diff
	cutThenBody bool   // the line after it is a context or added line
}

const noNewlineMarker = `\ No newline at end of file`

// hunkRange is what a numbered hunk header says.
type hunkRange struct {
	oldStart, oldCount int
	newStart, newCount int
	section            string
}

// parseHunkHeader reads "@@ -a[,b] +c[,d] @@[ section]": one or more '@'
// on either side, a missing count meaning 1, at most one space dropped
// before the section. It is the grammar of the regular expression
//
//	^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+ ?(.*)$
//
// parsed by hand, because a regexp match per hunk cost more than the
// rest of our scan (scan_test.go checks the two agree). A number too big
// for an int is clamped, as strconv.Atoi does.
func parseHunkHeader(l string) (hunkRange, bool) {
	var r hunkRange
	rest, ok := skipAts(l)
	if !ok || !strings.HasPrefix(rest, " -") {
		return hunkRange{}, false
	}
	if r.oldStart, r.oldCount, rest, ok = parseRange(rest[2:]); !ok || !strings.HasPrefix(rest, " +") {
		return hunkRange{}, false
	}
	if r.newStart, r.newCount, rest, ok = parseRange(rest[2:]); !ok || !strings.HasPrefix(rest, " ") {
		return hunkRange{}, false
	}
	if rest, ok = skipAts(rest[1:]); !ok || strings.Contains(rest, "\n") {
		return hunkRange{}, false // scan's lines never hold a "\n"; the grammar refuses one
	}
	r.section = strings.TrimPrefix(rest, " ")
	return r, true
}

// skipAts drops a leading run of two or more '@'.
func skipAts(s string) (string, bool) {
	n := 0
	for n < len(s) && s[n] == '@' {
		n++
	}
	return s[n:], n >= 2
}

// parseRange reads "start[,count]"; count defaults to 1.
func parseRange(s string) (start, count int, rest string, ok bool) {
	start, rest, ok = leadingInt(s)
	if !ok {
		return 0, 0, s, false
	}
	count = 1
	if strings.HasPrefix(rest, ",") {
		if count, rest, ok = leadingInt(rest[1:]); !ok {
			return 0, 0, s, false
		}
	}
	return start, count, rest, true
}

// leadingInt reads the ASCII digits at the start of s.
func leadingInt(s string) (int, string, bool) {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 {
		return 0, s, false
	}
	v, _ := strconv.Atoi(s[:n]) // clamped on overflow
	return v, s[n:], true
}

// scanned is the result of scan.
type scanned struct {
	files   []*rawFile
	repairs []string
}

// scan splits a diff into file sections and hunks. It never fails on
// prose; it fails only when nothing diff-like is found.
func scan(diff []byte) (*scanned, error) {
	piece := len(diff) + 1 // one piece
	if len(diff) >= parallelMin {
		piece = scanPiece
	}
	return scanPieces(diff, piece)
}

// scanPieces is scan with the text cut into pieces of about piece bytes.
func scanPieces(diff []byte, piece int) (*scanned, error) {
	// The scanned lines are views of the caller's diff, not a copy of it
	// (a copy of a 1 MB diff was a tenth of a plan's sequential time).
	// That is safe because nothing scanned outlives Plan: what reaches a
	// Patch or an error is copied by go-diff (it parses from buffers we
	// build) or by fmt. TestPatchDoesNotAliasDiff overwrites the diff
	// after Plan to hold us to that.
	return scanText(unsafe.String(unsafe.SliceData(diff), len(diff)), piece)
}

// scanText is scanPieces on a string.
func scanText(text string, piece int) (*scanned, error) {
	sc := &scanned{}
	if hasLineWithPrefix(text, "*** Begin Patch") {
		return nil, &ParseError{Line: 1, Msg: "this is an apply_patch envelope (*** Begin Patch), not a unified diff"}
	}
	var lineMap []int
	text, lineMap = unfence(text)
	// lineNo maps a line index of the text we scan to its 1-based line in
	// the input, so that errors point into what the user has.
	lineNo := func(i int) int {
		if lineMap != nil && i < len(lineMap) {
			return lineMap[i]
		}
		return i + 1
	}
	if lineMap != nil {
		sc.repairs = append(sc.repairs, "took the diff out of its Markdown fence")
	}
	endsNL := strings.HasSuffix(text, "\n")
	// A big diff is scanned in pieces on all CPUs, cut before "diff "
	// lines: such a line always starts a new file section (or is refused
	// as a combined diff), and no lookahead across it changes an outcome,
	// so the pieces scan exactly as the whole would.
	pieces := cutBeforeDiffLines(text, piece)
	type result struct {
		files []*rawFile
		prose int
		err   error
	}
	res := make([]result, len(pieces))
	base := make([]int, len(pieces))
	for i := 1; i < len(pieces); i++ {
		base[i] = base[i-1] + strings.Count(pieces[i-1], "\n")
	}
	eachParallel(len(pieces), len(text), func(i int) {
		r := &res[i]
		r.files, r.prose, r.err = scanLines(pieces[i], func(k int) int { return lineNo(base[i] + k) })
	})
	prose := 0
	at := int64(0) // where the piece starts in text
	for i, r := range res {
		if r.err != nil {
			return nil, r.err // the first error in diff order
		}
		for _, f := range r.files {
			f.off += at
		}
		at += int64(len(pieces[i]))
		sc.files = append(sc.files, r.files...)
		prose += r.prose
	}
	if prose > 0 && len(sc.files) > 0 {
		sc.repairs = append(sc.repairs, fmt.Sprintf("ignored %d line(s) of prose around the diff", prose))
	}
	if len(sc.files) == 0 {
		return nil, &ParseError{Line: 1, Msg: "no unified diff found (no ---/+++ file header and no @@ hunk)"}
	}
	sc.repairDifflib(endsNL)
	for _, f := range sc.files {
		for hi, h := range f.hunks {
			if err := sc.finishHunk(f, hi, h); err != nil {
				return nil, err
			}
		}
	}
	return sc, nil
}

// hasLineWithPrefix reports whether a line of text starts with prefix.
// One search for the prefix, not one comparison per line.
// scanPiece is the size of the pieces a big diff is scanned in.
const scanPiece = 64 << 10

// cutBeforeDiffLines cuts text into pieces of at least size bytes, each
// cut right before a line that starts with "diff ".
func cutBeforeDiffLines(text string, size int) []string {
	var out []string
	for len(text) > size {
		k := strings.Index(text[size:], "\ndiff ")
		if k < 0 {
			break
		}
		out = append(out, text[:size+k+1])
		text = text[size+k+1:]
	}
	return append(out, text)
}

// scanLines finds the file sections and hunks in text; lineNo maps a
// line index of text to its line in the input. It returns the sections,
// the number of prose lines it skipped, or the first refusal.
func scanLines(text string, lineNo func(int) int) ([]*rawFile, int, error) {
	ls := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		ls = nil
	}
	var files []*rawFile
	var cur *rawFile
	// The byte offset of line i, advanced as the sections are found (in
	// order).
	offLine, off := 0, 0
	newFile := func(i int) *rawFile {
		for ; offLine < i; offLine++ {
			off += len(ls[offLine]) + 1
		}
		cur = &rawFile{line: lineNo(i), off: int64(off)}
		files = append(files, cur)
		return cur
	}
	prose := 0
	for i := 0; i < len(ls); i++ {
		l := strings.TrimSuffix(ls[i], "\r")
		switch {
		case strings.HasPrefix(l, "diff --cc ") || strings.HasPrefix(l, "diff --combined ") || strings.HasPrefix(l, "@@@ "):
			return nil, 0, &ParseError{Line: lineNo(i), Msg: "a combined (merge) diff cannot be applied; diff against one parent instead (git diff A B)"}
		case strings.HasPrefix(l, "diff ") || strings.HasPrefix(l, "Index: "):
			newFile(i).header = append(cur.header, ls[i])
		case strings.HasPrefix(l, "Binary files ") && strings.HasSuffix(l, " differ"):
			if cur == nil || len(cur.hunks) > 0 || hasFileNames(cur) {
				newFile(i)
			}
			cur.header = append(cur.header, ls[i])
		case cur != nil && len(cur.hunks) == 0 && isExtended(l):
			cur.header = append(cur.header, ls[i])
		case strings.HasPrefix(l, "--- ") && i+1 < len(ls) && strings.HasPrefix(ls[i+1], "+++ "):
			if cur == nil || len(cur.hunks) > 0 || hasFileNames(cur) {
				newFile(i)
			}
			cur.header = append(cur.header, ls[i], ls[i+1])
			i++
		case strings.HasPrefix(l, "+++ ") && (cur == nil || len(cur.hunks) > 0 || !hasFileNames(cur)):
			// A "+++" without its "---": keep it, parse supplies the other.
			if cur == nil || len(cur.hunks) > 0 {
				newFile(i)
			}
			cur.header = append(cur.header, ls[i])
		case strings.HasPrefix(l, "@@"):
			if cur == nil {
				newFile(i)
			}
			h, next := scanHunk(ls, i, lineNo)
			cur.hunks = append(cur.hunks, h)
			i = next - 1
		default:
			if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "```") {
				prose++
			}
		}
	}
	return files, prose, nil
}

func hasLineWithPrefix(text, prefix string) bool {
	for i := 0; ; {
		k := strings.Index(text[i:], prefix)
		if k < 0 {
			return false
		}
		if i+k == 0 || text[i+k-1] == '\n' {
			return true
		}
		i += k + 1
	}
}

func hasFileNames(f *rawFile) bool {
	for _, h := range f.header {
		if strings.HasPrefix(h, "--- ") || strings.HasPrefix(h, "+++ ") {
			return true
		}
	}
	return false
}

// isExtended reports a git extended header line.
func isExtended(l string) bool {
	for _, p := range [...]string{
		"old mode ", "new mode ", "deleted file mode ", "new file mode ",
		"copy from ", "copy to ", "rename from ", "rename to ", "rename old ", "rename new ",
		"similarity index ", "dissimilarity index ", "index ", "GIT binary patch",
	} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// unfence returns the contents of the Markdown code fences that hold a
// diff, with the input line number of every line it keeps; or the text
// unchanged and a nil map when it has no such fence. Only a fence at
// column 0 counts: a diff's body lines start with ' ', '+' or '-', so a
// context line " ```" of a Markdown file is never taken for a fence.
func unfence(text string) (string, []int) {
	if !strings.Contains(text, "```") && !strings.Contains(text, "~~~") {
		return text, nil
	}
	var out, block []string
	var lineMap, blockLines []int
	in := false
	flush := func() {
		if isDiffLike(block) {
			out = append(out, block...)
			lineMap = append(lineMap, blockLines...)
		}
		block, blockLines = nil, nil
	}
	for i, l := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(l, "```") || strings.HasPrefix(l, "~~~") {
			if in {
				flush()
			}
			in = !in
			continue
		}
		if in {
			block = append(block, l)
			blockLines = append(blockLines, i+1)
		}
	}
	if in {
		flush()
	}
	if out == nil {
		return text, nil
	}
	return strings.Join(out, ""), lineMap
}

func isDiffLike(block []string) bool {
	for _, l := range block {
		if strings.HasPrefix(l, "@@") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "diff --git ") {
			return true
		}
	}
	return false
}

// scanHunk reads the hunk whose header is ls[i] and returns the index of
// the first line after it.
func scanHunk(ls []string, i int, lineNo func(int) int) (*rawHunk, int) {
	hl := strings.TrimSuffix(ls[i], "\r")
	h := &rawHunk{headerLine: hl, oldCount: -1, newCount: -1, line: lineNo(i)}
	if r, ok := parseHunkHeader(hl); ok {
		h.numbered = true
		h.oldStart, h.oldCount, h.newStart, h.newCount = r.oldStart, r.oldCount, r.newStart, r.newCount
		h.section = r.section
	} else {
		// "@@", "@@ @@", "@@ ... @@ func f()": no usable numbers.
		if rest := strings.TrimPrefix(hl, "@@"); strings.Contains(rest, "@@") {
			h.section = strings.TrimSpace(rest[strings.Index(rest, "@@")+2:])
		}
	}
	var oldAll, newAll, oldNE, newNE int
	j := i + 1
	for ; j < len(ls); j++ {
		l := strings.TrimSuffix(ls[j], "\r")
		if strings.HasPrefix(l, "@@") || strings.HasPrefix(l, "diff ") || strings.HasPrefix(l, "Index: ") {
			break
		}
		pending := h.numbered && (oldAll < h.oldCount || newAll < h.newCount) && (oldNE < h.oldCount || newNE < h.newCount)
		if !pending && strings.HasPrefix(l, "--- ") && j+2 < len(ls) && strings.HasPrefix(ls[j+1], "+++ ") && strings.HasPrefix(ls[j+2], "@@") {
			break // a new file header, not a "-- x"/"++ y" pair of body lines
		}
		if !pending && strings.HasPrefix(l, "+++ ") && j+1 < len(ls) && strings.HasPrefix(ls[j+1], "@@") {
			break // a new file's lone "+++" header
		}
		if l != "" && l[0] != ' ' && l[0] != '-' && l[0] != '+' && l[0] != '\\' {
			// Prose after the hunk, or a body line that lost its prefix
			// (an outdented hunk): finishHunk tells which it can.
			h.cutBy, h.cutLine = l, lineNo(j)
			if j+1 < len(ls) && ls[j+1] != "" {
				h.cutThenBody = ls[j+1][0] == ' ' || ls[j+1][0] == '+'
			}
			break
		}
		switch {
		case l == "":
			oldAll, newAll = oldAll+1, newAll+1
		case l[0] == ' ':
			oldAll, newAll, oldNE, newNE = oldAll+1, newAll+1, oldNE+1, newNE+1
		case l[0] == '-':
			oldAll, oldNE = oldAll+1, oldNE+1
		case l[0] == '+':
			newAll, newNE = newAll+1, newNE+1
		}
	}
	// The body shares the scanned lines; later repairs reslice or rewrite
	// lines in place, which no one else reads.
	h.body = ls[i+1 : j : j]
	return h, j
}

// count recounts a body: lines on the old and new side.
func count(body []string) (old, nw int) {
	for _, l := range body {
		l = strings.TrimSuffix(l, "\r")
		switch {
		case l == "" || l[0] == ' ':
			old, nw = old+1, nw+1
		case l[0] == '-':
			old++
		case l[0] == '+':
			nw++
		}
	}
	return old, nw
}

// repairDifflib detects AgentSmithy's difflib diffs (a blank line after
// every body line, none after a line that had no newline, no markers) and
// rewrites every hunk into a proper body. It only acts when every hunk
// fits the pattern and every repaired numbered hunk then matches its
// counts, while at least one raw hunk did not.
func (sc *scanned) repairDifflib(endsNL bool) {
	var repaired [][]string
	var frags [][]bool
	var all []*rawHunk
	rawBad := false
	for fi, f := range sc.files {
		for hi, h := range f.hunks {
			last := fi == len(sc.files)-1 && hi == len(f.hunks)-1
			body, frag, ok := undifflib(h.body, last && !endsNL)
			if !ok {
				return
			}
			if h.numbered {
				o, n := count(body)
				if o != h.oldCount || n != h.newCount {
					return
				}
				if o, n := count(h.body); o != h.oldCount || n != h.newCount {
					rawBad = true
				}
			}
			repaired = append(repaired, body)
			frags = append(frags, frag)
			all = append(all, h)
		}
	}
	if !rawBad || len(all) == 0 {
		return
	}
	joined := 0
	for i, h := range all {
		h.body = repaired[i]
		if k := countTrue(frags[i]); k > 0 {
			joined += k
			h.body = joinFragments(h.body, frags[i])
			if h.numbered {
				// The header counted the fragments as lines.
				h.oldCount, h.newCount = count(h.body)
			}
		}
	}
	sc.repairs = append(sc.repairs, "removed the blank line difflib put after every body line (AgentSmithy diff)")
	if joined > 0 {
		sc.repairs = append(sc.repairs, fmt.Sprintf("rejoined %d line(s) that Python's splitlines had broken at a form feed, vertical tab or other separator (AgentSmithy diff)", joined))
	}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// splitlinesBreak reports whether a difflib body line ends with one of the
// characters besides \n, \r that Python's str.splitlines breaks lines at
// (\v, \f, \x1c, \x1d, \x1e, U+0085, U+2028, U+2029): such a line is a
// fragment of a source line, continued by the next body line.
func splitlinesBreak(l string) bool {
	if l == "" {
		return false
	}
	switch l[len(l)-1] {
	case '\v', '\f', 0x1c, 0x1d, 0x1e:
		return true
	}
	return strings.HasSuffix(l, "\u0085") || strings.HasSuffix(l, "\u2028") || strings.HasSuffix(l, "\u2029")
}

// undifflib undoes the difflib join for one hunk body. lastNoNL tells that
// the diff text ended without a newline right after this body. frag[i]
// tells that out[i] is a fragment of a source line that the next line of
// its side continues (see splitlinesBreak); such a line is followed by no
// separator either, but it did not lack a newline.
func undifflib(body []string, lastNoNL bool) (out []string, frag []bool, ok bool) {
	noNL := 0
	for i := 0; i < len(body); i++ {
		l := strings.TrimSuffix(body[i], "\r")
		if l == "" || !strings.ContainsRune(" -+", rune(l[0])) {
			return nil, nil, false
		}
		out = append(out, body[i])
		frag = append(frag, false)
		switch {
		case i+1 < len(body) && body[i+1] == "":
			i++ // the separator: this line had its newline
		case i+1 == len(body):
			if lastNoNL {
				out, frag = append(out, noNewlineMarker), append(frag, false)
			}
		case splitlinesBreak(l[1:]):
			frag[len(frag)-1] = true
		default:
			// Followed directly by the next line: it had no newline.
			noNL++
			out, frag = append(out, noNewlineMarker), append(frag, false)
		}
	}
	return out, frag, noNL <= 2
}

// joinFragments rebuilds the source lines that splitlines broke: each side
// (context and removed lines the old one, context and added lines the new
// one) is reassembled, then laid out again as common leading context, the
// removed and the added lines, and common trailing context. The old side
// is exactly what it was, so the hunk matches where it did.
func joinFragments(body []string, frag []bool) []string {
	type line struct {
		text string
		noNL bool
	}
	var old, nw []line
	var oldBuf, newBuf strings.Builder
	lastSide := byte(0)
	for i, l := range body {
		if l == noNewlineMarker {
			switch {
			case lastSide == '-' && len(old) > 0:
				old[len(old)-1].noNL = true
			case lastSide == '+' && len(nw) > 0:
				nw[len(nw)-1].noNL = true
			case lastSide == ' ':
				if len(old) > 0 {
					old[len(old)-1].noNL = true
				}
				if len(nw) > 0 {
					nw[len(nw)-1].noNL = true
				}
			}
			continue
		}
		op, text := l[0], l[1:]
		lastSide = op
		if op != '+' {
			oldBuf.WriteString(text)
			if !frag[i] {
				old = append(old, line{text: oldBuf.String()})
				oldBuf.Reset()
			}
		}
		if op != '-' {
			newBuf.WriteString(text)
			if !frag[i] {
				nw = append(nw, line{text: newBuf.String()})
				newBuf.Reset()
			}
		}
	}
	if oldBuf.Len() > 0 {
		old = append(old, line{text: oldBuf.String()})
	}
	if newBuf.Len() > 0 {
		nw = append(nw, line{text: newBuf.String()})
	}
	lead := 0
	for lead < len(old) && lead < len(nw) && old[lead] == nw[lead] {
		lead++
	}
	trail := 0
	for trail < len(old)-lead && trail < len(nw)-lead && old[len(old)-1-trail] == nw[len(nw)-1-trail] {
		trail++
	}
	var out []string
	emit := func(op byte, l line) {
		out = append(out, string(op)+l.text)
		if l.noNL {
			out = append(out, noNewlineMarker)
		}
	}
	for _, l := range old[:lead] {
		emit(' ', l)
	}
	for _, l := range old[lead : len(old)-trail] {
		emit('-', l)
	}
	for _, l := range nw[lead : len(nw)-trail] {
		emit('+', l)
	}
	for _, l := range old[len(old)-trail:] {
		emit(' ', l)
	}
	return out
}

// finishHunk drops blank lines that trail a hunk as formatting, turns any
// "\ " line into go-diff's English marker, and recounts the body.
func (sc *scanned) finishHunk(f *rawFile, hi int, h *rawHunk) error {
	k := 0
	for k < len(h.body) && strings.TrimSuffix(h.body[len(h.body)-1-k], "\r") == "" {
		k++
	}
	if k > 0 {
		drop := k
		if h.numbered {
			// Keep as many as the counts ask for (GNU diff's empty context).
			for keep := k; keep >= 0; keep-- {
				o, n := count(h.body[:len(h.body)-k+keep])
				if o == h.oldCount && n == h.newCount {
					drop = k - keep
					break
				}
			}
		}
		h.body = h.body[:len(h.body)-drop]
	}
	for i, l := range h.body {
		if strings.HasPrefix(l, `\`) {
			h.body[i] = noNewlineMarker
		}
	}
	o, n := count(h.body)
	if err := h.checkCut(o, n); err != nil {
		return err
	}
	if h.numbered && (o != h.oldCount || n != h.newCount) {
		sc.repairs = append(sc.repairs, fmt.Sprintf("%s hunk %d: header says -%d,%d +%d,%d but the body has -%d +%d lines; used the body",
			f.displayName(), hi+1, h.oldStart, h.oldCount, h.newStart, h.newCount, o, n))
	}
	if !h.numbered {
		h.oldStart, h.newStart = 1, 1
		if o == 0 {
			h.oldStart = 0
		}
		if n == 0 {
			h.newStart = 0
		}
	}
	h.oldCount, h.newCount = o, n
	return nil
}

// checkCut refuses a hunk whose body was ended by a line that is not a
// diff line while the hunk evidently goes on: its header promises more
// lines, or (without numbers) the next line is a context or added line.
// Applying the part before the cut would be a silent partial edit.
func (h *rawHunk) checkCut(o, n int) error {
	if h.cutBy == "" {
		return nil
	}
	short := h.numbered && (o < h.oldCount || n < h.newCount)
	goesOn := !h.numbered && h.cutThenBody
	if !short && !goesOn {
		return nil
	}
	return &ParseError{Line: h.cutLine, Msg: fmt.Sprintf("the hunk at diff line %d is cut short by %q, which does not start with ' ', '-' or '+' (an outdented line?); fix the hunk so that every line has its prefix", h.line, h.cutBy)}
}

func (f *rawFile) displayName() string {
	for _, h := range f.header {
		if strings.HasPrefix(h, "+++ ") {
			return strings.TrimSpace(strings.TrimSuffix(h[4:], "\r"))
		}
	}
	if len(f.header) > 0 {
		return strings.TrimSpace(strings.TrimPrefix(strings.TrimSuffix(f.header[0], "\r"), "diff --git "))
	}
	return "(no file header)"
}

// goDiffHeader is the hunk header handed to go-diff: numbers from the
// recount, the section kept.
func (h *rawHunk) goDiffHeader() string {
	return string(appendHunkHeader(nil, h.oldStart, h.oldCount, h.newStart, h.newCount, h.section))
}

// appendHunkHeader appends "@@ -a,b +c,d @@[ section]" to b (without
// fmt: it runs once or twice per hunk).
func appendHunkHeader(b []byte, oldStart, oldCount, newStart, newCount int, section string) []byte {
	b = append(b, "@@ -"...)
	b = strconv.AppendInt(b, int64(oldStart), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(oldCount), 10)
	b = append(b, " +"...)
	b = strconv.AppendInt(b, int64(newStart), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(newCount), 10)
	b = append(b, " @@"...)
	if section != "" {
		b = append(b, ' ')
		b = append(b, section...)
	}
	return b
}
