package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sourcegraph/go-diff/diff"
)

// A damage kind is one way chat models get unified diffs wrong
// (docs: the diff-apply reference, "How LLM-written diffs fail in practice").
// Each damaged case carries exactly one kind. The damage never removes
// information a careful applier needs: the expected result is still the
// commit's files (converted to CRLF for kindCRLF, whose target files are
// CRLF).
const (
	kindLineNumbers   = "wrong-line-numbers"  // every hunk's start lines shifted by 1..30
	kindCounts        = "wrong-counts"        // some hunks' line counts off by 1..2, bodies intact
	kindMissingPrefix = "missing-prefix"      // "--- path" instead of "--- a/path", no git headers
	kindExtraPrefix   = "extra-prefix"        // "--- a/<project>/path", the workspace's own name prepended
	kindAbsolutePath  = "absolute-paths"      // "--- /workspace/root/path", no git headers
	kindTrailingWS    = "trailing-ws-context" // trailing blanks added to some context lines
	kindCRLF          = "crlf-target"         // target files are CRLF, the diff is LF
	kindNoNewline     = "missing-nonl-marker" // "\ No newline at end of file" dropped; both sides lack it
	kindReversed      = "reversed-hunks"      // the hunks of every multi-hunk file in reverse order
	kindBareHeader    = "bare-hunk-header"    // "@@" or "@@ ... @@" instead of "@@ -a,b +c,d @@"

	// kindNone reprints the diff without damage; it is not in the cycle and
	// exists to check the harness itself (-kinds none).
	kindNone = "none"
)

// Extra kinds: more failures from the reference's list, outside issue #3's
// cycle (and its targets); select them with -kinds.
const (
	kindFenced         = "markdown-fenced"   // the diff inside a ```diff fence, with prose around it
	kindTabsAsSpaces   = "tabs-as-spaces"    // leading tabs of context lines written as four spaces
	kindDroppedContext = "dropped-context"   // one interior context line left out, counts fitted to the body
	kindCRLFDiff       = "crlf-diff"         // the diff has CRLF line ends, the files LF
	kindNoFinalEOL     = "diff-no-final-eol" // the diff text lacks its last newline
)

// extraKinds returns the kinds outside the default cycle.
func extraKinds() []string {
	return []string{kindFenced, kindTabsAsSpaces, kindDroppedContext, kindCRLFDiff, kindNoFinalEOL}
}

// allKinds returns the cycle of the damaged set, in the order issue #3 lists
// the kinds.
func allKinds() []string {
	return []string{kindLineNumbers, kindCounts, kindMissingPrefix, kindExtraPrefix,
		kindAbsolutePath, kindTrailingWS, kindCRLF, kindNoNewline, kindReversed, kindBareHeader}
}

// source is the undamaged input of one damaged case: a diff without rename
// detection and the files on both sides, keyed by slash-separated path.
type source struct {
	diff          []byte
	before, after map[string][]byte
	root          string // absolute workspace root, for kindAbsolutePath and kindExtraPrefix
}

// damaged is one case of the damaged set.
type damaged struct {
	kind          string
	diff          []byte
	before, after map[string][]byte
}

// errMisparse reports that go-diff did not read the source diff back as git
// wrote it, so reprinting it would change more than the damage.
var errMisparse = errors.New("go-diff misread the diff")

// parseDiff parses a git diff with go-diff, keeping CRs, and checks what
// go-diff does not: that every hunk body matches its header's line counts.
// A mismatch means go-diff split the diff in the wrong place (it takes a
// removed "--- x" line followed by an added "+++ y" line for a file header).
func parseDiff(d []byte) ([]*diff.FileDiff, error) {
	fds, err := diff.ParseMultiFileDiffOptions(d, diff.ParseOptions{KeepCR: true})
	if err != nil {
		return nil, fmt.Errorf("parse diff: %w", err)
	}
	for _, fd := range fds {
		for _, h := range fd.Hunks {
			orig, news := countBody(h.Body)
			if orig != h.OrigLines || news != h.NewLines {
				return nil, fmt.Errorf("%w: %s hunk @@ -%d,%d +%d,%d @@ has a body of -%d +%d lines",
					errMisparse, fd.NewName, h.OrigStartLine, h.OrigLines, h.NewStartLine, h.NewLines, orig, news)
			}
		}
	}
	return fds, nil
}

// countBody counts the old-side and new-side lines of a hunk body.
func countBody(body []byte) (orig, news int32) {
	for _, l := range bodyLines(body) {
		switch {
		case len(l) == 0 || l[0] == ' ' || l[0] == '\n' || l[0] == '\r':
			orig++
			news++
		case l[0] == '-':
			orig++
		case l[0] == '+':
			news++
		}
	}
	return orig, news
}

// bodyLines splits a hunk body into lines, each with its line end; the last
// line lacks one when go-diff removed it for a no-newline marker.
func bodyLines(body []byte) [][]byte {
	var lines [][]byte
	for len(body) > 0 {
		i := bytes.IndexByte(body, '\n') + 1
		if i == 0 {
			i = len(body)
		}
		lines = append(lines, body[:i])
		body = body[i:]
	}
	return lines
}

// applicable reports whether kind can damage src; some kinds need a
// multi-hunk file, a no-newline marker, context lines or LF-only files.
func applicable(kind string, fds []*diff.FileDiff, src *source) bool {
	if !anyHunk(fds, func(*diff.FileDiff, *diff.Hunk) bool { return true }) {
		return false // mode changes or empty files only: no text to damage
	}
	switch kind {
	case kindNone, kindLineNumbers, kindCounts, kindBareHeader, kindFenced, kindNoFinalEOL:
		return true
	case kindTabsAsSpaces:
		return anyHunk(fds, func(_ *diff.FileDiff, h *diff.Hunk) bool { return len(tabContextLines(h)) > 0 })
	case kindDroppedContext:
		return anyHunk(fds, func(_ *diff.FileDiff, h *diff.Hunk) bool { return len(interiorContextLines(h)) > 0 })
	case kindCRLFDiff:
		// A created file has no line ends of its own to keep: whether its
		// CRLF lines are transport damage or content is a guess, so such
		// diffs are left out.
		return noCR(src.before) && noCR(src.after) && bytes.IndexByte(src.diff, '\r') < 0 &&
			!slices.ContainsFunc(fds, func(fd *diff.FileDiff) bool { return fd.OrigName == devNull })
	case kindMissingPrefix, kindAbsolutePath:
		return allHaveHunks(fds)
	case kindExtraPrefix:
		// The extra component can only be recognised against a file that exists.
		return allHaveHunks(fds) && slices.ContainsFunc(fds, func(fd *diff.FileDiff) bool { return fd.OrigName != devNull })
	case kindTrailingWS:
		return anyHunk(fds, func(_ *diff.FileDiff, h *diff.Hunk) bool { return len(contextLines(h)) > 0 })
	case kindCRLF:
		return crlfApplicable(src)
	case kindNoNewline:
		return slices.ContainsFunc(fds, func(fd *diff.FileDiff) bool { return bothLackNewline(fd, src) })
	case kindReversed:
		return slices.ContainsFunc(fds, func(fd *diff.FileDiff) bool { return len(fd.Hunks) > 1 })
	}
	return false
}

const devNull = "/dev/null"

func anyHunk(fds []*diff.FileDiff, f func(*diff.FileDiff, *diff.Hunk) bool) bool {
	for _, fd := range fds {
		if slices.ContainsFunc(fd.Hunks, func(h *diff.Hunk) bool { return f(fd, h) }) {
			return true
		}
	}
	return false
}

// allHaveHunks is required by the kinds that drop git's extended headers: a
// file entry without hunks (an empty file, a mode change) has nothing left.
func allHaveHunks(fds []*diff.FileDiff) bool {
	return !slices.ContainsFunc(fds, func(fd *diff.FileDiff) bool { return len(fd.Hunks) == 0 })
}

// crlfApplicable needs a file whose lines change and LF-only files, so that
// converting to CRLF is a pure change of line ends.
func crlfApplicable(src *source) bool {
	modified := false
	for p, b := range src.before {
		if bytes.IndexByte(b, '\r') >= 0 {
			return false
		}
		if a, ok := src.after[p]; ok && !bytes.Equal(a, b) && bytes.IndexByte(b, '\n') >= 0 {
			modified = true
		}
	}
	for _, a := range src.after {
		if bytes.IndexByte(a, '\r') >= 0 {
			return false
		}
	}
	return modified
}

// bothLackNewline reports whether a modified file has no final newline before
// and after the commit and its diff marks that: dropping the markers then
// loses nothing, since keeping the file's final-newline state is right.
func bothLackNewline(fd *diff.FileDiff, src *source) bool {
	p, ok := stripPrefix(fd.OrigName, "a/")
	if !ok || len(fd.Hunks) == 0 {
		return false
	}
	b, a := src.before[p], src.after[p]
	if len(b) == 0 || len(a) == 0 || b[len(b)-1] == '\n' || a[len(a)-1] == '\n' {
		return false
	}
	last := fd.Hunks[len(fd.Hunks)-1]
	return last.OrigNoNewlineAt != 0 || !bytes.HasSuffix(last.Body, []byte("\n"))
}

func stripPrefix(name, prefix string) (string, bool) {
	if name == devNull {
		return "", false
	}
	return strings.CutPrefix(name, prefix)
}

// contextLines returns the indexes of a hunk's context lines.
func contextLines(h *diff.Hunk) []int {
	var idx []int
	for i, l := range bodyLines(h.Body) {
		if len(l) > 0 && l[0] == ' ' {
			idx = append(idx, i)
		}
	}
	return idx
}

// damage applies kind to src. The same (src, kind, rng state) always gives
// the same result. It returns an error when kind is not applicable.
func damage(kind string, src *source, rng *rand.Rand) (*damaged, error) {
	fds, err := parseDiff(src.diff)
	if err != nil {
		return nil, err
	}
	if !applicable(kind, fds, src) {
		return nil, fmt.Errorf("damage %s: not applicable", kind)
	}
	out := &damaged{kind: kind, before: src.before, after: src.after}
	bare := ""
	switch kind {
	case kindLineNumbers:
		shiftLineNumbers(fds, rng)
	case kindCounts:
		skewCounts(fds, rng)
	case kindMissingPrefix:
		renamePaths(fds, func(p string, _ bool) string { return p })
	case kindExtraPrefix:
		project := filepath.Base(src.root)
		renamePaths(fds, func(p string, old bool) string {
			if old {
				return "a/" + project + "/" + p
			}
			return "b/" + project + "/" + p
		})
	case kindAbsolutePath:
		root := filepath.ToSlash(src.root)
		renamePaths(fds, func(p string, _ bool) string { return root + "/" + p })
	case kindTrailingWS:
		addTrailingBlanks(fds, rng)
	case kindCRLF:
		out.before, out.after = crlfFiles(src)
	case kindNoNewline:
		for _, fd := range fds {
			if bothLackNewline(fd, src) {
				dropNoNewlineMarkers(fd)
			}
		}
	case kindReversed:
		for _, fd := range fds {
			slices.Reverse(fd.Hunks)
		}
	case kindBareHeader:
		bare = []string{"@@", "@@ ... @@"}[rng.IntN(2)]
	case kindTabsAsSpaces:
		for _, fd := range fds {
			for _, h := range fd.Hunks {
				idx := tabContextLines(h)
				editLines(h, func(i int, l []byte) []byte {
					if !slices.Contains(idx, i) {
						return l
					}
					text := l[1:]
					tabs := len(text) - len(bytes.TrimLeft(text, "\t"))
					return slices.Concat([]byte(" "), bytes.Repeat([]byte("    "), tabs), text[tabs:])
				})
			}
		}
	case kindDroppedContext:
		dropContextLine(fds, rng)
	}
	if out.diff, err = printDiff(fds, bare); err != nil {
		return nil, err
	}
	switch kind {
	case kindFenced:
		out.diff = slices.Concat([]byte("Here is the change:\n\n```diff\n"), out.diff,
			[]byte("```\n\nIt keeps the behaviour otherwise unchanged.\n"))
	case kindCRLFDiff:
		out.diff = toCRLF(out.diff)
	case kindNoFinalEOL:
		out.diff = bytes.TrimSuffix(out.diff, []byte("\n"))
	}
	return out, nil
}

func noCR(files map[string][]byte) bool {
	for _, b := range files {
		if bytes.IndexByte(b, '\r') >= 0 {
			return false
		}
	}
	return true
}

// tabContextLines returns the indexes of context lines that start with a tab.
func tabContextLines(h *diff.Hunk) []int {
	lines := bodyLines(h.Body)
	return slices.DeleteFunc(contextLines(h), func(i int) bool { return !bytes.HasPrefix(lines[i], []byte(" \t")) })
}

// interiorContextLines returns the context lines with context lines on
// both sides. Leaving one of them out keeps every changed line next to the
// lines it was next to, so the commit's result stays the only right one.
func interiorContextLines(h *diff.Hunk) []int {
	ctx := contextLines(h)
	return slices.DeleteFunc(slices.Clone(ctx), func(i int) bool {
		return !slices.Contains(ctx, i-1) || !slices.Contains(ctx, i+1)
	})
}

// dropContextLine leaves one interior context line out of one hunk and fits
// that hunk's counts to its body, so the missing line is the only damage.
func dropContextLine(fds []*diff.FileDiff, rng *rand.Rand) {
	var hunks []*diff.Hunk
	for _, fd := range fds {
		for _, h := range fd.Hunks {
			if len(interiorContextLines(h)) > 0 {
				hunks = append(hunks, h)
			}
		}
	}
	h := hunks[rng.IntN(len(hunks))]
	idx := interiorContextLines(h)
	drop := idx[rng.IntN(len(idx))]
	editLines(h, func(i int, l []byte) []byte {
		if i == drop {
			return nil
		}
		return l
	})
	h.OrigLines--
	h.NewLines--
}

// shiftLineNumbers moves every hunk that does not start an empty file by a
// nonzero offset of up to 30 lines, staying at line 1 or below.
func shiftLineNumbers(fds []*diff.FileDiff, rng *rand.Rand) {
	for _, fd := range fds {
		for _, h := range fd.Hunks {
			if h.OrigStartLine == 0 {
				continue
			}
			d := int32(rng.IntN(30) + 1)
			if rng.IntN(2) == 0 && h.OrigStartLine > d {
				d = -d
			}
			h.OrigStartLine += d
			if h.NewStartLine > 0 {
				h.NewStartLine = max(1, h.NewStartLine+d)
			}
		}
	}
}

// skewCounts changes the old count, the new count or both of about half of
// the hunks (at least one) by 1 or 2; the bodies stay as they were.
func skewCounts(fds []*diff.FileDiff, rng *rand.Rand) {
	var hunks []*diff.Hunk
	for _, fd := range fds {
		hunks = append(hunks, fd.Hunks...)
	}
	first := rng.IntN(len(hunks))
	for i, h := range hunks {
		if i != first && rng.IntN(2) == 0 {
			continue
		}
		which := rng.IntN(3)
		if which != 1 {
			h.OrigLines = skew(h.OrigLines, rng)
		}
		if which != 0 {
			h.NewLines = skew(h.NewLines, rng)
		}
	}
}

func skew(n int32, rng *rand.Rand) int32 {
	d := int32(rng.IntN(2) + 1)
	if rng.IntN(2) == 0 && n >= d {
		return n - d
	}
	return n + d
}

// renamePaths rewrites the ---/+++ names of every file with name(path,
// isOldSide) and drops git's extended headers, as a model writing plain
// unified diffs does. /dev/null stays.
func renamePaths(fds []*diff.FileDiff, name func(p string, old bool) string) {
	for _, fd := range fds {
		fd.Extended = nil
		if p, ok := stripPrefix(fd.OrigName, "a/"); ok {
			fd.OrigName = name(p, true)
		}
		if p, ok := stripPrefix(fd.NewName, "b/"); ok {
			fd.NewName = name(p, false)
		}
	}
}

// addTrailingBlanks appends a space or a tab to about a third of the context
// lines (at least one), before the line end.
func addTrailingBlanks(fds []*diff.FileDiff, rng *rand.Rand) {
	type at struct {
		h    *diff.Hunk
		line int
	}
	var all []at
	for _, fd := range fds {
		for _, h := range fd.Hunks {
			for _, i := range contextLines(h) {
				all = append(all, at{h, i})
			}
		}
	}
	chosen := map[*diff.Hunk]map[int]string{}
	first := rng.IntN(len(all))
	for i, a := range all {
		if i != first && rng.IntN(3) != 0 {
			continue
		}
		if chosen[a.h] == nil {
			chosen[a.h] = map[int]string{}
		}
		chosen[a.h][a.line] = []string{" ", "\t", "  "}[rng.IntN(3)]
	}
	for h, blanks := range chosen {
		editLines(h, func(i int, l []byte) []byte {
			blank, ok := blanks[i]
			if !ok {
				return l
			}
			text, eol := splitEOL(l)
			return slices.Concat(text, []byte(blank), eol)
		})
	}
}

// splitEOL separates a line from its "\n" or "\r\n".
func splitEOL(l []byte) (text, eol []byte) {
	n := len(l)
	if n > 0 && l[n-1] == '\n' {
		n--
		if n > 0 && l[n-1] == '\r' {
			n--
		}
	}
	return l[:n:n], l[n:]
}

// editLines rewrites a hunk body line by line and keeps go-diff's old-side
// no-newline offset pointing after the same line.
func editLines(h *diff.Hunk, edit func(i int, line []byte) []byte) {
	var body []byte
	var noNL int32
	off := 0
	for i, l := range bodyLines(h.Body) {
		off += len(l)
		body = append(body, edit(i, l)...)
		if h.OrigNoNewlineAt != 0 && int32(off) == h.OrigNoNewlineAt {
			noNL = int32(len(body))
		}
	}
	h.Body, h.OrigNoNewlineAt = body, noNL
}

// dropNoNewlineMarkers removes both kinds of marker go-diff knows: the
// old-side offset and the new-side missing final newline of the body.
func dropNoNewlineMarkers(fd *diff.FileDiff) {
	for _, h := range fd.Hunks {
		h.OrigNoNewlineAt = 0
		if len(h.Body) > 0 && !bytes.HasSuffix(h.Body, []byte("\n")) {
			h.Body = append(slices.Clip(h.Body), '\n')
		}
	}
}

// crlfFiles converts the files that exist on both sides to CRLF; deleted
// files are converted too (the target was CRLF), created ones are left as
// the diff writes them.
func crlfFiles(src *source) (before, after map[string][]byte) {
	before, after = map[string][]byte{}, map[string][]byte{}
	for p, b := range src.before {
		before[p] = toCRLF(b)
	}
	for p, a := range src.after {
		if _, existed := src.before[p]; existed {
			a = toCRLF(a)
		}
		after[p] = a
	}
	return before, after
}

func toCRLF(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))
}

// printDiff prints fds with go-diff's printer. A non-empty bare replaces
// every hunk header line, which go-diff cannot print.
func printDiff(fds []*diff.FileDiff, bare string) ([]byte, error) {
	if bare == "" {
		return diff.PrintMultiFileDiff(fds)
	}
	var out []byte
	for _, fd := range fds {
		whole, err := diff.PrintFileDiff(fd)
		if err != nil {
			return nil, err
		}
		hunks, err := diff.PrintHunks(fd.Hunks)
		if err != nil {
			return nil, err
		}
		// PrintFileDiff writes the headers and then exactly PrintHunks' output.
		out = append(out, whole[:len(whole)-len(hunks)]...)
		for _, h := range fd.Hunks {
			text, err := diff.PrintHunks([]*diff.Hunk{h})
			if err != nil {
				return nil, err
			}
			_, rest, _ := bytes.Cut(text, []byte("\n"))
			out = append(out, bare+"\n"...)
			out = append(out, rest...)
		}
	}
	return out, nil
}
