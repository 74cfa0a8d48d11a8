package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/smith-dev/smith/diffapply"
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
}

// planStreamed plans diff file by file. withDiffs keeps each file's
// as-applied diff of the chosen hunks (for the engine).
func planStreamed(root string, pt *patchText, opts diffapply.Options, ids []int, withDiffs bool) (*streamedApply, error) {
	sa := &streamedApply{diffs: map[*diffapply.File]string{}}
	var files []*diffapply.File
	var bad []*diffapply.Hunk
	var firstErr error
	yield := func(f *diffapply.File) error {
		ws, conflicts, err := f.Writes(ids)
		d := describe(f)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		sa.writes += len(ws)
		for _, h := range conflicts {
			bad = append(bad, d.Hunks[h.Index-1])
		}
		if withDiffs && selectsFile(f, ids) {
			sa.diffs[d] = f.Diff(ids)
		}
		files = append(files, d)
		return nil
	}
	var p *diffapply.Patch
	var err error
	if pt.file != nil {
		p, err = diffapply.PlanReader(root, pt.file, pt.size, opts, yield)
	} else {
		p, err = diffapply.PlanFiles(root, pt.data, opts, yield)
	}
	if err != nil {
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
		ID: f.ID, Path: f.Path, OldPath: f.OldPath, Op: f.Op, Mode: f.Mode,
		Conflict: f.Conflict, Existed: f.Existed, BeforeHash: f.BeforeHash,
		Hunks: make([]*diffapply.Hunk, len(f.Hunks)),
	}
	for i, h := range f.Hunks {
		c := *h
		c.File = d
		if h.OK() {
			c.Header, c.Body = "", "" // the report shows them for conflicts only
		}
		d.Hunks[i] = &c
	}
	return d
}

// apply writes a streamed plan directly, without the engine: it plans the
// diff again, whole, and refuses when a file changed since the first plan
// (the report describes that one).
func (sa *streamedApply) apply(ctx context.Context, root string, pt *patchText, opts diffapply.Options, ids []int, journal string) error {
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
// streamed plan reads a piece at a time, or anything else (standard
// input, a pipe) read whole, as readPatch reads it.
type patchText struct {
	name string
	data []byte
	file *os.File // a regular file of size bytes
	size int64
}

func openPatch(s *IOStreams, args []string) (*patchText, error) {
	if len(args) > 0 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return nil, usageErrorf("cannot read the patch: %v", err)
		}
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return &patchText{name: args[0], file: f, size: fi.Size()}, nil
		}
		f.Close()
	}
	b, name, err := readPatch(s, args)
	if err != nil {
		return nil, err
	}
	return &patchText{name: name, data: b}, nil
}

// bytes returns the whole diff.
func (pt *patchText) bytes() ([]byte, error) {
	if pt.file == nil {
		return pt.data, nil
	}
	b, err := io.ReadAll(io.NewSectionReader(pt.file, 0, pt.size))
	if err != nil {
		return nil, usageErrorf("cannot read the patch: %v", err)
	}
	return b, nil
}

func (pt *patchText) close() {
	if pt.file != nil {
		pt.file.Close()
	}
}
