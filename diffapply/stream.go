package diffapply

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unsafe"
)

// This file plans a diff one file at a time. Plan used to parse every
// hunk of a diff, then read, match and render every file, and only then
// return: for a 50 MB diff that held the diff, go-diff's copy of every
// hunk body, the hunks' line tables, every file before and after and the
// files' line tables at once, about seven times the diff. A streamed plan
// scans the diff once for its structure (what decides anything about the
// whole diff: repairs, refusals, names), keeping each file's section as a
// byte range, then scans, parses, matches and renders one section at a
// time and hands the File to its caller before it starts the next. Plan
// is the streamed plan collecting every File, so both give the same
// Patch, the same repairs and the same refusals.

// PlanFiles is Plan one file at a time: it hands every planned File to
// yield, in diff order, with its ID and its hunks' IDs set, and keeps
// none of them, so that memory holds the diff and the files the caller
// keeps rather than every file of the patch before and after. The Patch
// it returns has Root and Repairs, not Files. An error from yield stops
// planning and is returned as it is.
//
// A refusal of the diff as a whole (the error Plan would return) can come
// after some files were handed over: yield must not change the workspace
// or do anything else that cannot be taken back before PlanFiles returns
// nil. It runs on PlanFiles' goroutine.
func PlanFiles(root string, diff []byte, opts Options, yield func(*File) error) (*Patch, error) {
	return planStream(root, diffSource{mem: unsafe.String(unsafe.SliceData(diff), len(diff))}, opts, yield, streamMin, scanPiece)
}

// PlanReader is PlanFiles for a diff of size bytes read through r (a
// file): a big diff is read a piece at a time and each file's section
// again when that file is planned, so it is never held whole. r must not
// change while PlanReader runs.
func PlanReader(root string, r io.ReaderAt, size int64, opts Options, yield func(*File) error) (*Patch, error) {
	src := diffSource{r: r, size: size}
	if size < streamMin {
		// Read once, scanned once: cheaper than reading the sections
		// again, and small.
		text, err := src.slice(0, size)
		if err != nil {
			return nil, err
		}
		src = diffSource{mem: text}
	}
	return planStream(root, src, opts, yield, streamMin, scanPiece)
}

// streamMin is the diff size from which a plan keeps only the sections'
// byte ranges between the scan and the planning of each file, and scans
// (and reads) each section a second time. A smaller diff is read whole
// and keeps its scan whole, which costs less CPU: its scan's line tables
// are about a third of its size, while the files before and after, which
// every plan now holds one at a time, were most of a plan's memory.
const streamMin = 16 << 20

// diffSource is the text of a diff: in memory (mem), or size bytes read
// through r, one piece at a time.
type diffSource struct {
	mem  string
	r    io.ReaderAt
	size int64
}

func (s diffSource) len() int64 {
	if s.r == nil {
		return int64(len(s.mem))
	}
	return s.size
}

// slice returns text[off:end]: a view of the diff in memory, or text read
// into a buffer of its own (which the views scan makes keep alive).
func (s diffSource) slice(off, end int64) (string, error) {
	if s.r == nil {
		return s.mem[off:end], nil
	}
	b := make([]byte, end-off)
	if err := s.readAt(b, off); err != nil {
		return "", err
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// readAt reads len(b) bytes of the diff from off into b (a reader's).
func (s diffSource) readAt(b []byte, off int64) error {
	n, err := s.r.ReadAt(b, off)
	if n == len(b) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("reading the diff: %w", err)
	}
	return nil
}

// pieces reads the text in pieces of at least size bytes, each cut right
// before a line that starts with "diff " (as cutBeforeDiffLines does), or
// the rest of the text.
type pieces struct {
	src  diffSource
	size int
	off  int64  // where the next piece starts
	rest []byte // bytes read past the last piece (a reader's)
	last int    // the last piece's length (a reader's)
}

// next returns the next piece and its offset; "" at the end.
func (p *pieces) next() (string, int64, error) {
	start, total := p.off, p.src.len()
	if start >= total {
		return "", start, nil
	}
	if p.src.r == nil {
		t := p.src.mem[start:]
		if len(t) > p.size {
			if k := strings.Index(t[p.size:], "\ndiff "); k >= 0 {
				t = t[:p.size+k+1]
			}
		}
		p.off += int64(len(t))
		return t, start, nil
	}
	// Room for a piece as long as the last one (a file's section, most
	// often), so that the piece is not copied again and again to grow.
	buf := slices.Grow(p.rest, int(max(0, min(int64(p.last+p.last/8), total-start)-int64(len(p.rest)))))
	p.rest = nil
	from := p.size
	for {
		if len(buf) > from {
			if k := bytes.Index(buf[from:], []byte("\ndiff ")); k >= 0 {
				cut := from + k + 1
				// The rest gets a buffer of its own: the piece's lines are
				// viewed by the scan and must not be overwritten.
				p.rest = bytes.Clone(buf[cut:])
				buf = buf[:cut:cut]
				break
			}
			from = max(p.size, len(buf)-len("\ndiff ")+1)
		}
		at := start + int64(len(buf))
		if at >= total {
			break
		}
		// Read into the piece's own buffer: a piece is as long as a
		// file's section (megabytes), read 64 KiB at a time.
		n := int(min(int64(max(p.size, 64<<10)), total-at))
		buf = slices.Grow(buf, n)
		if err := p.src.readAt(buf[len(buf):len(buf)+n], at); err != nil {
			return "", start, err
		}
		buf = buf[:len(buf)+n]
	}
	p.off += int64(len(buf))
	p.last = len(buf)
	return unsafe.String(unsafe.SliceData(buf), len(buf)), start, nil
}

// indexDiff scans the whole diff for its sections. A diff from min bytes
// on is scanned piece by piece and its sections are kept as byte ranges
// without their hunks (rawFile.off, end, nhunks), unless it needs what
// only a whole scan does (Markdown fences, AgentSmithy's difflib layout)
// or is refused: then, and for a smaller diff, it is scanned whole, as
// before, and the sections keep their hunks.
func indexDiff(src diffSource, min, piece int) (*scanned, error) {
	if src.len() >= int64(min) {
		sc, ok, err := indexPieces(src, piece)
		if err != nil || ok {
			return sc, err
		}
	}
	text, err := src.slice(0, src.len())
	if err != nil {
		return nil, err
	}
	p := len(text) + 1
	if len(text) >= parallelMin {
		p = scanPiece
	}
	sc, err := scanText(text, p)
	if err != nil {
		return nil, err
	}
	for _, f := range sc.files {
		f.nhunks = len(f.hunks)
	}
	return sc, nil
}

// indexPieces is the streamed scan: it reports false when the diff needs
// the whole scan (which then also gives any refusal in its own order).
// Each piece is scanned as scanText scans it; what scanText decides over
// the whole diff is decided here over the pieces: prose, the difflib
// layout (every hunk must fit it; the last hunk of the diff is judged
// last) and the repairs finishHunk reports, in diff order.
func indexPieces(src diffSource, piece int) (*scanned, bool, error) {
	size := src.len()
	endsNL := false
	if size > 0 {
		last, err := src.slice(size-1, size)
		if err != nil {
			return nil, false, err
		}
		endsNL = last == "\n"
	}
	var files []*rawFile
	finished := &scanned{} // finishHunk's repairs
	prose, hunks := 0, 0
	fits, rawBad := true, false
	// The latest hunk waits for the next one: only then is it known not
	// to be the last of the diff, which the difflib test treats apart.
	type pendingHunk struct {
		f  *rawFile
		hi int
		h  *rawHunk
	}
	var pending *pendingHunk
	flush := func(last bool) bool {
		if pending == nil {
			return true
		}
		f, hi, h := pending.f, pending.hi, pending.h
		pending = nil
		if fits {
			body, _, ok := undifflib(h.body, last && !endsNL)
			switch {
			case !ok:
				fits = false
			case h.numbered:
				if o, n := count(body); o != h.oldCount || n != h.newCount {
					fits = false
				} else if o, n := count(h.body); o != h.oldCount || n != h.newCount {
					rawBad = true
				}
			}
		}
		return finished.finishHunk(f, hi, h) == nil
	}
	ps := &pieces{src: src, size: piece}
	baseLine := 0
	for {
		text, start, err := ps.next()
		if err != nil {
			return nil, false, err
		}
		if text == "" {
			break
		}
		if strings.Contains(text, "```") || strings.Contains(text, "~~~") || hasLineWithPrefix(text, "*** Begin Patch") {
			return nil, false, nil
		}
		fs, n, err := scanLines(text, func(k int) int { return baseLine + k + 1 })
		if err != nil {
			return nil, false, nil
		}
		prose += n
		for fi, f := range fs {
			f.end = start + int64(len(text))
			if fi+1 < len(fs) {
				f.end = start + fs[fi+1].off
			}
			f.off += start
			for hi, h := range f.hunks {
				if !flush(false) {
					return nil, false, nil
				}
				pending = &pendingHunk{f, hi, h}
				hunks++
			}
			// Only the header is kept; the hunks are scanned again when
			// the file is planned.
			f.nhunks = len(f.hunks)
			f.hunks = nil
			for i, l := range f.header {
				f.header[i] = strings.Clone(l) // not a view of a piece read
			}
		}
		files = append(files, fs...)
		baseLine += strings.Count(text, "\n")
	}
	if !flush(true) || len(files) == 0 || fits && rawBad && hunks > 0 {
		return nil, false, nil
	}
	sc := &scanned{files: files}
	if prose > 0 {
		sc.repairs = append(sc.repairs, fmt.Sprintf("ignored %d line(s) of prose around the diff", prose))
	}
	sc.repairs = append(sc.repairs, finished.repairs...)
	return sc, true, nil
}

// errRescan is an internal inconsistency: a section scanned again did not
// give what the scan of the whole diff found.
var errRescan = errors.New("the diff's section scanned differently on its own (a bug in smith: please report it with the diff)")

// stream is one streamed plan: the scan of the whole diff and what was
// parsed of each section so far.
type stream struct {
	src    diffSource
	sc     *scanned
	parsed []bool  // the section's hunks were parsed (once is enough)
	perr   []error // and what refused them
	parser hunkParser
	// section is the buffer a section read again is read into (a reader's
	// diff): once its hunks are parsed nothing views it (go-diff copies
	// every line it keeps), so the next section reuses it.
	section []byte
}

// rawHunks returns the hunks of section i, scanning it again when the
// index kept only its byte range.
func (st *stream) rawHunks(i int) ([]*rawHunk, error) {
	rf := st.sc.files[i]
	if rf.hunks != nil || rf.nhunks == 0 {
		return rf.hunks, nil
	}
	var text string
	if st.src.r != nil {
		n := int(rf.end - rf.off)
		st.section = slices.Grow(st.section[:0], n)[:n]
		if err := st.src.readAt(st.section, rf.off); err != nil {
			return nil, err
		}
		text = unsafe.String(unsafe.SliceData(st.section), n)
	} else {
		text = st.src.mem[rf.off:rf.end]
	}
	base := rf.line
	fs, _, err := scanLines(text, func(k int) int { return base + k })
	if err != nil || len(fs) != 1 || len(fs[0].hunks) != rf.nhunks {
		return nil, &ParseError{Line: rf.line, Msg: errRescan.Error(), Err: err}
	}
	f := fs[0]
	discard := &scanned{} // its repairs were reported by the whole scan
	for hi, h := range f.hunks {
		if err := discard.finishHunk(f, hi, h); err != nil {
			return nil, err
		}
	}
	return f.hunks, nil
}

// hunks parses the hunks of section i.
func (st *stream) hunks(i int) ([]*hunk, error) {
	raw, err := st.rawHunks(i)
	var hs []*hunk
	if err == nil {
		hs, err = st.parser.parse(raw)
	}
	st.parsed[i], st.perr[i] = true, err
	return hs, err
}

// fail returns err, unless a section of the diff does not parse: Plan
// parses the whole diff before anything else, so the first such refusal
// in diff order wins over any other.
func (st *stream) fail(err error) error {
	for i := range st.sc.files {
		if !st.parsed[i] {
			st.hunks(i)
		}
		if st.perr[i] != nil {
			return st.perr[i]
		}
	}
	return err
}

// planStream is PlanFiles over src; min and piece are streamMin and
// scanPiece but for tests, which stream small diffs in small pieces.
func planStream(root string, src diffSource, opts Options, yield func(*File) error, min, piece int) (*Patch, error) {
	ws, err := OpenWorkspace(root, opts.Protect...)
	if err != nil {
		return nil, fmt.Errorf("workspace root: %w", err)
	}
	defer ws.Close()
	sc, err := indexDiff(src, min, piece)
	if err != nil {
		return nil, err
	}
	st := &stream{src: src, sc: sc, parsed: make([]bool, len(sc.files)), perr: make([]error, len(sc.files))}
	headers := make([]*fileDiff, len(sc.files))
	index := make(map[*fileDiff]int, len(sc.files))
	for i, rf := range sc.files {
		if headers[i], err = parseFileHeader(rf, rf.nhunks); err != nil {
			st.parsed[i], st.perr[i] = true, err
			return nil, st.fail(err)
		}
		index[headers[i]] = i
	}
	fds, sections := mergeRepeated(headers)
	repairs := sc.repairs
	if len(sections) > 0 {
		n := 0
		for _, secs := range sections {
			n += len(secs) - 1
		}
		repairs = append(repairs, fmt.Sprintf("merged %d repeated file section(s) into one each; their hunks are matched against the same original", n))
	}
	if opts.Target != "" && len(fds) != 1 {
		return nil, st.fail(fmt.Errorf("a target path was given but the diff has %d files", len(fds)))
	}
	p := &Patch{Root: ws.root, protect: opts.Protect}
	paths := newPathCache()
	src0 := source{ws: ws, readFile: opts.ReadFile, seen: paths, bin: &textBin{}}
	if opts.Strip == 0 && opts.Target == "" {
		found, err := foreignNames(ws, fds, src0)
		if err != nil {
			return nil, st.fail(err)
		}
		repairs = append(repairs, found...)
		if k, example := detectStrip(ws, fds, src0); k > 0 {
			opts.Strip = k
			repairs = append(repairs, fmt.Sprintf("names like %s only match files with %d leading components removed; applied as -p%d", example, k, k))
		}
	}
	// Plan reported these after every file's own repairs, in two rounds.
	var sequential, eolPairs []string
	seen := map[string]bool{}
	nextHunk, nfiles := 1, 0
	for _, fd := range fds {
		secs := sections[fd]
		if secs == nil {
			if fd.hunks, err = st.hunks(index[fd]); err != nil {
				return nil, st.fail(err)
			}
		} else {
			// secs[0] is mergeRepeated's copy of fd before the merge: fd's
			// own hunks; the others are the sections merged into it. They
			// share their hunks with fd, as when the whole diff was parsed
			// first (reversing fd reverses them).
			for k, sec := range secs {
				i := index[sec]
				if k == 0 {
					i = index[fd]
				}
				if sec.hunks, err = st.hunks(i); err != nil {
					return nil, st.fail(err)
				}
				fd.hunks = append(fd.hunks, sec.hunks...)
			}
		}
		if opts.Reverse {
			fd.reverse()
		}
		f, err := planFile(src0, fd, opts)
		if err == nil && secs != nil && f != nil {
			if g := planSequential(ws, paths, f, secs, opts); g != nil {
				f = g
				sequential = append(sequential, fmt.Sprintf("%s: instead, applied its %d sections one after another, as git apply does: some of their hunks only match the text the sections before them make; the hunks shown are their combined effect", f.Path, len(secs)))
			}
		}
		// What the File does not keep is dropped with the section.
		fd.hunks = nil
		for _, sec := range secs {
			sec.hunks = nil
		}
		if err != nil {
			return nil, st.fail(err)
		}
		if f == nil {
			continue // not selected
		}
		for _, path := range []string{f.Path, f.OldPath} {
			if path != "" && seen[path] {
				return nil, st.fail(&ParseError{Line: fd.line, Msg: fmt.Sprintf("%s appears twice in the diff; split it into two diffs", path)})
			}
		}
		seen[f.Path] = true
		if f.OldPath != "" {
			seen[f.OldPath] = true
		}
		for _, j := range f.jobs {
			if j.h.eolPair && j.done && j.place.reachesEOF {
				what := "adds the final newline"
				if !f.lines.noFinalNewline() {
					what = "removes the final newline"
				}
				eolPairs = append(eolPairs, fmt.Sprintf("%s hunk %d: it removes its last line and adds it back unchanged at the end of the file, without a '\\ No newline at end of file' marker; read as the change it is: it %s", f.Path, j.pub.Index, what))
			}
		}
		nfiles++
		f.ID, f.root = nfiles, p.Root
		for _, h := range f.Hunks {
			h.ID = nextHunk
			nextHunk++
		}
		if err := yield(f); err != nil {
			return nil, err
		}
	}
	repairs = append(repairs, sequential...)
	p.Repairs = append(repairs, eolPairs...)
	return p, nil
}

// textBin holds the memory of a File handed back to its streamed plan
// (File.Release), which the plan reuses for the next file it reads, splits
// and renders instead of fresh memory: on a short-lived process, fresh
// memory is mostly the kernel's work of faulting it in page by page (the
// page faults were a third of smith apply --check's CPU on a 1 MB diff).
// Each buffer is taken (set to nil here) by the file that uses it, so no
// two files ever share one.
type textBin struct {
	before, after []byte
	text          []string
	eol           []eol
}

// takeAfter returns the buffer to render into (nil: none).
func (b *textBin) takeAfter() []byte {
	if b == nil {
		return nil
	}
	buf := b.after
	b.after = nil
	return buf
}

// Release hands f's texts back to the streamed plan that made it
// (PlanFiles, PlanReader), which reuses their memory for the files it
// plans next: for a caller that keeps nothing of a file's contents once
// it has looked at it (smith apply --check). Afterwards f's Before and
// After are nil and f must not be rendered, written or diffed; its other
// fields (the report's) stay as they are. It does nothing to a File Plan
// returned, or one whose texts came from Options.ReadFile.
func (f *File) Release() {
	b := f.bin
	if b == nil {
		return
	}
	f.bin = nil
	if f.Before != nil {
		b.before = f.Before
	}
	if f.After != nil {
		b.after = f.After
	}
	if f.lines.text != nil {
		b.text, b.eol = f.lines.text, f.lines.eol
	}
	f.Before, f.After, f.lines, f.jobs = nil, nil, lines{}, nil
}
