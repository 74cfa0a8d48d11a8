// Package spool keeps bytes that a process needs back later, once, out of
// its memory: in an unlinked temporary file, so that nothing of it is
// left on disk whichever way the process ends, and nothing of it is ever
// synced. smith apply keeps the as-applied diffs of a large patch there
// until the engine asks for each, and smith undo the texts of large files
// it replaces while its disk commit may still roll back.
package spool

import (
	"fmt"
	"os"
)

// File is a spool: bytes appended with Put, read back with Read. Its
// temporary file is made on the first Put. A File is for one goroutine;
// Close lets every byte go.
type File struct {
	dir, pattern string // of the temporary file (os.CreateTemp)
	f            *os.File
	size         int64
	unlinked     bool
}

// New is a spool whose temporary file is made in dir ("": the system's
// temporary folder) with a name after pattern (os.CreateTemp).
func New(dir, pattern string) *File { return &File{dir: dir, pattern: pattern} }

// Range is where Put left some bytes.
type Range struct{ off, n int64 }

// Len is the number of bytes in r.
func (r Range) Len() int64 { return r.n }

// Put appends b. An error (the temporary file cannot be made, or the disk
// is full) leaves the spool as it was: the caller keeps b itself.
func (s *File) Put(b []byte) (Range, error) {
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, s.pattern)
		if err != nil {
			return Range{}, err
		}
		s.f, s.unlinked = f, os.Remove(f.Name()) == nil
	}
	r := Range{s.size, int64(len(b))}
	if _, err := s.f.WriteAt(b, r.off); err != nil {
		return Range{}, err
	}
	s.size += r.n
	return r, nil
}

// Read gives the bytes Put left at r.
func (s *File) Read(r Range) ([]byte, error) {
	if s.f == nil || r.off < 0 || r.off+r.n > s.size {
		return nil, fmt.Errorf("bytes %d to %d are not in the spool", r.off, r.off+r.n)
	}
	b := make([]byte, r.n)
	if _, err := s.f.ReadAt(b, r.off); err != nil {
		return nil, err
	}
	return b, nil
}

// Close removes the temporary file; a closed spool is empty again.
func (s *File) Close() {
	if s.f == nil {
		return
	}
	s.f.Close()
	if !s.unlinked {
		os.Remove(s.f.Name()) // a system that does not remove an open file
	}
	s.f, s.size = nil, 0
}
