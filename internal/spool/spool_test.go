package spool

import (
	"bytes"
	"os"
	"testing"
)

// TestPutRead: bytes put are read back exactly, in any order, from a file
// that is not in its folder (unlinked at once), and a range the spool does
// not hold is an error, not a read of something else.
func TestPutRead(t *testing.T) {
	dir := t.TempDir()
	s := New(dir, ".spool-*")
	defer s.Close()
	parts := [][]byte{[]byte("one\n"), {}, bytes.Repeat([]byte("x"), 1<<16), []byte("last")}
	var rs []Range
	for _, p := range parts {
		r, err := s.Put(p)
		if err != nil {
			t.Fatal(err)
		}
		if r.Len() != int64(len(p)) {
			t.Errorf("Put of %d bytes gave a range of %d", len(p), r.Len())
		}
		rs = append(rs, r)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the spool is in its folder: %v", left)
	}
	for i := len(parts) - 1; i >= 0; i-- {
		b, err := s.Read(rs[i])
		if err != nil || !bytes.Equal(b, parts[i]) {
			t.Errorf("part %d read back as %.20q, %v", i, b, err)
		}
	}
	if _, err := s.Read(Range{off: 3, n: 1 << 20}); err == nil {
		t.Error("a range past the spool's end was read")
	}
	s.Close()
	if _, err := s.Read(rs[0]); err == nil {
		t.Error("a closed spool still gave bytes")
	}
}

// TestPutFailsWithoutAFolder: a spool whose folder cannot take its file
// says so on Put, and holds nothing.
func TestPutFailsWithoutAFolder(t *testing.T) {
	s := New(t.TempDir()+"/missing", ".spool-*")
	defer s.Close()
	if _, err := s.Put([]byte("x")); err == nil {
		t.Fatal("Put into a folder that does not exist succeeded")
	}
	if _, err := s.Read(Range{n: 1}); err == nil {
		t.Error("a spool that made no file gave bytes")
	}
}
