package diffapply

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// Options tune Plan. The zero value detects the path prefix, uses the
// whole matching ladder and reads files from disk.
type Options struct {
	// Strip removes that many leading path components from the names in
	// the diff, like patch -pN. 0 detects (a/ and b/ prefixes, absolute
	// paths inside the root, then whichever of -p0/-p1 names an existing
	// file); StripNone means -p0.
	Strip int
	// Strict allows only byte-exact matches (levels exact, offset, unique).
	Strict bool
	// Reverse plans the diff backwards (undo an applied diff).
	Reverse bool
	// Target overrides the path in the diff headers (a stream's "file"
	// field wins over the diff). Only for a diff of one file.
	Target string
	// Select, if set, keeps only the files whose target path (relative,
	// slash-separated) it accepts; the others are left out of the Patch
	// (their paths are still checked: an unsafe path refuses the diff).
	Select func(path string) bool
	// ReadFile, if set, supplies pre-images instead of the disk (an
	// editor's open buffers). path is relative and slash-separated;
	// exists=false means the file does not exist. It may be called from
	// Plan's goroutine only.
	ReadFile func(path string) (content []byte, exists bool, err error)
}

// StripNone is Options.Strip for -p0: use names exactly as written.
const StripNone = -1

// Op is what a file entry does.
type Op string

// File operations.
const (
	OpModify Op = "modify"
	OpCreate Op = "create"
	OpDelete Op = "delete"
	OpRename Op = "rename"
	OpCopy   Op = "copy"
)

// Patch is a planned diff: every file with its pre-image, each hunk with
// where and how it matched (or why it conflicts). A Patch is immutable
// after Plan returns and safe for concurrent reads.
type Patch struct {
	Root    string   `json:"root"`
	Files   []*File  `json:"files"`
	Repairs []string `json:"repairs,omitempty"` // what was fixed in the diff text
}

// File is one file of a Patch.
type File struct {
	ID       int         `json:"id"`                // 1-based, in diff order
	Path     string      `json:"path"`              // target, relative to the root, slash-separated
	OldPath  string      `json:"oldPath,omitempty"` // source of a rename or copy
	Op       Op          `json:"op"`
	Mode     fs.FileMode `json:"mode,omitempty"` // permission bits to set; 0 keeps them
	Hunks    []*Hunk     `json:"hunks"`
	Conflict *Conflict   `json:"conflict,omitempty"` // a file-level refusal (missing file, ...)
	// Existed tells whether the pre-image (OldPath or Path) exists;
	// BeforeHash is its Hash, or HashAbsent.
	Existed    bool   `json:"existed"`
	BeforeHash string `json:"beforeHash"`
	// Before is the pre-image; After is the result of all hunks without a
	// conflict (nil for a deletion).
	Before []byte `json:"-"`
	After  []byte `json:"-"`

	lines lines
	conv  string
	jobs  []*job
}

// Hunk is one hunk of a File and the outcome of matching it.
type Hunk struct {
	ID    int   `json:"id"`    // 1-based across the whole patch, in diff order
	Index int   `json:"index"` // 1-based within its file
	File  *File `json:"-"`
	// The header after repair and recount; Numbered is false for "@@ ... @@".
	Header   string `json:"header"`
	OldStart int    `json:"oldStart"`
	OldLines int    `json:"oldLines"`
	NewStart int    `json:"newStart"`
	NewLines int    `json:"newLines"`
	Numbered bool   `json:"numbered"`
	Body     string `json:"body"` // " ", "-", "+" lines, each ending in "\n"
	// Level, Line (1-based, in the pre-image), Offset from the stated line
	// and Fuzz (context lines dropped) say where it matched; Conflict is
	// set instead when it did not.
	Level    Level     `json:"level,omitempty"`
	Line     int       `json:"line,omitempty"`
	Offset   int       `json:"offset"`
	Fuzz     int       `json:"fuzz,omitempty"`
	Conflict *Conflict `json:"conflict,omitempty"`
}

// Conflict explains why a hunk (or file) cannot be applied safely.
type Conflict struct {
	Reason      string `json:"reason"`
	NearLine    int    `json:"nearLine,omitempty"`    // closest place it nearly matched
	NearMatched int    `json:"nearMatched,omitempty"` // how many of its old lines match there
	NearTotal   int    `json:"nearTotal,omitempty"`
	Candidates  []int  `json:"candidates,omitempty"` // lines of an ambiguous match
	Detail      string `json:"detail,omitempty"`     // the first difference
}

func (c *Conflict) String() string {
	s := c.Reason
	if len(c.Candidates) > 0 {
		s += fmt.Sprintf(" (lines %s)", joinInts(c.Candidates, 5))
	} else if c.NearLine > 0 {
		s += fmt.Sprintf("; nearest at line %d (%d of %d lines match)", c.NearLine, c.NearMatched, c.NearTotal)
	}
	if c.Detail != "" {
		s += "; " + c.Detail
	}
	return s
}

// OK reports whether the hunk matched.
func (h *Hunk) OK() bool { return h.Conflict == nil && h.File.Conflict == nil }

// Where describes the match: "at line 120 (offset +18, whitespace-insensitive)".
func (h *Hunk) Where() string {
	var notes []string
	if h.Offset != 0 {
		notes = append(notes, fmt.Sprintf("offset %+d", h.Offset))
	}
	switch h.Level {
	case LevelExact:
		if h.Offset == 0 {
			notes = append(notes, "exact")
		}
	case LevelUnique:
		notes = append(notes, "unique match, no line numbers")
	case LevelWhitespace:
		notes = append(notes, "whitespace-insensitive")
	case LevelFuzz:
		notes = append(notes, fmt.Sprintf("fuzz %d, whitespace-insensitive", h.Fuzz))
	}
	return fmt.Sprintf("at line %d (%s)", h.Line, strings.Join(notes, ", "))
}

// Describe is a one-line report: "src/a.go: hunk 2 matches at line 120
// (offset +18, whitespace-insensitive)" or why it conflicts.
func (h *Hunk) Describe() string {
	if c := h.File.Conflict; c != nil {
		return fmt.Sprintf("%s: hunk %d conflicts: %s", h.File.Path, h.Index, c)
	}
	if h.Conflict != nil {
		return fmt.Sprintf("%s: hunk %d conflicts: %s", h.File.Path, h.Index, h.Conflict)
	}
	return fmt.Sprintf("%s: hunk %d matches %s", h.File.Path, h.Index, h.Where())
}

// Conflicts returns every hunk that cannot be applied (file-level
// conflicts count for each of the file's hunks) and the files refused
// without hunks.
func (p *Patch) Conflicts() (hunks []*Hunk, files []*File) {
	for _, f := range p.Files {
		if f.Conflict != nil && len(f.Hunks) == 0 {
			files = append(files, f)
		}
		for _, h := range f.Hunks {
			if !h.OK() {
				hunks = append(hunks, h)
			}
		}
	}
	return hunks, files
}

// Plan parses diff, repairs it, resolves and confines every path under
// root, reads the pre-images and locates every hunk. It writes nothing.
// A returned error means the diff as a whole was refused (unreadable,
// binary, an unsafe path); conflicts of single hunks or files are in the
// Patch instead.
func Plan(root string, diff []byte, opts Options) (*Patch, error) {
	ws, err := newWorkspace(root)
	if err != nil {
		return nil, fmt.Errorf("workspace root: %w", err)
	}
	fds, sc, err := parse(diff)
	if err != nil {
		return nil, err
	}
	if opts.Target != "" && len(fds) != 1 {
		return nil, fmt.Errorf("a target path was given but the diff has %d files", len(fds))
	}
	p := &Patch{Root: ws.root, Repairs: sc.repairs}
	if opts.Strip == 0 && opts.Target == "" {
		if k, example := detectStrip(ws, fds, source{ws: ws, readFile: opts.ReadFile}); k > 0 {
			opts.Strip = k
			p.Repairs = append(p.Repairs, fmt.Sprintf("names like %s only match files with %d leading components removed; applied as -p%d", example, k, k))
		}
	}
	planned := make([]*File, len(fds))
	errs := make([]error, len(fds))
	plan := func(i int) {
		if opts.Reverse {
			fds[i].reverse()
		}
		planned[i], errs[i] = planFile(ws, fds[i], opts)
	}
	if opts.ReadFile != nil || opts.Select != nil {
		// Callbacks are documented to run on Plan's goroutine.
		for i := range fds {
			plan(i)
		}
	} else {
		parseAll(len(fds), len(diff), plan)
	}
	seen := map[string]bool{}
	nextHunk := 1
	for i, fd := range fds {
		f, err := planned[i], errs[i]
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue // not selected
		}
		for _, path := range []string{f.Path, f.OldPath} {
			if path != "" && seen[path] {
				return nil, &ParseError{Line: fd.line, Msg: fmt.Sprintf("%s appears twice in the diff; split it into two diffs", path)}
			}
		}
		seen[f.Path] = true
		if f.OldPath != "" {
			seen[f.OldPath] = true
		}
		f.ID = len(p.Files) + 1
		for _, h := range f.Hunks {
			h.ID = nextHunk
			nextHunk++
		}
		p.Files = append(p.Files, f)
	}
	return p, nil
}

// names works out the source and target of a file diff.
func names(ws *workspace, fd *fileDiff, opts Options, exists func(string) bool) (oldRel, newRel string, err error) {
	if opts.Target != "" {
		t, err := ws.rel(opts.Target)
		if err != nil {
			return "", "", err
		}
		switch {
		case fd.newFile || fd.oldName == "/dev/null":
			return "", t, nil
		case fd.deletedFile || fd.newName == "/dev/null":
			return t, "", nil
		}
		return t, t, nil
	}
	oldName, newName := fd.oldName, fd.newName
	explicit := false
	if fd.renameFrom != "" {
		oldName, newName, explicit = fd.renameFrom, fd.renameTo, true
	} else if fd.copyFrom != "" {
		oldName, newName, explicit = fd.copyFrom, fd.copyTo, true
	}
	if oldName == "/dev/null" || fd.newFile {
		oldName = ""
	}
	if newName == "/dev/null" || fd.deletedFile {
		newName = ""
	}
	if oldName == "" && newName == "" {
		return "", "", &ParseError{Line: fd.line, Msg: "the diff names no file; give the target path"}
	}
	var cands [][2]string
	switch {
	case explicit || opts.Strip == StripNone:
		cands = [][2]string{{oldName, newName}}
	case opts.Strip > 0:
		o, n, err := strip(oldName, newName, opts.Strip)
		if err != nil {
			return "", "", err
		}
		cands = [][2]string{{o, n}}
	default:
		cands = detect(oldName, newName)
	}
	// The first reading whose source exists wins; failing that, the first
	// safe reading (a new file, or a missing one reported as a conflict).
	var firstErr error
	var firstOK *[2]string
	for _, c := range cands {
		o, n, err := relPair(ws, c)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if !explicit && o != "" && n != "" && o != n {
			// Two names for one file (no rename header): like patch, take
			// the one that exists, the old name first.
			if exists(o) {
				n = o
			} else {
				o = n
			}
		}
		src := o
		if src == "" {
			src = n
		}
		if exists(src) {
			return o, n, nil
		}
		if firstOK == nil {
			firstOK = &[2]string{o, n}
		}
	}
	if firstOK == nil {
		return "", "", firstErr
	}
	return firstOK[0], firstOK[1], nil
}

// trimAnnotation drops trailing blanks and the note models append to
// header names: "--- a/f.go (original)", "+++ b/f.go (modified)".
func trimAnnotation(name string) string {
	name = strings.TrimRight(name, " \r") // trailing blanks are never meant
	i := strings.LastIndex(name, " (")
	if i < 0 || !strings.HasSuffix(name, ")") {
		return name
	}
	switch strings.ToLower(name[i+2 : len(name)-1]) {
	case "original", "modified", "new", "new file", "updated", "changed", "deleted", "before", "after", "old", "current", "proposed":
		return name[:i]
	}
	return name
}

func relPair(ws *workspace, c [2]string) (string, string, error) {
	var out [2]string
	for i, name := range c {
		if name == "" {
			continue
		}
		r, err := ws.rel(name)
		if err != nil {
			return "", "", err
		}
		out[i] = r
	}
	return out[0], out[1], nil
}

func strip(o, n string, k int) (string, string, error) {
	var out [2]string
	for i, name := range []string{o, n} {
		if name == "" {
			continue
		}
		s, ok := stripComponents(name, k)
		if !ok {
			return "", "", &PathError{Path: name, Rule: RuleStrip}
		}
		out[i] = s
	}
	return out[0], out[1], nil
}

// detect lists the plausible readings of the names, most likely first:
// git's a/ b/ prefixes (AgentSmithy's "a//abs/path" included), GNU diff's
// "old/x new/x" directories, then the names as written and with one
// component stripped.
func detect(o, n string) [][2]string {
	asIs := [2]string{o, n}
	p1o, p1n, err := strip(o, n, 1)
	p1 := [2]string{p1o, p1n}
	gitStyle := true
	for _, name := range []string{o, n} {
		if name != "" && !strings.HasPrefix(name, "a/") && !strings.HasPrefix(name, "b/") {
			gitStyle = false
		}
	}
	switch {
	case gitStyle && err == nil:
		return [][2]string{p1, asIs}
	case o != "" && n != "" && err == nil && p1o == p1n && o != n:
		return [][2]string{p1, asIs}
	case err == nil && !strings.HasPrefix(o, "/") && !strings.HasPrefix(n, "/"):
		return [][2]string{asIs, p1}
	}
	return [][2]string{asIs}
}

// source reads pre-images: from Options.ReadFile, or from disk through
// the workspace's confinement.
type source struct {
	ws       *workspace
	readFile func(path string) ([]byte, bool, error)
}

func (s source) read(rel string) ([]byte, bool, error) {
	if s.readFile != nil {
		return s.readFile(rel)
	}
	abs, err := s.ws.resolve(rel)
	if err != nil {
		return nil, false, err
	}
	b, err := os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// exists reports whether a safe relative path names an existing file.
func (s source) exists(rel string) bool {
	if _, err := s.ws.rel(rel); err != nil {
		return false
	}
	if s.readFile == nil {
		abs, err := s.ws.resolve(rel)
		if err != nil {
			return false
		}
		_, err = os.Stat(abs)
		return err == nil
	}
	_, ok, err := s.readFile(rel)
	return ok && err == nil
}

// detectStrip finds the one strip level for the whole diff when the
// per-file reading (a/ b/ or none) misses an existing source file but
// stripping more components finds every one of them — typically a model
// that put the project's own directory after a/ (a/proj/src/x.go). Created
// files then use the same level. It returns 0 when the per-file reading
// works, or when no level or more than one level fits.
func detectStrip(ws *workspace, fds []*fileDiff, src source) (int, string) {
	var names []string
	for _, fd := range fds {
		if fd.renameFrom != "" || fd.copyFrom != "" || fd.newFile || fd.oldName == "/dev/null" || fd.oldName == "" {
			continue
		}
		names = append(names, fd.oldName)
	}
	if len(names) == 0 {
		return 0, ""
	}
	found := func(name string) bool {
		for _, c := range detect(name, name) {
			if rel, err := ws.rel(c[0]); err == nil && src.exists(rel) {
				return true
			}
		}
		return false
	}
	missing := false
	for _, n := range names {
		if !found(n) {
			missing = true
			break
		}
	}
	if !missing {
		return 0, ""
	}
	var fits []int
	for k := 2; k <= 4; k++ {
		ok := true
		for _, n := range names {
			s, valid := stripComponents(n, k)
			if !valid || strings.HasPrefix(n, "/") {
				ok = false
				break
			}
			if rel, err := ws.rel(s); err != nil || !src.exists(rel) {
				ok = false
				break
			}
		}
		if ok {
			fits = append(fits, k)
		}
	}
	if len(fits) != 1 {
		return 0, ""
	}
	return fits[0], names[0]
}

// planFile resolves, reads and matches one file; nil when not selected.
func planFile(ws *workspace, fd *fileDiff, opts Options) (*File, error) {
	src := source{ws: ws, readFile: opts.ReadFile}
	read, exists := src.read, src.exists
	oldRel, newRel, err := names(ws, fd, opts, exists)
	if err != nil {
		return nil, err
	}
	f := &File{Path: newRel, Op: OpModify}
	switch {
	case oldRel == "":
		f.Op = OpCreate
	case newRel == "":
		f.Op, f.Path = OpDelete, oldRel
	case fd.renameFrom != "" && oldRel != newRel:
		f.Op, f.OldPath = OpRename, oldRel
	case fd.copyFrom != "" && oldRel != newRel:
		f.Op, f.OldPath = OpCopy, oldRel
	}
	if opts.Select != nil && !opts.Select(f.Path) {
		return nil, nil
	}
	// Confinement applies to every path we touch, whoever supplies the text.
	for _, r := range []string{oldRel, newRel} {
		if r != "" {
			if _, err := ws.resolve(r); err != nil {
				return nil, err
			}
		}
	}
	if fd.newMode != 0 {
		f.Mode = fs.FileMode(fd.newMode & 0o777)
	}
	from := oldRel
	if from == "" {
		from = newRel
	}
	before, existed, err := read(from)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", from, err)
	}
	f.Before, f.Existed, f.BeforeHash = before, existed, HashAbsent
	if existed {
		f.BeforeHash = Hash(before)
	}
	f.checkExistence(fd, exists)
	f.lines = splitLines(before)
	f.conv = f.lines.convention()
	m := &matcher{l: f.lines}
	for i, h := range fd.hunks {
		pub := &Hunk{
			Index: i + 1, File: f, Header: headerOf(h), Numbered: h.numbered,
			OldStart: h.oldStart, OldLines: h.oldCount, NewStart: h.newStart, NewLines: h.newCount,
			Body: bodyOf(h),
		}
		f.Hunks = append(f.Hunks, pub)
		f.jobs = append(f.jobs, newJob(h, pub))
	}
	if f.Conflict == nil {
		m.locate(f.jobs, opts.Strict)
	}
	f.After = f.render(nil)
	if f.Op == OpModify && len(f.After) == 0 && len(fd.hunks) > 0 && allOK(f) && emptiesFile(fd) {
		f.Op = OpDelete // "+0,0": the new side is no file at all (GNU patch does the same)
	}
	if f.Op == OpDelete && f.Conflict == nil && len(f.After) != 0 && allOK(f) && !fd.dropCopy {
		f.Conflict = &Conflict{Reason: fmt.Sprintf("the diff deletes %s, but %d byte(s) of it would remain", f.Path, len(f.After))}
	}
	if f.Op == OpDelete {
		f.After = nil
	}
	return f, nil
}

func emptiesFile(fd *fileDiff) bool {
	for _, h := range fd.hunks {
		if h.newStart != 0 || h.newCount != 0 {
			return false
		}
	}
	return true
}

func allOK(f *File) bool {
	for _, h := range f.Hunks {
		if h.Conflict != nil {
			return false
		}
	}
	return true
}

// checkExistence turns a missing source or an existing new file into a
// file-level conflict. A modification of a missing file whose hunks only
// add lines is a creation (AgentSmithy writes "@@ -0,0 +1,N @@" with
// ordinary headers).
func (f *File) checkExistence(fd *fileDiff, exists func(string) bool) {
	onlyAdds := len(fd.hunks) > 0
	for _, h := range fd.hunks {
		if h.oldCount != 0 {
			onlyAdds = false
		}
	}
	switch {
	case f.Op == OpModify && !f.Existed && onlyAdds:
		f.Op = OpCreate
	case f.Op == OpCreate && f.Existed && len(f.Before) > 0:
		f.Conflict = &Conflict{Reason: fmt.Sprintf("the diff creates %s, but it already exists", f.Path)}
	case f.Op != OpCreate && !f.Existed:
		src := f.Path
		if f.OldPath != "" {
			src = f.OldPath
		}
		f.Conflict = &Conflict{Reason: fmt.Sprintf("%s does not exist", src)}
	case (f.Op == OpRename || f.Op == OpCopy) && exists(f.Path):
		f.Conflict = &Conflict{Reason: fmt.Sprintf("the diff %ss %s to %s, but %s already exists", f.Op, f.OldPath, f.Path, f.Path)}
	}
}

func headerOf(h *hunk) string {
	if !h.numbered {
		s := "@@ ... @@"
		if h.section != "" {
			s += " " + h.section
		}
		return s
	}
	s := fmt.Sprintf("@@ -%d,%d +%d,%d @@", h.oldStart, h.oldCount, h.newStart, h.newCount)
	if h.section != "" {
		s += " " + h.section
	}
	return s
}

func bodyOf(h *hunk) string {
	var b strings.Builder
	n := 0
	for _, l := range h.lines {
		n += len(l.text) + 2
	}
	b.Grow(n)
	for _, l := range h.lines {
		b.WriteByte(l.op)
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// selected reports whether hunk id is in ids (nil means all).
func selected(ids []int, id int) bool { return ids == nil || slices.Contains(ids, id) }

// Render returns the file's content with the chosen hunks applied (nil ids
// means all; hunks with a conflict are skipped). The result is never nil.
// Hunks are placed where Plan matched them in Before, so any subset
// renders consistently.
func (f *File) Render(ids []int) []byte { return f.render(ids) }

func (f *File) render(ids []int) []byte {
	var ps []*job
	for _, j := range f.jobs {
		if j.pub.Conflict == nil && j.done && selected(ids, j.pub.ID) {
			ps = append(ps, j)
		}
	}
	slices.SortStableFunc(ps, func(a, b *job) int { return a.place.at - b.place.at })
	l := f.lines
	var out strings.Builder
	out.Grow(len(f.Before) + 64)
	emit := func(text, eol string) {
		out.WriteString(text)
		out.WriteString(eol)
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
		for _, op := range ops {
			switch op.op {
			case ' ':
				emit(l.text[oi], l.eol[oi].String())
				oi++
			case '-':
				oi++
			case '+':
				emit(op.text, f.addedEOL(op))
			}
		}
		pos = oi
		if j.place.reachesEOF {
			switch {
			case j.h.newNoNL:
				wantFinal = -1
			case j.h.oldNoNL:
				wantFinal = 1
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
	s := out.String()
	if strings.HasPrefix(string(f.Before), bom) && !strings.HasPrefix(s, bom) && s != "" && !f.diffHasBOM() {
		s = bom + s // the diff rewrote line 1 without the mark it never saw
	}
	switch {
	case wantFinal < 0:
		s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
	case wantFinal > 0 && s != "" && !strings.HasSuffix(s, "\n"):
		s += f.conv // an old-side marker with the file's own last line
	}
	return []byte(s)
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

// addedEOL is the ending of an added line: the file's convention, or for
// a file that was empty the diff's own ending of that line (so a new file
// is created byte for byte as the diff says, mixed endings included).
func (f *File) addedEOL(op hunkLine) string {
	switch {
	case f.lines.len() > 0:
		return f.conv
	case op.cr:
		return "\r\n"
	}
	return "\n"
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
		var chosen []int
		for _, h := range f.Hunks {
			if selected(ids, h.ID) {
				chosen = append(chosen, h.ID)
				if !h.OK() {
					bad = append(bad, h)
				}
			}
		}
		if len(chosen) == 0 && (len(f.Hunks) > 0 || ids != nil) {
			continue
		}
		if f.Conflict != nil && len(f.Hunks) == 0 {
			return nil, fmt.Errorf("%s: %s: %w", f.Path, f.Conflict, ErrConflict)
		}
		if f.Op == OpDelete {
			if len(chosen) != len(f.Hunks) {
				return nil, fmt.Errorf("%s: a deletion cannot be applied in part; choose all its hunks: %w", f.Path, ErrConflict)
			}
			out = append(out, Write{Path: f.Path, ExpectHash: f.BeforeHash})
			continue
		}
		content := f.Render(chosen)
		if f.Op == OpModify && f.Mode == 0 && string(content) == string(f.Before) {
			continue
		}
		w := Write{Path: f.Path, Content: content, Mode: f.Mode, ExpectHash: f.BeforeHash}
		switch f.Op {
		case OpRename, OpCopy:
			w.ExpectHash = HashAbsent
			if f.Mode == 0 {
				w.Mode = modeOf(p.Root, f.OldPath)
			}
			out = append(out, w)
			if f.Op == OpRename {
				out = append(out, Write{Path: f.OldPath, ExpectHash: f.BeforeHash})
			}
			continue
		}
		out = append(out, w)
	}
	if len(bad) > 0 {
		return nil, &ConflictError{Hunks: bad}
	}
	return out, nil
}

func modeOf(root, rel string) fs.FileMode {
	ws, err := newWorkspace(root)
	if err != nil {
		return 0
	}
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
// if a chosen hunk conflicts or a file changed since Plan.
func (p *Patch) Apply(ctx context.Context, ids []int, journalDir string) error {
	ws, err := p.Writes(ids)
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		return errors.New("nothing to apply: the chosen hunks change nothing")
	}
	return Commit(ctx, p.Root, ws, journalDir)
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
