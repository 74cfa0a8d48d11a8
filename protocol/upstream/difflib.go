package upstream

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// This file reproduces the parts of Python's difflib that AgentSmithy's
// replace_in_file tool uses to build the diff of a file_edit event
// (agentsmithy.md section 6.2). The server's diff text is malformed on
// purpose-free grounds (keepends lines joined with "\n"), and clients must
// cope with exactly those bytes, so the hunks, ranges and separators here
// follow CPython's algorithm step by step rather than any Go diff library:
// a different (even better) diff would not be a faithful server.

// opcode is one difflib opcode: tag in "equal", "replace", "delete",
// "insert"; a[i1:i2] and b[j1:j2] are the ranges.
type opcode struct {
	tag            byte // 'e', 'r', 'd', 'i'
	i1, i2, j1, j2 int
}

type match struct{ a, b, size int }

// seqMatcher is difflib.SequenceMatcher(None, a, b) with autojunk=True.
type seqMatcher struct {
	a, b []string
	b2j  map[string][]int
}

func newSeqMatcher(a, b []string) *seqMatcher {
	m := &seqMatcher{a: a, b: b, b2j: map[string][]int{}}
	for j, s := range b {
		m.b2j[s] = append(m.b2j[s], j)
	}
	// autojunk: elements more popular than 1% of b (b of 200+ items) are
	// dropped from b2j but not treated as junk by the extension loops.
	if n := len(b); n >= 200 {
		ntest := n/100 + 1
		for s, idx := range m.b2j {
			if len(idx) > ntest {
				delete(m.b2j, s)
			}
		}
	}
	return m
}

func (m *seqMatcher) findLongestMatch(alo, ahi, blo, bhi int) match {
	besti, bestj, bestsize := alo, blo, 0
	j2len := map[int]int{}
	for i := alo; i < ahi; i++ {
		newj2len := map[int]int{}
		for _, j := range m.b2j[m.a[i]] {
			if j < blo {
				continue
			}
			if j >= bhi {
				break
			}
			k := j2len[j-1] + 1
			newj2len[j] = k
			if k > bestsize {
				besti, bestj, bestsize = i-k+1, j-k+1, k
			}
		}
		j2len = newj2len
	}
	// With no junk function, only the non-junk extension loops matter.
	for besti > alo && bestj > blo && m.a[besti-1] == m.b[bestj-1] {
		besti, bestj, bestsize = besti-1, bestj-1, bestsize+1
	}
	for besti+bestsize < ahi && bestj+bestsize < bhi && m.a[besti+bestsize] == m.b[bestj+bestsize] {
		bestsize++
	}
	return match{besti, bestj, bestsize}
}

func (m *seqMatcher) matchingBlocks() []match {
	type span struct{ alo, ahi, blo, bhi int }
	queue := []span{{0, len(m.a), 0, len(m.b)}}
	var blocks []match
	for len(queue) > 0 {
		q := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		x := m.findLongestMatch(q.alo, q.ahi, q.blo, q.bhi)
		if x.size == 0 {
			continue
		}
		blocks = append(blocks, x)
		if q.alo < x.a && q.blo < x.b {
			queue = append(queue, span{q.alo, x.a, q.blo, x.b})
		}
		if x.a+x.size < q.ahi && x.b+x.size < q.bhi {
			queue = append(queue, span{x.a + x.size, q.ahi, x.b + x.size, q.bhi})
		}
	}
	sortMatches(blocks)
	var out []match
	var cur match
	for _, x := range blocks {
		if cur.a+cur.size == x.a && cur.b+cur.size == x.b {
			cur.size += x.size
			continue
		}
		if cur.size > 0 {
			out = append(out, cur)
		}
		cur = x
	}
	if cur.size > 0 {
		out = append(out, cur)
	}
	return append(out, match{len(m.a), len(m.b), 0})
}

func sortMatches(ms []match) {
	// Insertion sort: the lists are short and tuples compare (a, b, size).
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && less(ms[j], ms[j-1]); j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

func less(x, y match) bool {
	if x.a != y.a {
		return x.a < y.a
	}
	if x.b != y.b {
		return x.b < y.b
	}
	return x.size < y.size
}

func (m *seqMatcher) opcodes() []opcode {
	var out []opcode
	i, j := 0, 0
	for _, x := range m.matchingBlocks() {
		var tag byte
		switch {
		case i < x.a && j < x.b:
			tag = 'r'
		case i < x.a:
			tag = 'd'
		case j < x.b:
			tag = 'i'
		}
		if tag != 0 {
			out = append(out, opcode{tag, i, x.a, j, x.b})
		}
		i, j = x.a+x.size, x.b+x.size
		if x.size > 0 {
			out = append(out, opcode{'e', x.a, i, x.b, j})
		}
	}
	return out
}

// groupedOpcodes is get_grouped_opcodes(n).
func (m *seqMatcher) groupedOpcodes(n int) [][]opcode {
	codes := m.opcodes()
	if len(codes) == 0 {
		codes = []opcode{{'e', 0, 1, 0, 1}}
	}
	if c := &codes[0]; c.tag == 'e' {
		c.i1, c.j1 = max(c.i1, c.i2-n), max(c.j1, c.j2-n)
	}
	if c := &codes[len(codes)-1]; c.tag == 'e' {
		c.i2, c.j2 = min(c.i2, c.i1+n), min(c.j2, c.j1+n)
	}
	var groups [][]opcode
	var group []opcode
	for _, c := range codes {
		if c.tag == 'e' && c.i2-c.i1 > 2*n {
			group = append(group, opcode{'e', c.i1, min(c.i2, c.i1+n), c.j1, min(c.j2, c.j1+n)})
			groups = append(groups, group)
			group = nil
			c.i1, c.j1 = max(c.i1, c.i2-n), max(c.j1, c.j2-n)
		}
		group = append(group, c)
	}
	if len(group) > 0 && !(len(group) == 1 && group[0].tag == 'e') {
		groups = append(groups, group)
	}
	return groups
}

func formatRangeUnified(start, stop int) string {
	beginning, length := start+1, stop-start
	if length == 1 {
		return fmt.Sprint(beginning)
	}
	if length == 0 {
		beginning--
	}
	return fmt.Sprintf("%d,%d", beginning, length)
}

// unifiedDiffLines is difflib.unified_diff(a, b, fromfile, tofile,
// lineterm="") as a list of yielded strings; it is empty when a == b.
func unifiedDiffLines(a, b []string, fromfile, tofile string) []string {
	var out []string
	for gi, group := range newSeqMatcher(a, b).groupedOpcodes(3) {
		if gi == 0 {
			out = append(out, "--- "+fromfile, "+++ "+tofile)
		}
		first, last := group[0], group[len(group)-1]
		out = append(out, fmt.Sprintf("@@ -%s +%s @@", formatRangeUnified(first.i1, last.i2), formatRangeUnified(first.j1, last.j2)))
		for _, c := range group {
			if c.tag == 'e' {
				for _, l := range a[c.i1:c.i2] {
					out = append(out, " "+l)
				}
				continue
			}
			if c.tag == 'r' || c.tag == 'd' {
				for _, l := range a[c.i1:c.i2] {
					out = append(out, "-"+l)
				}
			}
			if c.tag == 'r' || c.tag == 'i' {
				for _, l := range b[c.j1:c.j2] {
					out = append(out, "+"+l)
				}
			}
		}
	}
	return out
}

// pySplitlines is Python's str.splitlines(keepends). Besides \n, \r\n and
// \r it breaks at \v, \f, \x1c, \x1d, \x1e, \x85, U+2028 and U+2029, which
// is the source of the fragment quirk of agentsmithy.md section 6.2.
func pySplitlines(s string, keepends bool) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		end := -1
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			end = i + size
		case '\r':
			end = i + 1
			if i+1 < len(s) && s[i+1] == '\n' {
				end = i + 2
			}
		}
		if end < 0 {
			i += size
			continue
		}
		if keepends {
			out = append(out, s[start:end])
		} else {
			out = append(out, s[start:i])
		}
		start, i = end, end
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// agentSmithyDiff is the diff text of a v1/v2 file_edit: the server's
// "\n".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
// fromfile="a/"+abs, tofile="b/"+abs, lineterm="")), byte for byte,
// including the empty separator line after every body line that kept its
// own newline and the "a//abs" headers.
func agentSmithyDiff(abs, oldText, newText string) string {
	return strings.Join(unifiedDiffLines(pySplitlines(oldText, true), pySplitlines(newText, true), "a/"+abs, "b/"+abs), "\n")
}

// AgentSmithyDiff is the diff an AgentSmithy v1/v2 server sends for
// changing the file at abs from oldText to newText (see agentSmithyDiff):
// what a consumer of those diffs (diffapply's tests) checks itself against.
func AgentSmithyDiff(abs, oldText, newText string) string {
	return agentSmithyDiff(abs, oldText, newText)
}

// legacyDiff is the diff of a v0 diff event: lines without their ends,
// joined with "\n", so a valid unified diff without a final newline (and
// without a "\ No newline" marker, as the legacy server produced it).
func legacyDiff(from, to, oldText, newText string) string {
	return strings.Join(unifiedDiffLines(pySplitlines(oldText, false), pySplitlines(newText, false), from, to), "\n")
}

// standardDiff is a well-formed unified diff (what git or GNU diff would
// accept) built from the same hunks: used for dialects whose contract has
// no diff format of its own. A last line without a newline gets the
// "\ No newline at end of file" marker.
func standardDiff(from, to, oldText, newText string) string {
	lines := unifiedDiffLines(splitKeepLF(oldText), splitKeepLF(newText), from, to)
	var sb strings.Builder
	for i, l := range lines {
		sb.WriteString(l)
		if i < 2 || strings.HasPrefix(l, "@@ ") {
			sb.WriteByte('\n')
			continue
		}
		if !strings.HasSuffix(l, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
	return sb.String()
}

// splitKeepLF splits after every "\n", keeping it (the last line may lack it).
func splitKeepLF(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
