package diffapply

import (
	"bytes"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	udiff "github.com/aymanbagabas/go-udiff"
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
	// Protect lists directories that are never written, even inside the
	// root: smith's own state folder (a diff must not forge its journal).
	Protect []string
	// NoHash leaves the files unhashed, for a plan that is reported and
	// never written (smith apply --check: hashing every file was 4 % of
	// its CPU on a 1 MB diff): an existing file's BeforeHash is
	// HashNotTaken, which refuses any write it guards.
	NoHash bool
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

	protect []string // Options.Protect, for Apply
}

// File is one file of a Patch.
type File struct {
	ID      int         `json:"id"`                // 1-based, in diff order
	Path    string      `json:"path"`              // target, relative to the root, slash-separated
	OldPath string      `json:"oldPath,omitempty"` // source of a rename or copy
	Op      Op          `json:"op"`
	Mode    fs.FileMode `json:"mode,omitempty"` // permission bits to set; 0 keeps them
	// OldMode is the permission bits the diff names for the file before
	// ("old mode", "deleted file mode"); 0 when it names none. It is
	// only told (a warning names the mode a patch changes), never checked.
	OldMode  fs.FileMode `json:"-"`
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
	root  string   // the Patch's, for Writes
	bin   *textBin // where Release hands the texts back (a streamed plan's)
}

// NewFileMode is the permission bits a write without a mode (Write.Mode
// 0) gives a file it creates: a file git creates as "new file mode 100644"
// gets them from either.
const NewFileMode fs.FileMode = 0o644

// SetsMode reports whether writing f sets permission bits a write of its
// content alone does not give: a mode change, or a file created with
// other bits than NewFileMode (an executable one). A writer that keeps no
// modes (smith's undo journal) can write every other file as well as
// Apply does.
func (f *File) SetsMode() bool {
	return f.Mode != 0 && (f.Op != OpCreate || f.Mode != NewFileMode)
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
func (h *Hunk) Where() string { return string(h.AppendWhere(make([]byte, 0, 64))) }

// AppendWhere appends Where to b: appended, not formatted, since smith
// apply prints it for every hunk.
func (h *Hunk) AppendWhere(b []byte) []byte {
	b = append(b, "at line "...)
	b = strconv.AppendInt(b, int64(h.Line), 10)
	b = append(b, " ("...)
	notes := 0
	note := func(s string) {
		if notes > 0 {
			b = append(b, ", "...)
		}
		b = append(b, s...)
		notes++
	}
	if h.Offset != 0 {
		b = append(b, "offset "...)
		if h.Offset > 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(h.Offset), 10)
		notes++
	}
	switch h.Level {
	case LevelExact:
		if h.Offset == 0 {
			note("exact")
		}
	case LevelUnique:
		note("unique match, no line numbers")
	case LevelWhitespace:
		note("whitespace-insensitive")
	case LevelFuzz:
		note("fuzz " + strconv.Itoa(h.Fuzz) + ", whitespace-insensitive")
	}
	return append(b, ')')
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
	var files []*File
	p, err := PlanFiles(root, diff, opts, func(f *File) error {
		f.bin = nil // kept: Release leaves it whole
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.Files = files
	return p, nil
}

// planFile resolves, reads and matches one file; nil when not selected.
func planFile(src source, fd *fileDiff, opts Options) (*File, error) {
	ws := src.ws
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
	for i, r := range []string{oldRel, newRel} {
		if r != "" && (i == 0 || r != oldRel) {
			if _, err := src.resolve(r); err != nil {
				return nil, err
			}
		}
	}
	if fd.newMode != 0 {
		f.Mode = fs.FileMode(fd.newMode & 0o777)
	}
	if fd.oldMode != 0 {
		f.OldMode = fs.FileMode(fd.oldMode & 0o777)
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
	switch {
	case existed && opts.NoHash:
		f.BeforeHash = HashNotTaken
	case existed:
		f.BeforeHash = Hash(before)
	}
	f.checkExistence(fd, exists)
	var text string
	if opts.ReadFile == nil {
		// os.ReadFile's buffer is ours alone and, as File.Before, never
		// written again (a Patch is read-only): the lines view it rather
		// than a copy of every file.
		text = unsafe.String(unsafe.SliceData(before), len(before))
	} else {
		text = string(before) // the caller's buffer: it may change after Plan
	}
	f.lines = src.bin.splitLines(text)
	f.conv = f.lines.convention()
	m := &matcher{l: f.lines}
	// The hunks, their jobs and the jobs' old lines are allocated once
	// for the file, not once per hunk.
	n, nold := len(fd.hunks), 0
	for _, h := range fd.hunks {
		nold += h.oldCount
	}
	if n > 0 {
		pubs, jobs, olds := make([]Hunk, n), make([]job, n), make([]string, nold)
		f.Hunks, f.jobs = make([]*Hunk, n), make([]*job, n)
		// The headers, in one string: never written again once made.
		ends := make([]int, n)
		hdrs := make([]byte, 0, 28*n)
		for i, h := range fd.hunks {
			hdrs = appendHeaderOf(hdrs, h)
			ends[i] = len(hdrs)
		}
		headers := unsafe.String(unsafe.SliceData(hdrs), len(hdrs))
		for i, h := range fd.hunks {
			header := headers[:ends[i]]
			if i > 0 {
				header = headers[ends[i-1]:ends[i]]
			}
			pubs[i] = Hunk{
				Index: i + 1, File: f, Header: header, Numbered: h.numbered,
				OldStart: h.oldStart, OldLines: h.oldCount, NewStart: h.newStart, NewLines: h.newCount,
				Body: bodyOf(h),
			}
			k := min(h.oldCount, len(olds))
			jobs[i] = makeJob(h, &pubs[i], olds[:0:k])
			olds = olds[k:]
			f.Hunks[i], f.jobs[i] = &pubs[i], &jobs[i]
		}
	}
	if f.Conflict == nil {
		m.locate(f.jobs, opts.Strict)
	}
	f.After = f.renderInto(src.bin.takeAfter(), nil)
	if f.Op == OpModify && len(f.After) == 0 && len(fd.hunks) > 0 && allOK(f) && emptiesFile(fd) {
		f.Op = OpDelete // "+0,0": the new side is no file at all (GNU patch does the same)
	}
	if f.Op == OpDelete && f.Conflict == nil && len(f.After) != 0 && allOK(f) && !fd.dropCopy {
		f.Conflict = &Conflict{Reason: fmt.Sprintf("the diff deletes %s, but %d byte(s) of it would remain", f.Path, len(f.After))}
	}
	if f.Op == OpDelete {
		f.After = nil
	}
	if src.bin != nil && src.readFile == nil {
		f.bin = src.bin // the texts are all ours: Release may hand them back
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
	return string(appendHeaderOf(make([]byte, 0, 32+len(h.section)), h))
}

// appendHeaderOf appends headerOf(h) to b.
func appendHeaderOf(b []byte, h *hunk) []byte {
	if !h.numbered {
		b = append(b, "@@ ... @@"...)
		if h.section != "" {
			b = append(b, ' ')
			b = append(b, h.section...)
		}
		return b
	}
	return appendHunkHeader(b, h.oldStart, h.oldCount, h.newStart, h.newCount, h.section)
}

func bodyOf(h *hunk) string {
	if h.body != "" {
		return h.body
	}
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

// mergeRepeated joins sections that modify the same file under the same
// names, as chat answers do with one fenced diff per change. Their hunks
// are all matched against the original file, so text one of them writes
// can never be matched by another. When that leaves a hunk without a
// match, Plan tries the sections one after another (planSequential), which
// is what git apply does with them. Renames, copies, creations and
// deletions are never merged. sections maps each merged section to the
// sections it was made of, in order.
func mergeRepeated(fds []*fileDiff) (out []*fileDiff, sections map[*fileDiff][]*fileDiff) {
	first := map[[2]string]*fileDiff{}
	out = fds[:0:0]
	for _, fd := range fds {
		plain := fd.renameFrom == "" && fd.copyFrom == "" && !fd.newFile && !fd.deletedFile &&
			fd.oldName != "" && fd.oldName != "/dev/null" && fd.newName != "/dev/null" && fd.oldMode == fd.newMode
		key := [2]string{fd.oldName, fd.newName}
		if prev, ok := first[key]; ok && plain {
			if sections == nil {
				sections = map[*fileDiff][]*fileDiff{}
			}
			if sections[prev] == nil {
				alone := *prev
				alone.hunks = slices.Clone(prev.hunks)
				sections[prev] = []*fileDiff{&alone}
			}
			sections[prev] = append(sections[prev], fd)
			prev.hunks = append(prev.hunks, fd.hunks...)
			continue
		}
		if plain {
			first[key] = fd
		}
		out = append(out, fd)
	}
	return out, sections
}

// planSequential plans the sections of one file one after another, each
// against the text the ones before it made (git's t4127), for when
// matching all their hunks against the original left one without a
// match. It returns nil when merged matched fully, or when some section
// does not match the text before it: merged, with its conflicts, stands.
// Otherwise the result is planned anew as the diff from the original to
// the final text, so that its hunks can be previewed, chosen and reverted
// like any other, and it is checked to give exactly that text.
func planSequential(ws *Workspace, paths *pathCache, merged *File, secs []*fileDiff, opts Options) *File {
	if merged.Conflict != nil || allOK(merged) || merged.Op != OpModify {
		return nil
	}
	if opts.Reverse {
		// Undone last first. Their hunks are already reversed: they are
		// the merged section's, which Plan reversed; a plain modification's
		// headers name the same file either way.
		secs = slices.Clone(secs)
		slices.Reverse(secs)
	}
	path, text := merged.Path, merged.Before
	orig := source{ws: ws, readFile: opts.ReadFile, seen: paths}
	for _, sec := range secs {
		sopts := opts
		sopts.ReadFile = func(rel string) ([]byte, bool, error) {
			if rel == path {
				return text, true, nil
			}
			return orig.read(rel)
		}
		f, err := planFile(source{ws: ws, readFile: sopts.ReadFile, seen: paths}, sec, sopts)
		if err != nil || f == nil || f.Conflict != nil || !allOK(f) || f.Op != OpModify || f.Path != path {
			return nil
		}
		text = f.After
	}
	combined := udiff.Unified("a/"+path, "b/"+path, string(merged.Before), string(text))
	if combined == "" {
		return nil // the sections undo each other: nothing sensible to show
	}
	fds, _, err := parse([]byte(combined))
	if err != nil || len(fds) != 1 {
		return nil
	}
	sopts := opts
	sopts.Strip, sopts.Target = 1, ""
	f, err := planFile(orig, fds[0], sopts)
	if err != nil || f == nil || f.Conflict != nil || !allOK(f) || f.Path != path || !bytes.Equal(f.After, text) {
		return nil
	}
	return f
}
