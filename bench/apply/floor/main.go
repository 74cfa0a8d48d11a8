// Command floor is the floor of bench/apply.sh for a whole `smith apply`:
// the least a Go program built on go-diff (smith's required diff parser)
// can do to apply a diff, and, with -durable, the least it can do to apply
// it as smith promises to (undoably, and with nothing lost in a crash).
//
// It parses the diff with go-diff's ParseMultiFileDiff, reads every target,
// checks every context and removed line at the exact place the hunk states
// (git apply's check, without its search for a moved hunk, and without
// smith's: no fuzz, no conflict report, no preview), and writes the result.
//
//   - Plain (the default), it writes each file in place, as git apply does,
//     with no fsync: no Go program applying with go-diff costs less.
//   - With -durable it does only what an undoable, crash-safe apply needs:
//     the old text of every file in one journal, fsynced before any target
//     is touched; each new text to a temporary file beside its target,
//     fsynced and renamed over it; each folder fsynced once; and the
//     journal's commit record, fsynced. smith apply does that and more (its
//     change records and dialogs state, the as-applied diff, the plan's
//     checks), so it cannot cost less than this.
//
// It handles what the bench diffs hold (modified text files, hunks in
// order) and fails on anything else; bench/apply.sh compares the tree it
// writes with smith's.
//
// With -syncfs as well, the targets are not fsynced one by one but by one
// syncfs after the renames: the "one pass at the end" of issue #17, which
// smith does not do (docs/benchmarks.md says why).
//
//	floor [-durable [-syncfs] -journal DIR] -C WORKSPACE PATCH
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sourcegraph/go-diff/diff"
	"golang.org/x/sys/unix"
)

func main() {
	durable := flag.Bool("durable", false, "journal the old texts and write atomically, with fsync")
	journal := flag.String("journal", "", "folder of the journal (with -durable)")
	ws := flag.String("C", ".", "the workspace the diff's paths are relative to")
	syncfs := flag.Bool("syncfs", false, "with -durable: no fsync per file, one syncfs after the renames")
	flag.Parse()
	if flag.NArg() != 1 || (*durable && *journal == "") {
		fmt.Fprintln(os.Stderr, "usage: floor [-durable [-syncfs] -journal DIR] -C WORKSPACE PATCH")
		os.Exit(2)
	}
	if err := run(*ws, flag.Arg(0), *durable, *syncfs, *journal); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

// target is one file of the diff: where it is, its old text and its new.
type target struct {
	path     string
	old, new []byte
}

func run(ws, patch string, durable, syncfs bool, journal string) error {
	b, err := os.ReadFile(patch)
	if err != nil {
		return err
	}
	fds, err := diff.ParseMultiFileDiff(b)
	if err != nil {
		return err
	}
	// Every file is checked before any is written, as smith does.
	ts := make([]target, 0, len(fds))
	for _, fd := range fds {
		name, ok := strings.CutPrefix(fd.NewName, "b/")
		if !ok || fd.OrigName != "a/"+name {
			return fmt.Errorf("%s: only modifications of a file are handled", fd.NewName)
		}
		p := filepath.Join(ws, filepath.FromSlash(name))
		old, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		nt, err := applyHunks(old, fd.Hunks)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		ts = append(ts, target{path: p, old: old, new: nt})
	}
	if !durable {
		for _, t := range ts {
			if err := os.WriteFile(t.path, t.new, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	return writeDurably(ts, journal, syncfs)
}

// applyHunks returns old with hunks applied at the lines they state, or an
// error at the first context or removed line that differs.
func applyHunks(old []byte, hunks []*diff.Hunk) ([]byte, error) {
	out := make([]byte, 0, len(old)+len(old)/8)
	pos, line := 0, 1 // pos is the offset of old's line number line
	for _, h := range hunks {
		start := int(h.OrigStartLine)
		if h.OrigLines == 0 {
			start++ // an insertion states the line it follows
		}
		for ; line < start; line++ {
			n := lineLen(old[pos:])
			if n == 0 {
				return nil, fmt.Errorf("hunk at line %d: the file has %d lines", start, line-1)
			}
			out = append(out, old[pos:pos+n]...)
			pos += n
		}
		body := h.Body
		for len(body) > 0 {
			l := body[:lineLen(body)]
			body = body[len(l):]
			switch l[0] {
			case ' ', '-':
				ol := old[pos : pos+lineLen(old[pos:])]
				if !bytes.Equal(ol, l[1:]) {
					return nil, fmt.Errorf("line %d differs from the hunk's", line)
				}
				if l[0] == ' ' {
					out = append(out, ol...)
				}
				pos += len(ol)
				line++
			case '+':
				out = append(out, l[1:]...)
			default:
				return nil, fmt.Errorf("hunk at line %d: %q is not handled", start, l)
			}
		}
	}
	return append(out, old[pos:]...), nil
}

// lineLen is the length of b's first line with its newline.
func lineLen(b []byte) int {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return i + 1
	}
	return len(b)
}

// writeDurably writes ts as an undoable, crash-safe apply must: the journal
// of old texts first, then every target atomically, then the commit. With
// syncfs, the targets are not synced one by one: one syncfs of the
// workspace's file system after the renames (the journal restores the old
// texts after a crash before the commit).
func writeDurably(ts []target, journal string, syncfs bool) error {
	if err := os.MkdirAll(journal, 0o700); err != nil {
		return err
	}
	var rec []byte
	for _, t := range ts {
		rec = binary.AppendUvarint(rec, uint64(len(t.path)))
		rec = append(rec, t.path...)
		rec = binary.AppendUvarint(rec, uint64(len(t.old)))
		rec = append(rec, t.old...)
	}
	jp := filepath.Join(journal, "journal")
	j, err := os.OpenFile(jp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer j.Close()
	if _, err := j.Write(rec); err != nil {
		return err
	}
	if err := j.Sync(); err != nil {
		return err
	}
	if err := syncDir(journal); err != nil {
		return err
	}
	dirs := map[string]bool{}
	for i, t := range ts {
		tmp := t.path + ".floor-" + strconv.Itoa(i)
		if err := writeSynced(tmp, t.new, !syncfs); err != nil {
			return err
		}
		if err := os.Rename(tmp, t.path); err != nil {
			return err
		}
		dirs[filepath.Dir(t.path)] = true
	}
	if syncfs && len(ts) > 0 {
		f, err := os.Open(filepath.Dir(ts[0].path))
		if err != nil {
			return err
		}
		err = unix.Syncfs(int(f.Fd()))
		if err = errors.Join(err, f.Close()); err != nil {
			return err
		}
	} else {
		for d := range dirs {
			if err := syncDir(d); err != nil {
				return err
			}
		}
	}
	if _, err := j.Write([]byte("committed\n")); err != nil {
		return err
	}
	return j.Sync()
}

func writeSynced(p string, b []byte, sync bool) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && sync {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func syncDir(d string) error {
	f, err := os.Open(d)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
