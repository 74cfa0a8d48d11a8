package diffapply

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sourcegraph/go-diff/diff"
)

// hunkLine is one body line: op is ' ', '-' or '+'; text has no line
// terminator (a CR the diff carried is dropped: line endings come from
// the file, see text.go).
type hunkLine struct {
	text string
	op   byte
	cr   bool // the diff's line ended in CRLF (used only for a new file's lines)
}

// hunk is a parsed, repaired, recounted hunk.
type hunk struct {
	oldStart, oldCount int
	newStart, newCount int
	numbered           bool
	section            string
	lines              []hunkLine
	body               string // the lines as Hunk.Body prints them, when go-diff gave exactly that; else ""
	oldNoNL, newNoNL   bool   // "\ No newline at end of file" on that side
	line               int    // line of the @@ header in the diff
	// eolPair: no marker, but the hunk ends by removing its last line and
	// adding it back unchanged — a diff that lost its "\ No newline"
	// marker. At the end of the file it is the final newline changing.
	eolPair bool
}

// fileDiff is one parsed file of a diff.
type fileDiff struct {
	oldName, newName     string // as go-diff returns them (prefixes kept)
	renameFrom, renameTo string // git extended headers, unprefixed
	copyFrom, copyTo     string
	oldMode, newMode     uint32
	newFile, deletedFile bool
	dropCopy             bool // a reversed copy: the hunks must match, then the file goes
	hunks                []*hunk
	line                 int
}

// parse scans, repairs and parses a diff. Every file header and every hunk
// goes through go-diff (KeepCR); see scan.go for why we find their bounds
// ourselves first.
func parse(b []byte) ([]*fileDiff, *scanned, error) {
	sc, err := scan(b)
	if err != nil {
		return nil, nil, err
	}
	out := make([]*fileDiff, len(sc.files))
	errs := make([]error, len(sc.files))
	eachParallel(len(sc.files), len(b), func(i int) {
		out[i], errs[i] = parseFile(sc.files[i])
	})
	for _, err := range errs {
		if err != nil {
			return nil, nil, err // the first error in diff order
		}
	}
	return out, sc, nil
}

// parallelMin is the diff size (bytes) from which eachParallel uses more
// than one goroutine.
const parallelMin = 256 << 10

// eachParallel runs do(i) for i in [0, n), on all CPUs when the diff is
// big enough (size bytes) to be worth it. Files parse and plan
// independently; results land in per-index slots, so the outcome does not
// depend on scheduling.
func eachParallel(n, size int, do func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers < 2 || size < parallelMin {
		for i := 0; i < n; i++ {
			do(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				do(i)
			}
		})
	}
	wg.Wait()
}

func parseFile(rf *rawFile) (*fileDiff, error) {
	fd, err := parseFileHeader(rf, len(rf.hunks))
	if err != nil {
		return nil, err
	}
	if fd.hunks, err = parseHunks(rf.hunks); err != nil {
		return nil, err
	}
	return fd, nil
}

// parseFileHeader parses a section's header: names, extended headers,
// and the refusals that need no hunk (binary patches, a section with
// nothing to apply; nhunks is its number of hunks). The hunks are parsed
// apart (parseHunks), so that a streamed plan parses them one file at a
// time. A section without hunks gives parseHunks nothing to refuse, so
// checking for that here keeps parseFile's order of refusals.
func parseFileHeader(rf *rawFile, nhunks int) (*fileDiff, error) {
	fd := &fileDiff{line: rf.line}
	for _, l := range rf.header {
		l = strings.TrimSuffix(l, "\r")
		if strings.HasPrefix(l, "GIT binary patch") || (strings.HasPrefix(l, "Binary files ") && strings.HasSuffix(l, " differ")) {
			return nil, &ParseError{Line: rf.line, Msg: fmt.Sprintf("binary patch for %s: binary patches are not supported; apply it with git", rf.displayName()), Err: ErrBinary}
		}
	}
	if len(rf.header) > 0 {
		gd, err := parseHeader(rf.header)
		if err != nil {
			return nil, &ParseError{Line: rf.line, Msg: "bad file header", Err: err}
		}
		fd.oldName, fd.newName = trimAnnotation(gd.OrigName), trimAnnotation(gd.NewName)
		if err := fd.extended(gd.Extended); err != nil {
			return nil, &ParseError{Line: rf.line, Msg: "bad extended header", Err: err}
		}
	}
	if nhunks == 0 && fd.renameFrom == "" && fd.copyFrom == "" && fd.oldMode == fd.newMode && !fd.newFile && !fd.deletedFile {
		return nil, &ParseError{Line: rf.line, Msg: fmt.Sprintf("%s: no hunks and no rename, copy, mode or create/delete header: nothing to apply", rf.displayName())}
	}
	return fd, nil
}

// parseHeader hands the header lines to go-diff. A lone "+++" gets its
// "---" twin; a date go-diff cannot read is dropped (names keep working).
func parseHeader(header []string) (*diff.FileDiff, error) {
	hs := append([]string(nil), header...)
	hasOld := false
	for i, l := range hs {
		if strings.HasPrefix(l, "--- ") {
			hasOld = true
		}
		if strings.HasPrefix(l, "+++ ") && !hasOld {
			hs = append(hs[:i], append([]string{"--- " + l[4:]}, hs[i:]...)...)
			break
		}
	}
	text := strings.Join(hs, "\n") + "\n"
	gd, err := diff.ParseFileDiffOptions([]byte(text), diff.ParseOptions{KeepCR: true})
	if err == nil {
		return gd, nil
	}
	for i, l := range hs {
		if (strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ")) && strings.Contains(l, "\t") {
			hs[i] = l[:strings.Index(l, "\t")]
		}
	}
	gd, err2 := diff.ParseFileDiffOptions([]byte(strings.Join(hs, "\n")+"\n"), diff.ParseOptions{KeepCR: true})
	if err2 != nil {
		return nil, err
	}
	return gd, nil
}

func (fd *fileDiff) extended(ext []string) error {
	var indexMode uint32 // "index a..b 100644": only its file type matters here
	for _, l := range ext {
		l = strings.TrimSuffix(l, "\r")
		var err error
		switch {
		case strings.HasPrefix(l, "index "):
			if f := strings.Fields(l); len(f) == 3 {
				indexMode, _ = parseMode(f[2]) // informative only: a bad one is ignored
			}
		case strings.HasPrefix(l, "rename from "):
			fd.renameFrom, err = unquote(l[len("rename from "):])
		case strings.HasPrefix(l, "rename to "):
			fd.renameTo, err = unquote(l[len("rename to "):])
		case strings.HasPrefix(l, "copy from "):
			fd.copyFrom, err = unquote(l[len("copy from "):])
		case strings.HasPrefix(l, "copy to "):
			fd.copyTo, err = unquote(l[len("copy to "):])
		case strings.HasPrefix(l, "old mode "):
			fd.oldMode, err = parseMode(l[len("old mode "):])
		case strings.HasPrefix(l, "new mode "):
			fd.newMode, err = parseMode(l[len("new mode "):])
		case strings.HasPrefix(l, "new file mode "):
			fd.newFile = true
			fd.newMode, err = parseMode(l[len("new file mode "):])
		case strings.HasPrefix(l, "deleted file mode "):
			fd.deletedFile = true
			fd.oldMode, err = parseMode(l[len("deleted file mode "):])
		}
		if err != nil {
			return fmt.Errorf("%q: %w", l, err)
		}
	}
	for _, m := range []uint32{fd.oldMode, fd.newMode, indexMode} {
		switch m & 0o170000 {
		case 0o120000:
			return errors.New("a symbolic link change (mode 120000) cannot be applied as text; apply it with git")
		case 0o160000:
			return errors.New("a submodule change (mode 160000) cannot be applied; update the submodule with git")
		}
	}
	if (fd.renameFrom == "") != (fd.renameTo == "") {
		return errors.New("rename from without rename to (or the reverse)")
	}
	if (fd.copyFrom == "") != (fd.copyTo == "") {
		return errors.New("copy from without copy to (or the reverse)")
	}
	if fd.newFile && (fd.renameFrom != "" || fd.copyFrom != "") {
		return errors.New("a new file cannot also be a rename or a copy")
	}
	if fd.newFile && fd.deletedFile {
		return errors.New("a file cannot be both new and deleted")
	}
	return nil
}

func parseMode(s string) (uint32, error) {
	m, err := strconv.ParseUint(strings.TrimSpace(s), 8, 32)
	if err != nil {
		return 0, fmt.Errorf("bad mode %q", s)
	}
	return uint32(m), nil
}

// unquote decodes git's C-style quoted names ("a/t\303\251st.txt").
func unquote(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, `"`) {
		return s, nil
	}
	u, err := strconv.Unquote(s)
	if err != nil {
		return "", fmt.Errorf("bad quoted name %s", s)
	}
	return u, nil
}

// parseHunks runs go-diff over the scanned hunks of one file: all at once
// when no body holds a "---"/"+++" pair go-diff would take for a file
// header (D9), else one hunk at a time.
func parseHunks(rhs []*rawHunk) ([]*hunk, error) {
	var p hunkParser
	return p.parse(rhs)
}

// hunkParser parses the hunks of one file after another (parseHunks),
// reusing between files what go-diff reads them through: the text streamed
// and its buffered reader (go-diff's bufio.NewReader keeps a *bufio.Reader
// of 4 KiB or more as it is, instead of a new one per file). go-diff copies
// every line it keeps, so nothing it returns views the reused buffer.
type hunkParser struct {
	text hunkText
	br   *bufio.Reader
}

func (p *hunkParser) parse(rhs []*rawHunk) ([]*hunk, error) {
	risky := false
	lines := 0
	for _, rh := range rhs {
		lines += len(rh.body)
		for i, l := range rh.body {
			if strings.HasPrefix(l, "---") && i+1 < len(rh.body) && strings.HasPrefix(rh.body[i+1], "+++") {
				risky = true
			}
		}
	}
	// The hunks and their line tables are allocated once for the file,
	// not once per hunk: a hunk's lines are at most its body's lines
	// (markers are not lines).
	hs := make([]hunk, len(rhs))
	slab := make([]hunkLine, lines)
	convert := func(i int, g *diff.Hunk) (*hunk, error) {
		n := len(rhs[i].body)
		err := convertHunk(&hs[i], rhs[i], g, slab[:0:n])
		slab = slab[n:]
		return &hs[i], err
	}
	if !risky {
		p.text = hunkText{hunks: rhs, scratch: p.text.scratch}
		if p.br == nil {
			p.br = bufio.NewReader(&p.text)
		} else {
			p.br.Reset(&p.text)
		}
		gh, err := diff.NewHunksReaderOptions(p.br, diff.ParseOptions{KeepCR: true}).ReadAllHunks()
		if err == nil && len(gh) == len(rhs) {
			out := make([]*hunk, len(rhs))
			for i, g := range gh {
				if out[i], err = convert(i, g); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	}
	out := make([]*hunk, len(rhs))
	for i, rh := range rhs {
		text := rh.goDiffHeader() + "\n"
		if len(rh.body) > 0 {
			text += strings.Join(rh.body, "\n") + "\n"
		}
		gh, err := diff.ParseHunksOptions([]byte(text), diff.ParseOptions{KeepCR: true})
		if err != nil || len(gh) != 1 {
			if err == nil {
				err = fmt.Errorf("expected 1 hunk, go-diff found %d", len(gh))
			}
			return nil, &ParseError{Line: rh.line, Msg: fmt.Sprintf("bad hunk %q", rh.headerLine), Err: err}
		}
		if out[i], err = convert(i, gh[0]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// hunkText reads scanned hunks as the text go-diff parses: each header
// (numbers from the recount) and body line followed by "\n". Streaming
// them spares joining all hunks of a file into one more copy of the diff.
type hunkText struct {
	hunks   []*rawHunk
	line    int    // next line of hunks[0]: 0 is its header, i is body[i-1]
	header  []byte // what is left of the header line being read, "\n" included
	rest    string // what is left of the body line being read
	nl      bool   // rest is still to be followed by "\n"
	scratch []byte
}

func (t *hunkText) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		switch {
		case len(t.header) > 0:
			k := copy(p[n:], t.header)
			t.header, n = t.header[k:], n+k
		case t.rest != "":
			k := copy(p[n:], t.rest)
			t.rest, n = t.rest[k:], n+k
		case t.nl:
			p[n], t.nl, n = '\n', false, n+1
		case !t.next():
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
	}
	return n, nil
}

// next loads the next line; false at the end.
func (t *hunkText) next() bool {
	for len(t.hunks) > 0 {
		h := t.hunks[0]
		switch {
		case t.line == 0:
			t.scratch = appendHunkHeader(t.scratch[:0], h.oldStart, h.oldCount, h.newStart, h.newCount, h.section)
			t.scratch = append(t.scratch, '\n')
			t.header = t.scratch
		case t.line <= len(h.body):
			t.rest, t.nl = h.body[t.line-1], true
		default:
			t.hunks, t.line = t.hunks[1:], 0
			continue
		}
		t.line++
		return true
	}
	return false
}

// convertHunk turns go-diff's hunk into ours, h, its lines appended to
// lines (empty, with room for them).
func convertHunk(h *hunk, rh *rawHunk, g *diff.Hunk, lines []hunkLine) error {
	*h = hunk{
		oldStart: int(g.OrigStartLine), oldCount: int(g.OrigLines),
		newStart: int(g.NewStartLine), newCount: int(g.NewLines),
		numbered: rh.numbered, section: g.Section, line: rh.line,
		oldNoNL: g.OrigNoNewlineAt > 0,
	}
	// One string for the whole body: the lines are slices of it, and when
	// it is already in the form Hunk.Body prints, it is Hunk.Body too. It
	// is g.Body itself, not a copy: go-diff allocated that buffer for this
	// hunk, g is dropped when we return, and nothing writes to it again.
	body := unsafe.String(unsafe.SliceData(g.Body), len(g.Body))
	text := body
	if text != "" && text[len(text)-1] != '\n' {
		h.newNoNL = true
	} else {
		text = strings.TrimSuffix(text, "\n")
	}
	canonical := !h.newNoNL
	if text != "" {
		h.lines = lines
		for text != "" {
			l, rest, _ := strings.Cut(text, "\n")
			text = rest
			cr := strings.HasSuffix(l, "\r")
			l = strings.TrimSuffix(l, "\r")
			if l == "" {
				l = " " // GNU diff's empty context line
				canonical = false
			}
			canonical = canonical && !cr
			h.lines = append(h.lines, hunkLine{text: l[1:], op: l[0], cr: cr})
		}
	}
	if canonical {
		h.body = body
	}
	if h.newNoNL && len(h.lines) > 0 && h.lines[len(h.lines)-1].op == ' ' {
		h.oldNoNL = true // a context line without newline: both sides
	}
	if err := h.check(); err != nil {
		return &ParseError{Line: rh.line, Msg: err.Error()}
	}
	h.eolPair = !h.oldNoNL && !h.newNoNL && endsWithSamePair(h.lines)
	return nil
}

// endsWithSamePair reports whether the hunk's last old line and last new
// line are a removal and an addition of the same text, with nothing after
// them: "-x" ... "+x" closing the hunk.
func endsWithSamePair(ls []hunkLine) bool {
	n := len(ls)
	if n < 2 || ls[n-1].op != '+' {
		return false
	}
	for i := n - 1; i >= 0; i-- {
		if ls[i].op == '-' {
			return ls[i].text == ls[n-1].text && ls[i].cr == ls[n-1].cr // a CR dropped is a line-ending change, not this
		}
		if ls[i].op != '+' {
			return false
		}
	}
	return false
}

// check validates what go-diff does not: body lines and counts.
func (h *hunk) check() error {
	var o, n int
	for _, l := range h.lines {
		switch l.op {
		case ' ':
			o, n = o+1, n+1
		case '-':
			o++
		case '+':
			n++
		default:
			return fmt.Errorf("bad hunk line %q", string(l.op)+l.text)
		}
	}
	if o != h.oldCount || n != h.newCount {
		return fmt.Errorf("hunk body has -%d +%d lines, header -%d +%d", o, n, h.oldCount, h.newCount)
	}
	if o == 0 && n == 0 {
		return errors.New("the hunk has no body: every body line must start with ' ', '-' or '+'")
	}
	return nil
}

// reverse swaps the sides of a parsed file diff (smith apply --reverse).
func (fd *fileDiff) reverse() {
	fd.oldName, fd.newName = fd.newName, fd.oldName
	fd.renameFrom, fd.renameTo = fd.renameTo, fd.renameFrom
	fd.oldMode, fd.newMode = fd.newMode, fd.oldMode
	fd.newFile, fd.deletedFile = fd.deletedFile, fd.newFile
	if fd.copyFrom != "" {
		// The reverse of a copy deletes the copy.
		fd.oldName, fd.newName = fd.copyTo, "/dev/null"
		fd.copyFrom, fd.copyTo = "", ""
		fd.deletedFile, fd.dropCopy = true, true
	}
	for _, h := range fd.hunks {
		h.body = ""
		h.oldStart, h.newStart = h.newStart, h.oldStart
		h.oldCount, h.newCount = h.newCount, h.oldCount
		h.oldNoNL, h.newNoNL = h.newNoNL, h.oldNoNL
		for i := range h.lines {
			switch h.lines[i].op {
			case '-':
				h.lines[i].op = '+'
			case '+':
				h.lines[i].op = '-'
			}
		}
		h.lines = removalsFirst(h.lines)
	}
}

// removalsFirst orders every run of changed lines as diff prints them:
// the removed lines, then the added ones.
func removalsFirst(ls []hunkLine) []hunkLine {
	out := make([]hunkLine, 0, len(ls))
	for i := 0; i < len(ls); {
		if ls[i].op == ' ' {
			out = append(out, ls[i])
			i++
			continue
		}
		j := i
		for j < len(ls) && ls[j].op != ' ' {
			j++
		}
		for _, op := range []byte{'-', '+'} {
			for _, l := range ls[i:j] {
				if l.op == op {
					out = append(out, l)
				}
			}
		}
		i = j
	}
	return out
}
