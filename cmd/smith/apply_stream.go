package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/internal/spool"
)

// streamedApply is what smith apply keeps of a plan streamed with
// diffapply.PlanFiles: a Patch whose files are descriptions without
// contents (enough for the report), and for each file what applying needs
// (its as-applied diff, for the engine), so that a 50 MB diff is never
// held with every file before and after. --json and --preview print the
// contents and plan as before.
type streamedApply struct {
	patch     *diffapply.Patch
	writesErr error // what Patch.Writes(ids) would return
	writes    int   // how many writes it would return
	diffs     map[*diffapply.File]string
	// plans holds, beside a diff held in memory, the plan of that diff
	// when diffapply made it (File.AppliedPlan), for the engine, which
	// then need not plan it again (daemon.PlannedChange).
	plans map[*diffapply.File]*diffapply.File
	// unfaithful holds the files whose as-applied diff, planned against
	// the text before, does not give what the plan gives (File.AppliedPlan's
	// ok): such a diff cannot stand for the change (applyJournalled).
	unfaithful map[*diffapply.File]bool
	// A large diff's as-applied diffs wait in an unlinked temporary file
	// (spool, at spooled) until the engine asks for each: together they
	// can be twice the diff (go-udiff's diff of a large file rewrites
	// most of it), and the engine needs one at a time.
	spool   *spool.File
	spooled map[*diffapply.File]spool.Range
	// kept are the writes of every file (File.Writes), while keepWrites:
	// a patch the engine does not write (a copy, a mode change, a file
	// git creates with its mode) is then written from them, not planned
	// again. Kept for a patch under spoolDiffsFrom, up to planBudget
	// bytes of contents (most are the texts the plans kept hold anyway).
	kept       []diffapply.Write
	keptBytes  int64
	keepWrites bool
}

// spoolDiffsFrom is the diff size from which the as-applied diffs are
// spooled (streamedApply.spool): the size from which the diff itself is
// read in pieces.
const spoolDiffsFrom = spillAt

// asApplied gives f's as-applied diff of the chosen hunks: its size, and
// its text and plan (nil: none) when the engine asks for them (once:
// what it held is let go).
func (sa *streamedApply) asApplied(f *diffapply.File) asAppliedDiff {
	if r, ok := sa.spooled[f]; ok {
		return asAppliedDiff{size: r.Len(), unfaithful: sa.unfaithful[f], text: func() (string, *diffapply.File, error) {
			b, err := sa.spool.Read(r)
			if err != nil {
				return "", nil, fmt.Errorf("reading back the diff of %s from a temporary file: %w", f.Path, err)
			}
			return string(b), nil, nil
		}}
	}
	d, plan := sa.diffs[f], sa.plans[f]
	// Handed over, not kept: the engine holds the diff until its journal
	// has it, the plan until it has planned the change with it.
	delete(sa.diffs, f)
	delete(sa.plans, f)
	return asAppliedDiff{size: int64(len(d)), unfaithful: sa.unfaithful[f], text: func() (string, *diffapply.File, error) { return d, plan, nil }}
}

// close removes the spool.
func (sa *streamedApply) close() {
	if sa != nil && sa.spool != nil {
		sa.spool.Close()
	}
}

// keepDiffs says what planStreamed keeps of each file's as-applied diff
// of the chosen hunks (for the engine): nothing, the text, or its place in
// the spool.
type keepDiffs int

const (
	noDiffs keepDiffs = iota
	diffsInMemory
	diffsSpooled
)

// planBudget is how many bytes of files' texts (before and after) the
// plans kept for the engine may hold (streamedApply.plans): the 1 MB
// benchmark's 25 files hold 2.3 MB; on a 7 MB diff, plans of every file
// raised the peak RSS by a third.
const planBudget = 8 << 20

// planStreamed plans diff file by file, keeping each file's as-applied
// diff as keep says; lim (nil: none) learns of each file.
func planStreamed(root string, pt *patchText, opts diffapply.Options, ids []int, keep keepDiffs, lim *memLimit) (*streamedApply, error) {
	sa := &streamedApply{diffs: map[*diffapply.File]string{}, plans: map[*diffapply.File]*diffapply.File{}, unfaithful: map[*diffapply.File]bool{}, spooled: map[*diffapply.File]spool.Range{}}
	withDiffs := keep != noDiffs
	if !withDiffs {
		// Reported, never written: no write needs the files' hashes.
		opts.NoHash = true
	}
	if keep == diffsSpooled {
		sa.spool = spool.New("", "smith-apply-*.diffs")
	}
	sa.keepWrites = keep == diffsInMemory
	var files []*diffapply.File
	var bad []*diffapply.Hunk
	var plannedBytes int64 // the texts of the plans kept
	var firstErr error
	yield := func(f *diffapply.File) error {
		ws, conflicts, err := f.Writes(ids)
		d := describe(f)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		sa.writes += len(ws)
		retained := false // f's texts are in kept
		if sa.keepWrites {
			var n int64
			for _, w := range ws {
				n += int64(len(w.Content))
			}
			if sa.keptBytes += n; sa.keptBytes <= planBudget {
				sa.kept, retained = append(sa.kept, ws...), true
			} else {
				sa.kept, sa.keepWrites = nil, false
			}
		}
		for _, h := range conflicts {
			bad = append(bad, d.Hunks[h.Index-1])
		}
		lim.grow(f, withDiffs && selectsFile(f, ids))
		switch {
		case !withDiffs || !selectsFile(f, ids):
		case f.Op == diffapply.OpCopy:
			// The creation of its target (copyDiff), from the text its
			// write gives it: a copy writes one file.
			var content []byte
			for _, w := range ws {
				content = w.Content
			}
			diff, ok := copyDiff(root, f.Path, content)
			if !ok {
				sa.unfaithful[d] = true
			}
			if sa.spool == nil {
				sa.diffs[d] = diff
			} else if r, err := sa.spool.Put([]byte(diff)); err != nil {
				sa.diffs[d] = diff
			} else {
				sa.spooled[d] = r
			}
		case sa.spool != nil:
			// go-udiff's diff, as the engine recorded before AppliedDiff:
			// on a large file it gives up on the fine diff and records a
			// few large hunks, where the plan's natural hunks (108 750 on
			// the 55 MB benchmark) cost the engine's records and its undo
			// more memory than the 3x bound of issue #17 allows
			// (docs/benchmarks.md, "smith apply (target 3)").
			diff, ok := f.CheckedDiff(ids)
			if !ok {
				sa.unfaithful[d] = true
			}
			if r, err := sa.spool.Put([]byte(diff)); err != nil {
				// No temporary file, or a full one: held in memory after all.
				sa.diffs[d] = diff
			} else {
				sa.spooled[d] = r
			}
		default:
			// A plan holds its file's texts before and after, with their
			// line tables and hunks, until the engine takes it: plans are
			// kept for the files up to planBudget bytes of texts.
			keep := plannedBytes+int64(len(f.Before)+len(f.After)) <= planBudget
			diff, plan, ok := f.AppliedPlan(ids, true)
			if !ok {
				sa.unfaithful[d] = true
			}
			if !keep {
				plan = nil
			}
			if plan != nil {
				sa.plans[d] = plan
				plannedBytes += int64(len(f.Before) + len(f.After))
			} else {
				// A copy of exactly its size: go-udiff's builder doubled.
				diff = strings.Clone(diff)
			}
			sa.diffs[d] = diff
		}
		files = append(files, d)
		if sa.plans[d] == nil && !retained {
			// Nothing views f's texts any more (its diff is a copy, its
			// description has none): the plan reuses their memory.
			f.Release()
		}
		return nil
	}
	var p *diffapply.Patch
	var err error
	if pt.r != nil {
		p, err = diffapply.PlanReader(root, pt.r, pt.size, opts, yield)
	} else {
		p, err = diffapply.PlanFiles(root, pt.data, opts, yield)
	}
	if err != nil {
		sa.close()
		return nil, err
	}
	p.Files = files
	sa.patch = p
	switch {
	case firstErr != nil:
		sa.writesErr = firstErr
	case len(bad) > 0:
		sa.writesErr = &diffapply.ConflictError{Hunks: bad}
	}
	return sa, nil
}

// describe copies what the report says of f, without its contents: the
// copy has no Before or After, and the bodies of hunks that matched are
// dropped (a conflict shows its body).
func describe(f *diffapply.File) *diffapply.File {
	d := &diffapply.File{
		ID: f.ID, Path: f.Path, OldPath: f.OldPath, Op: f.Op, Mode: f.Mode, OldMode: f.OldMode,
		Conflict: f.Conflict, Existed: f.Existed, BeforeHash: f.BeforeHash,
		Hunks: make([]*diffapply.Hunk, len(f.Hunks)),
	}
	hs := make([]diffapply.Hunk, len(f.Hunks)) // one allocation for the file's
	for i, h := range f.Hunks {
		c := &hs[i]
		*c = *h
		c.File = d
		if h.OK() {
			c.Header, c.Body = "", "" // the report shows them for conflicts only
		}
		d.Hunks[i] = c
	}
	return d
}

// apply writes a streamed plan directly, without the engine: the writes it
// kept, else it plans the diff again, whole, and refuses when a file
// changed since the first plan (the report describes that one). Either
// way the commit refuses a file changed since it was planned (the write's
// ExpectHash).
func (sa *streamedApply) apply(ctx context.Context, root string, pt *patchText, opts diffapply.Options, ids []int, journal string) error {
	if sa.keepWrites {
		if len(sa.kept) == 0 {
			return nil // as Patch.Apply: the chosen hunks change nothing
		}
		w, err := diffapply.OpenWorkspace(sa.patch.Root, opts.Protect...)
		if err != nil {
			return fmt.Errorf("workspace root: %w", err)
		}
		defer w.Close()
		return w.Commit(ctx, sa.kept, journal)
	}
	diff, err := pt.bytes()
	if err != nil {
		return err
	}
	p, err := diffapply.Plan(root, diff, opts)
	if err != nil {
		return err
	}
	if len(p.Files) != len(sa.patch.Files) {
		return errors.New("the files changed while smith was planning; run it again")
	}
	for i, f := range p.Files {
		if f.BeforeHash != sa.patch.Files[i].BeforeHash || f.Path != sa.patch.Files[i].Path {
			return &diffapply.StaleError{Path: f.Path, Want: sa.patch.Files[i].BeforeHash, Got: f.BeforeHash}
		}
	}
	return p.Apply(ctx, ids, journal)
}

// patchText is the diff smith apply was given: a regular file, which a
// streamed plan reads a piece at a time, standard input, held in chunks
// of its own (io.ReadAll's doubling buffer peaked at several times the
// diff), or anything else (a pipe named as the patch) read whole, as
// readPatch reads it.
type patchText struct {
	name string
	data []byte
	r    io.ReaderAt // a regular file or standard input, of size bytes
	file *os.File
	size int64
}

func openPatch(s *IOStreams, args []string) (*patchText, error) {
	switch {
	case len(args) > 0 && args[0] != "-":
		f, err := os.Open(args[0])
		if err != nil {
			return nil, cannotReadPatch(args[0], err)
		}
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return &patchText{name: args[0], r: f, file: f, size: fi.Size()}, nil
		}
		f.Close()
	case len(args) > 0 || !s.InTTY:
		c, err := readChunks(s.In, spillAt)
		if err != nil {
			return nil, usageErrorf("reading standard input: %v", err)
		}
		pt := &patchText{name: "<stdin>", r: c, size: c.size}
		if c.file != nil {
			pt.r, pt.file = c.file, c.file
		}
		return pt, nil
	}
	b, name, err := readPatch(s, args)
	if err != nil {
		return nil, err
	}
	return &patchText{name: name, data: b}, nil
}

// len is the diff's size in bytes.
func (pt *patchText) len() int64 {
	if pt.r == nil {
		return int64(len(pt.data))
	}
	return pt.size
}

// bytes returns the whole diff.
func (pt *patchText) bytes() ([]byte, error) {
	if pt.r == nil {
		return pt.data, nil
	}
	b := make([]byte, pt.size)
	if _, err := pt.r.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, cannotReadPatch(pt.name, err)
	}
	return b, nil
}

func (pt *patchText) close() {
	if pt.file != nil {
		pt.file.Close()
	}
}

// chunks is a text read into buffers of chunkSize bytes, which are never
// copied to grow: a diff held in memory costs its size. A text longer than
// the spill size goes to an unlinked temporary file instead (file), which
// the plan then reads a piece at a time like a patch file.
type chunks struct {
	bs   [][]byte
	size int64
	file *os.File
}

const chunkSize = 1 << 20

// spillAt is the size from which standard input goes to a temporary file:
// from there on a plan reads the diff in pieces (diffapply's streamMin).
const spillAt = 16 << 20

func readChunks(r io.Reader, spill int64) (*chunks, error) {
	c := &chunks{}
	for {
		if c.size >= spill && c.file == nil {
			if f, err := os.CreateTemp("", "smith-apply-*.diff"); err == nil {
				os.Remove(f.Name()) // nothing to clean up, whatever happens
				c.file = f
				for _, b := range c.bs {
					if _, err := f.Write(b); err != nil {
						f.Close()
						return nil, err
					}
				}
				c.bs = nil
			}
		}
		if c.file != nil {
			n, err := io.Copy(c.file, r)
			c.size += n
			if err != nil {
				c.file.Close()
				return nil, err
			}
			return c, nil
		}
		b := make([]byte, chunkSize)
		n, err := io.ReadFull(r, b)
		if n > 0 {
			c.bs = append(c.bs, b[:n])
			c.size += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return c, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (c *chunks) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= c.size {
			return n, io.EOF
		}
		n += copy(p[n:], c.bs[at/chunkSize][at%chunkSize:])
	}
	return n, nil
}
