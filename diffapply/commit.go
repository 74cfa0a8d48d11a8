package diffapply

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Write is one file of an atomic transaction.
type Write struct {
	// Path is relative to the root (slash-separated) or absolute inside it.
	Path string
	// Content is the new content; nil deletes the file.
	Content []byte
	// Mode sets the permission bits; 0 keeps the current ones
	// (NewFileMode for a new file).
	Mode fs.FileMode
	// ExpectHash guards against lost updates: "" skips the check,
	// HashAbsent requires that the file does not exist, anything else must
	// equal Hash of the current content.
	ExpectHash string
	// ContentHash is Hash(Content) when the caller knows it ("": Commit
	// computes it). The journal records it: it must be right.
	ContentHash string
	// Before, when set, gives the target's bytes before the commit again
	// (the caller keeps them, in an undo journal): the commit then does
	// not hold them in memory from its first read to its end. It checks
	// the target by their hash before the rename instead of by the bytes,
	// and calls Before only to put the target back should the commit fail
	// after renaming it over; bytes that do not hash to what the commit
	// read are refused. A patch of many large files is otherwise held
	// twice over: every file's new content and every old one.
	Before func() ([]byte, error)
	// ContentFrom, when set (Content nil), gives the new content when the
	// commit writes the target's temp file, which lets go of it at once:
	// a commit of many large files (an undo, whose contents are in its
	// journal) then holds one of them at a time, not all until the first
	// rename. ContentHash must be set: the journal records it before the
	// content is asked for. The write is not a deletion.
	ContentFrom func() ([]byte, error)
	// Expect, when not nil, is the target's bytes as the caller read them
	// (ExpectHash must be their hash, which the journal records): the
	// commit takes them for what it would read before its journal, and so
	// neither reads nor hashes the target then, only looks up its size
	// (another size is refused at once, as a hash that differs would be).
	// Just before the rename it compares the target with them byte for
	// byte, as it does with what it reads: a file changed since the caller
	// read it is never written over. Ignored with Before.
	Expect []byte
}

// writes reports whether w writes content (else it deletes the file).
func (w *Write) writes() bool { return w.Content != nil || w.ContentFrom != nil }

// The journal of one transaction is a directory journalDir/tx-*/ holding
// manifest.json (and, only while a failed commit is undone, a backup of
// every pre-image). It is a write-ahead log; its states:
//
//	staging    written (not synced) before any temp file is created; the
//	           targets are untouched. Recovery deletes the temp files: the
//	           transaction never happened.
//	committed  written and synced once every temp file is durable, before
//	           the first rename. From here on the transaction happens:
//	           recovery rolls it forward, renaming each temp file that is
//	           still there over its target (and removing the targets to
//	           delete), provided the target still holds its old bytes.
//	aborting   written and synced, with the backups, before a commit that
//	           failed mid-way (a rename refused, a target changed under
//	           it) puts back what it renamed. Recovery rolls back: every
//	           target that holds its new bytes gets its backup.
//
// The journal is removed only after the last step of its state is done.
// Every step looks at the file before acting (a target is renamed over
// only while it holds the bytes the step expects, a temp file is removed
// only if present), so a recovery killed at any point and run again ends
// in the same place. A target found in neither its old nor its new state
// was edited by someone else: it is left alone, and the journal is set
// aside as kept-tx-* with the reason reported once, so that it never
// blocks later work. Recovery writes only inside the workspace the
// manifest names, and only if that is the workspace it was asked about.
//
// A single write needs no commit record: its rename is atomic. It still
// gets a staging manifest (not synced) so that a killed process's temp
// file is found and removed by recovery.
//
// Fsyncs (each costs milliseconds on a disk; a kill -9 loses nothing the
// process wrote, so they matter only for an operating-system crash): the
// temp files, concurrently, before the committed record (else a renamed
// target could come back empty); the committed manifest, its directory
// and journalDir (so that recovery finds it); each target directory once,
// after all renames; journalDir once more after the journal is removed,
// so that a success is never replayed. The happy path writes no backups:
// the old bytes are in memory until an abort needs them (or, with
// Write.Before, with the caller, who gives them back then).
type manifest struct {
	Version int            `json:"version"`
	Root    string         `json:"root"`  // the resolved workspace root
	State   string         `json:"state"` // staging, committed or aborting
	Entries []journalEntry `json:"entries"`
	// Touched counts the entries (from the first) that an aborting
	// transaction may have renamed; the others were never touched.
	Touched int `json:"touched,omitempty"`
}

type journalEntry struct {
	Path    string      `json:"path"`             // target, relative to Root, slash-separated
	Temp    string      `json:"temp,omitempty"`   // temp file next to the target, relative to Root
	Backup  string      `json:"backup,omitempty"` // file name in the transaction dir (aborting only)
	Existed bool        `json:"existed"`
	Mode    fs.FileMode `json:"mode"`           // mode of the pre-image
	Dirs    []string    `json:"dirs,omitempty"` // created by the commit, deepest first
	// Before and After are the hashes of the file's two states (or
	// HashAbsent): recovery touches only a file that is in one of them.
	Before string `json:"before"`
	After  string `json:"after"`
}

const (
	stateStaging   = "staging"
	stateCommitted = "committed"
	stateAborting  = "aborting"

	manifestName = "manifest.json"
	keptPrefix   = "kept-"
)

// Commit writes all files or none. Each target must pass the workspace
// rules (see Workspace) and its ExpectHash; contents go to temp files in
// the target's directory, are fsynced and renamed into place. Just before
// each rename the target is verified again (size, modification time,
// hash): a file changed since it was read makes the commit restore what
// it renamed and fail with a *StaleError. With a journalDir, a process
// killed mid-commit leaves a journal that Recover(root, journalDir)
// finishes; with "" there is none. ctx is checked before the first
// rename. Concurrent Commits on the same files are not coordinated.
func Commit(ctx context.Context, root string, writes []Write, journalDir string) error {
	ws, err := OpenWorkspace(root)
	if err != nil {
		return fmt.Errorf("workspace root: %w", err)
	}
	defer ws.Close()
	return ws.Commit(ctx, writes, journalDir)
}

// Commit is the package's Commit within w (whose protected folders are
// refused like any unsafe path).
func (w *Workspace) Commit(ctx context.Context, writes []Write, journalDir string) error {
	return w.commit(ctx, writes, journalDir, nil)
}

// txn is one commit or one recovery at work.
type txn struct {
	d    *os.Root // the workspace
	ws   *Workspace
	tx   string // the transaction directory, "" without a journal
	m    manifest
	hook func(step string) error // tests: called before each change to the file system
	// scratch is verify's buffer, reused from target to target: what it
	// reads is compared and dropped, and fresh memory for every file is
	// paid for in page faults.
	scratch []byte
}

// scratchMax is the largest buffer verify keeps for the next target: a
// larger file is read into memory of its own, let go of after.
const scratchMax = 1 << 20

// step runs the test hook before a change to the file system; a hook may
// fail the step or stop the process (panic, SIGKILL) right there.
func (t *txn) step(format string, args ...any) error {
	if t.hook == nil {
		return nil
	}
	return t.hook(fmt.Sprintf(format, args...))
}

// preimage is what prepare read of a target, to verify it before rename.
type preimage struct {
	bytes []byte
	size  int64
	mtime time.Time
	// load gives bytes again when they were not kept (Write.Before);
	// hash is theirs.
	load func() ([]byte, error)
	hash string
}

// get returns the pre-image's bytes, from load when they were not kept,
// refusing bytes that are not what prepare read.
func (p preimage) get() ([]byte, error) {
	if p.load == nil {
		return p.bytes, nil
	}
	b, err := p.load()
	if err != nil {
		return nil, err
	}
	if got := Hash(b); got != p.hash {
		return nil, fmt.Errorf("the bytes given back for it hash to %s, not %s as read", got, p.hash)
	}
	return b, nil
}

func (w *Workspace) commit(ctx context.Context, writes []Write, journalDir string, hook func(string) error) (err error) {
	return w.run(ctx, writes, journalDir, hook, nil)
}

// Journal is the write-ahead record of a commit whose caller keeps it in
// a journal of its own (CommitLogged) instead of a transaction directory:
// the workspace and, for each write, its target, temp file, the
// directories the commit makes for it and the hashes of its two states.
// It is JSON, so that the caller can store it with its own records.
type Journal struct {
	Root    string         `json:"root"`
	Entries []JournalEntry `json:"entries"`
}

// JournalEntry is one write of a Journal.
type JournalEntry = journalEntry

// CommitLogged is Commit with the write-ahead record kept by the caller:
// once every target is read and checked, and before anything is created,
// it calls log with the commit's Journal, which log must make durable
// (with whatever else the caller journals, such as the bytes before for
// an undo) before it returns; an error from log ends the commit with
// nothing written. Then the temp files are written and synced, and
// renamed over their targets. A process killed (or a system that
// crashed) after log returned leaves the files for Settle, given the
// journal and the bytes before: that saves a directory, a manifest, a
// rename and three fsyncs per commit against Commit's own journal, for a
// caller (smith's engine) that makes a durable record anyway.
func (w *Workspace) CommitLogged(ctx context.Context, writes []Write, log func(*Journal) error) error {
	return w.run(ctx, writes, "", nil, log)
}

func (w *Workspace) run(ctx context.Context, writes []Write, journalDir string, hook func(string) error, log func(*Journal) error) (err error) {
	d, err := w.dir()
	if err != nil {
		return err
	}
	t := &txn{d: d, ws: w, hook: hook, m: manifest{Version: 2, Root: w.real, State: stateStaging}, scratch: []byte{}}
	pre, err := t.prepare(writes)
	if err != nil {
		return err
	}
	if log != nil {
		if err := t.step("write the caller's journal"); err != nil {
			return err
		}
		if err := log(&Journal{Root: w.real, Entries: slices.Clone(t.m.Entries)}); err != nil {
			return err
		}
	}
	if journalDir != "" {
		if t.tx, err = newTxDir(journalDir); err != nil {
			return err
		}
		if err := t.writeManifest(false); err != nil {
			t.discard()
			return err
		}
	}
	if err := t.stage(writes); err != nil {
		t.discard()
		return err
	}
	if err := ctx.Err(); err != nil {
		t.discard()
		return err
	}
	if t.tx != "" && len(writes) > 1 {
		t.m.State = stateCommitted
		if err := t.writeManifest(true); err != nil {
			t.discard()
			return err
		}
		syncDir(journalDir) // the transaction directory's entry
	}
	var dirs []string // to sync once each, after all renames
	for i := range t.m.Entries {
		e := &t.m.Entries[i]
		if err := t.replace(i, pre[i]); err != nil {
			return t.abort(i, pre, err)
		}
		for _, dd := range append([]string{e.Path}, e.Dirs...) {
			if dd = path.Dir(dd); !slices.Contains(dirs, dd) {
				dirs = append(dirs, dd)
			}
		}
	}
	for _, dd := range dirs {
		t.syncDir(dd)
	}
	for _, e := range t.m.Entries {
		if e.After == HashAbsent {
			t.removeEmptyParents(path.Dir(e.Path))
		}
	}
	if t.tx != "" {
		if err := t.finish(); err != nil {
			return fmt.Errorf("all files written, but removing the journal %s failed: %w", t.tx, err)
		}
		if t.m.State == stateCommitted {
			syncDir(journalDir)
		}
	}
	return nil
}

// replace verifies entry i's target against what prepare read and renames
// its temp file over it (or removes it).
func (t *txn) replace(i int, p preimage) error {
	e := &t.m.Entries[i]
	if err := t.verify(e, p); err != nil {
		return err
	}
	if e.Temp == "" {
		if err := t.step("remove %s", e.Path); err != nil {
			return err
		}
		return t.d.Remove(e.Path)
	}
	if err := t.step("rename %s", e.Path); err != nil {
		return err
	}
	return t.d.Rename(e.Temp, e.Path)
}

// verify checks, as late as possible before the rename, that the target
// is still what prepare read: a write in between would otherwise be lost.
// Size and modification time catch most writes without reading; the hash
// catches a same-size write within the file system's timestamp tick.
func (t *txn) verify(e *journalEntry, p preimage) error {
	fi, err := t.d.Lstat(e.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !e.Existed {
			return nil
		}
		return &StaleError{Path: e.Path, Want: e.Before, Got: HashAbsent, During: true}
	case err != nil:
		return err
	case !e.Existed:
		return &StaleError{Path: e.Path, Want: HashAbsent, Got: "a file", During: true}
	case !fi.Mode().IsRegular():
		return &PathError{Path: e.Path, Rule: RuleNotRegular}
	case fi.Size() != p.size || !fi.ModTime().Equal(p.mtime):
		return &StaleError{Path: e.Path, Want: e.Before, Got: "a file of another size or time", During: true}
	}
	b, _, err := readRegularInto(t.d, e.Path, t.scratch)
	if err != nil {
		return err
	}
	if cap(b) <= scratchMax {
		t.scratch = b
	}
	if p.load != nil {
		if got := Hash(b); got != e.Before {
			return &StaleError{Path: e.Path, Want: e.Before, Got: got, During: true}
		}
		return nil
	}
	// prepare hashed p.bytes as e.Before: the same bytes need no hash.
	if !bytes.Equal(b, p.bytes) {
		return &StaleError{Path: e.Path, Want: e.Before, Got: Hash(b), During: true}
	}
	return nil
}

// abort undoes a commit that failed at entry i, through an aborting
// journal when there is one (so that a kill during the undo is finished
// by recovery), else from memory.
func (t *txn) abort(i int, pre []preimage, cause error) error {
	what := fmt.Sprintf("writing %s", t.m.Entries[i].Path)
	var se *StaleError
	if errors.As(cause, &se) {
		what = "commit"
	}
	if i == 0 {
		t.discard() // nothing was renamed yet
		return fmt.Errorf("%s: %w; nothing was written", what, cause)
	}
	backup := func(j int) ([]byte, error) { return pre[j].get() }
	if t.tx != "" {
		// Should the undo below be killed, recovery must roll back, not
		// forward: the backups and the aborting state go to disk first.
		if err := t.writeBackups(i, pre); err != nil {
			cause = errors.Join(cause, err)
		} else {
			t.m.State, t.m.Touched = stateAborting, i
			if err := t.writeManifest(true); err != nil {
				cause = errors.Join(cause, err)
			}
		}
	}
	rb := t.rollBack(i, backup)
	if rb == nil {
		msg := "every file smith had already written was put back"
		if t.tx != "" {
			if err := t.finish(); err != nil {
				// The next Recover finishes the removal (rolling back again
				// finds every file in its old state).
				msg += fmt.Sprintf(", but removing the journal %s failed: %v", t.tx, err)
			}
		}
		return fmt.Errorf("%s: %w; %s", what, cause, msg)
	}
	if t.tx != "" {
		t.setAside()
	}
	return errors.Join(fmt.Errorf("%s: %w", what, cause), rb)
}

// writeBackups writes the pre-images of the entries before i (those
// renamed), synced, for an aborting journal.
func (t *txn) writeBackups(i int, pre []preimage) error {
	var open []*os.File
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	for j := 0; j < i; j++ {
		e := &t.m.Entries[j]
		if !e.Existed {
			continue
		}
		old, err := pre[j].get()
		if err != nil {
			return fmt.Errorf("journal backup of %s: %w", e.Path, err)
		}
		e.Backup = fmt.Sprintf("backup-%d", j)
		p := filepath.Join(t.tx, e.Backup)
		os.Remove(p)
		f, err := createFile(nil, p, old, 0o600)
		if err != nil {
			return fmt.Errorf("journal backup of %s: %w", e.Path, err)
		}
		open = append(open, f)
	}
	return syncAll(open, nil)
}

// discard removes what a commit that renamed nothing created: its temp
// files, the directories made for them, its journal.
func (t *txn) discard() {
	t.removeStaged()
	if t.tx != "" {
		os.RemoveAll(t.tx)
	}
}

// removeEmptyParents removes dir and its parents while they are empty,
// stopping at the root, as git does after deleting a file. Best effort: a
// directory that is not empty, or cannot be removed, simply stays.
func (t *txn) removeEmptyParents(dir string) {
	for dir != "." && dir != "/" && dir != "" {
		if t.d.Remove(dir) != nil {
			return
		}
		dir = path.Dir(dir)
	}
}

// prepare checks every target, verifies ExpectHash and reads the
// pre-images, filling t.m.Entries.
func (t *txn) prepare(writes []Write) ([]preimage, error) {
	t.m.Entries = make([]journalEntry, len(writes))
	pre := make([]preimage, len(writes))
	seen := map[string]bool{}
	for i, w := range writes {
		rel, err := t.ws.rel(w.Path)
		if err != nil {
			return nil, err
		}
		r, err := t.ws.confined(rel)
		if err != nil {
			return nil, err
		}
		if seen[r] {
			return nil, fmt.Errorf("%s is written twice in one transaction", rel)
		}
		seen[r] = true
		e := journalEntry{Path: r, Mode: NewFileMode}
		cur, fi, got, err := t.preimage(r, &w)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", rel, err)
		}
		if fi != nil {
			e.Existed = true
			e.Mode = fi.Mode().Perm()
			pre[i] = preimage{bytes: cur, size: fi.Size(), mtime: fi.ModTime()}
			if w.Before != nil {
				pre[i].bytes, pre[i].load, pre[i].hash = nil, w.Before, got
			}
		}
		if w.ExpectHash != "" && w.ExpectHash != got {
			return nil, &StaleError{Path: rel, Want: w.ExpectHash, Got: got}
		}
		if !w.writes() && !e.Existed {
			return nil, fmt.Errorf("cannot delete %s: it does not exist", rel)
		}
		e.Before, e.After = got, HashAbsent
		if w.Content == nil && w.ContentFrom != nil && w.ContentHash == "" {
			return nil, fmt.Errorf("%s: a content given later needs its hash", rel)
		}
		if w.writes() {
			e.After = w.ContentHash
			if e.After == "" {
				e.After = Hash(w.Content)
			}
			e.Temp = tempName(r)
			// The directories to create are in the staging manifest, so
			// that recovery removes them with the temp file.
			e.Dirs = t.missingDirs(path.Dir(r))
		}
		t.m.Entries[i] = e
	}
	return pre, nil
}

// preimage is what prepare takes of target r (resolved: confined) before
// the commit: its bytes, its stat (nil when it does not exist) and their
// hash (HashAbsent). With w.Expect, the caller's bytes of it when the file
// is of their size, which the caller hashed as w.ExpectHash; else (and
// for a file of another size, whose error then names its hash) the file
// as read now.
func (t *txn) preimage(r string, w *Write) ([]byte, fs.FileInfo, string, error) {
	if w.Expect != nil && w.Before == nil && w.ExpectHash != "" && w.ExpectHash != HashAbsent {
		fi, err := t.d.Lstat(r)
		if err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(w.Expect)) {
			return w.Expect, fi, w.ExpectHash, nil
		}
	}
	// r is resolved: the open file's own stat is the target's, and verify
	// compares it with what Lstat says later.
	cur, fi, err := readRegularInfo(t.d, r)
	if err != nil || fi == nil {
		return nil, nil, HashAbsent, err
	}
	return cur, fi, Hash(cur), nil
}

// stage writes the temp files next to their targets, all fsynced
// concurrently: each fsync waits for the file system's journal to
// commit, and concurrent ones share a commit.
func (t *txn) stage(writes []Write) error {
	var open []*os.File
	var what []string // for errors: what each open file is
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	for i := range t.m.Entries {
		e := &t.m.Entries[i]
		if e.Temp == "" {
			continue
		}
		if err := t.mkdirs(path.Dir(e.Path)); err != nil {
			return fmt.Errorf("creating the directory of %s: %w", e.Path, err)
		}
		mode := writes[i].Mode
		if mode == 0 {
			mode = e.Mode
		}
		content := writes[i].Content
		if content == nil && writes[i].ContentFrom != nil {
			var err error
			if content, err = writes[i].ContentFrom(); err != nil {
				return fmt.Errorf("the content of %s: %w", e.Path, err)
			}
			if content == nil {
				content = []byte{}
			}
		}
		f, err := createFile(t.d, e.Temp, content, mode)
		if err != nil {
			return fmt.Errorf("writing a temp file for %s: %w", e.Path, err)
		}
		open, what = append(open, f), append(what, "writing a temp file for "+e.Path)
	}
	return syncAll(open, what)
}

func syncAll(open []*os.File, what []string) error {
	if len(open) == 1 {
		// One file: no goroutine (whose fsync, blocking, would have the
		// runtime start a thread for the waiting caller).
		err := open[0].Sync()
		if err != nil && what != nil {
			err = fmt.Errorf("%s: %w", what[0], err)
		}
		return err
	}
	errs := make([]error, len(open))
	var wg sync.WaitGroup
	for i, f := range open {
		wg.Go(func() {
			if err := f.Sync(); err != nil {
				if what != nil {
					err = fmt.Errorf("%s: %w", what[i], err)
				}
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// missingDirs lists dir (relative to the root) and its parents that do not
// exist, deepest first.
func (t *txn) missingDirs(dir string) []string {
	var missing []string
	for d := dir; d != "." && d != "/"; d = path.Dir(d) {
		if _, err := t.d.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
	}
	return missing
}

// mkdirs creates dir (relative to the root) and its missing parents.
func (t *txn) mkdirs(dir string) error {
	for _, d := range slices.Backward(t.missingDirs(dir)) {
		if err := t.d.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// createFile creates name (which must not exist) in d (or, with a nil d,
// the absolute path name) with b and mode, and returns it open and not
// yet synced; on error nothing is left behind.
func createFile(d *os.Root, name string, b []byte, mode fs.FileMode) (*os.File, error) {
	open := func() (*os.File, error) {
		return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	}
	remove := func() { os.Remove(name) }
	if d != nil {
		open = func() (*os.File, error) { return d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode) }
		remove = func() { d.Remove(name) }
	}
	f, err := open()
	if err != nil {
		return nil, err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(mode) // the umask must not change the file's mode
	}
	if err != nil {
		f.Close()
		remove()
		return nil, err
	}
	return f, nil
}

// writeNew creates name like createFile, syncs it when sync is set and
// closes it; on error nothing is left behind.
func writeNew(d *os.Root, name string, b []byte, mode fs.FileMode, sync bool) error {
	f, err := createFile(d, name, b, mode)
	if err != nil {
		return err
	}
	if sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if d != nil {
			d.Remove(name)
		} else {
			os.Remove(name)
		}
	}
	return err
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some file systems refuse to sync directories
		d.Close()
	}
}

// syncDir syncs a directory of the workspace.
func (t *txn) syncDir(dir string) {
	if f, err := t.d.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}

// writeManifest replaces the manifest (temp file and rename); durable
// also syncs it and the transaction directory.
func (t *txn) writeManifest(durable bool) error {
	b, err := json.MarshalIndent(&t.m, "", "  ")
	if err != nil {
		return err
	}
	if err := t.step("write the %s manifest", t.m.State); err != nil {
		return err
	}
	// Through a temp file even when not durable: a process killed while
	// writing must not leave a half manifest that recovery cannot read.
	p := filepath.Join(t.tx, manifestName)
	tmp := p + ".tmp"
	os.Remove(tmp)
	err = writeNew(nil, tmp, b, 0o600, durable)
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the journal: %w", err)
	}
	if durable {
		syncDir(t.tx)
	}
	return nil
}

// finish removes a transaction directory whose work is done: backups
// first, the manifest last but one, then the directory, so that a kill in
// between leaves either a manifest to replay or an empty directory.
func (t *txn) finish() error {
	ents, err := os.ReadDir(t.tx)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, de := range ents {
		if de.Name() == manifestName {
			continue
		}
		if err := t.step("remove %s", de.Name()); err != nil {
			return err
		}
		os.Remove(filepath.Join(t.tx, de.Name()))
	}
	if err := t.step("remove the manifest"); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(t.tx, manifestName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := t.step("remove the transaction directory"); err != nil {
		return err
	}
	if err := os.Remove(t.tx); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// setAside renames the transaction directory to kept-tx-*, which recovery
// skips: a journal that could not be finished is explained once and
// never blocks later work.
func (t *txn) setAside() string {
	kept := filepath.Join(filepath.Dir(t.tx), keptPrefix+filepath.Base(t.tx))
	if err := os.Rename(t.tx, kept); err != nil {
		return t.tx
	}
	return kept
}

func newTxDir(journalDir string) (string, error) {
	created := 0
	for d := journalDir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		created++
	}
	if err := os.MkdirAll(journalDir, 0o700); err != nil {
		return "", fmt.Errorf("journal directory: %w", err)
	}
	// A journal directory made just now must be reachable after an OS
	// crash too; this happens once per journal directory, not per commit.
	for d := journalDir; created > 0; created-- {
		syncDir(filepath.Dir(d))
		d = filepath.Dir(d)
	}
	tx := filepath.Join(journalDir, fmt.Sprintf("tx-%d-%s", time.Now().UnixNano(), randomHex(4)))
	if err := os.Mkdir(tx, 0o700); err != nil {
		return "", fmt.Errorf("journal directory: %w", err)
	}
	return tx, nil // journalDir is synced with the committed manifest
}

// tempName is a fresh temp file name next to the target rel
// (".NAME.smith-XXXXXXXXXXXX"), relative to the root like rel.
func tempName(rel string) string {
	return path.Join(path.Dir(rel), "."+path.Base(rel)+".smith-"+randomHex(6))
}

// randomHex is n random bytes in hex, for the names of temp files and
// journals, which must not collide (each is created with O_EXCL, so a
// collision fails, never overwrites) and need not be secret: the
// runtime's generator, seeded by the kernel at start, serves (crypto/rand
// costs a getrandom call and its set-up on first use, a tenth of a
// millisecond of a one-file apply).
func randomHex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return hex.EncodeToString(b)
}

// hashOf is the hash of a target as it is now (HashAbsent when missing).
func (t *txn) hashOf(rel string) (string, error) {
	b, exists, err := readRegular(t.d, rel)
	if err != nil {
		return "", err
	}
	if !exists {
		return HashAbsent, nil
	}
	return Hash(b), nil
}

// op runs one change to the file system after the test hook; a hook's
// error is that change's error.
func (t *txn) op(what string, f func() error) error {
	if err := t.step("%s", what); err != nil {
		return err
	}
	return f()
}

// rollForward finishes a committed transaction: each target still in its
// old state gets its new one. Each step checks first, so running it again
// after a kill continues where it stopped. unfinished reports an error
// about a target that may not have been written (Settle then rolls
// back); the only other error is a target edited after its temp file was
// renamed over it, which the commit had written.
//
// settling (Settle) keeps the temp file of a target edited since: should
// Settle be killed before its roll back, the next one must still see that
// this target was never renamed over (rollBack removes it last).
func (t *txn) rollForward(settling bool) (unfinished bool, err error) {
	var errs []error
	var dirs []string
	for _, e := range t.m.Entries {
		cur, err := t.hashOf(e.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.Path, err))
			unfinished = true
			continue
		}
		tempThere := false
		if e.Temp != "" {
			_, err := t.d.Lstat(e.Temp)
			tempThere = err == nil
		}
		removeTemp := func() {
			if tempThere {
				t.op("remove "+e.Temp, func() error { return t.d.Remove(e.Temp) })
			}
		}
		switch {
		case cur == e.Before && e.After == HashAbsent:
			err := t.op("remove "+e.Path, func() error { return t.d.Remove(e.Path) })
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing %s: %w", e.Path, err))
				unfinished = true
				continue
			}
			t.removeEmptyParents(path.Dir(e.Path))
		case cur == e.Before && tempThere:
			// The temp file must be complete: one cut short (a kill while
			// it was written, a crash before it was synced) must not
			// replace the target, whose bytes before would be lost.
			if tb, ok, err := readRegular(t.d, e.Temp); err != nil || !ok || Hash(tb) != e.After {
				removeTemp()
				errs = append(errs, fmt.Errorf("%s was not written: its temp file %s does not hold its new text (cut short)", e.Path, e.Temp))
				unfinished = true
				continue
			}
			if err := t.op("rename "+e.Path, func() error { return t.d.Rename(e.Temp, e.Path) }); err != nil {
				errs = append(errs, fmt.Errorf("renaming over %s: %w", e.Path, err))
				unfinished = true
				continue
			}
		case cur == e.After:
			removeTemp()
		case cur == e.Before:
			errs = append(errs, fmt.Errorf("%s was not written: its temp file %s is gone", e.Path, e.Temp))
			unfinished = true
			continue
		default:
			if !settling {
				removeTemp()
			}
			errs = append(errs, fmt.Errorf("%s changed after the interrupted apply; left as it is", e.Path))
			// A temp file renamed (gone) means the target was written,
			// then edited. One still there, or a deletion, says nothing.
			unfinished = unfinished || tempThere || e.Temp == ""
			continue
		}
		if !slices.Contains(dirs, path.Dir(e.Path)) {
			dirs = append(dirs, path.Dir(e.Path))
		}
	}
	for _, d := range dirs {
		t.syncDir(d)
	}
	return unfinished, errors.Join(errs...)
}

// rollBack puts every target among the first touched entries that holds
// its new bytes back to its old ones (from backup) and removes every temp
// file, last: until every target is back, a temp file still there says
// (to a Settle run again after a kill) that its target was never renamed
// over. Each step checks first, so running it again after a kill
// continues where it stopped.
func (t *txn) rollBack(touched int, backup func(i int) ([]byte, error)) error {
	var errs []error
	for i, e := range t.m.Entries {
		if i >= touched {
			if !e.Existed {
				t.removeDirs(e.Dirs)
			}
			continue
		}
		cur, err := t.hashOf(e.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.Path, err))
			continue
		}
		switch {
		case cur == e.Before:
			if !e.Existed {
				t.removeDirs(e.Dirs)
			}
		case cur != e.After:
			errs = append(errs, fmt.Errorf("%s changed after smith wrote it; left as it is", e.Path))
		case !e.Existed:
			err := t.op("remove "+e.Path, func() error { return t.d.Remove(e.Path) })
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing %s: %w", e.Path, err))
			}
			t.removeDirs(e.Dirs)
		default:
			old, err := backup(i)
			if err == nil {
				err = t.restore(e, old)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("restoring %s: %w", e.Path, err))
			}
		}
	}
	for _, e := range t.m.Entries {
		for _, tmp := range []string{e.Temp, restoreName(e)} {
			if tmp == "" {
				continue
			}
			if _, err := t.d.Lstat(tmp); err == nil {
				t.op("remove "+tmp, func() error { return t.d.Remove(tmp) })
			}
		}
	}
	// The directories made for new files, once their temp files are gone
	// (each only while empty: a file left there keeps its own).
	for _, e := range t.m.Entries {
		if !e.Existed {
			t.removeDirs(e.Dirs)
		}
	}
	return errors.Join(errs...)
}

// restore writes old to e's temp name (which only this transaction uses),
// syncs it and renames it over the target.
func (t *txn) restore(e journalEntry, old []byte) error {
	tmp := e.Temp
	if tmp == "" {
		tmp = restoreName(e)
	}
	if err := t.mkdirs(path.Dir(e.Path)); err != nil {
		return err
	}
	t.d.Remove(tmp)
	if err := writeNew(t.d, tmp, old, e.Mode, true); err != nil {
		return err
	}
	err := t.op("restore "+e.Path, func() error { return t.d.Rename(tmp, e.Path) })
	if err != nil {
		t.d.Remove(tmp)
		return err
	}
	t.syncDir(path.Dir(e.Path))
	return nil
}

// restoreName is the temp file a target deleted by its commit is restored
// through: one name, so that a roll back killed while it wrote it, and
// run again, removes it ("" for an entry with a temp file of its own).
func restoreName(e journalEntry) string {
	if e.Temp != "" {
		return ""
	}
	return path.Join(path.Dir(e.Path), "."+path.Base(e.Path)+".smith-restore")
}

// removeDirs removes directories a transaction created, deepest first,
// each only while it is empty.
func (t *txn) removeDirs(dirs []string) {
	for _, d := range dirs {
		t.d.Remove(d)
	}
}

// Recover finishes what a killed Commit in the workspace root left in
// journalDir: a transaction that had not committed loses its temp files
// (its targets were never touched); a committed one is rolled forward,
// so every file gets its new content; one that was being undone is rolled
// back. A file in neither of its two states was edited since: it is left
// alone and reported, and that transaction's journal is set aside (as
// kept-tx-*) so that it is reported once and blocks nothing. A journal
// recording another workspace, or paths that break the workspace rules,
// is set aside without writing anything. Recover returns how many
// transactions it finished or rolled back. A missing journalDir is not an
// error. Running Recover again after it was killed converges: every step
// checks the file before acting.
//
// Call it before planning against files a Commit with the same journalDir
// may have touched.
func Recover(root, journalDir string) (int, error) {
	return recoverJournal(root, journalDir, nil)
}

func recoverJournal(root, journalDir string, hook func(string) error) (int, error) {
	ents, err := os.ReadDir(journalDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the journal: %w", err)
	}
	var ws *Workspace
	n, removed := 0, false
	var errs []error
	for _, de := range ents {
		if !de.IsDir() || !strings.HasPrefix(de.Name(), "tx-") {
			continue
		}
		if ws == nil {
			if ws, err = OpenWorkspace(root); err != nil {
				return 0, fmt.Errorf("workspace root: %w", err)
			}
			defer ws.Close()
		}
		did, err := recoverTx(ws, filepath.Join(journalDir, de.Name()), hook)
		if did {
			n++
		}
		if err != nil {
			errs = append(errs, err)
		}
		removed = true
	}
	if removed {
		syncDir(journalDir) // an empty journal, the common case, costs no fsync
	}
	return n, errors.Join(errs...)
}

// recoverTx settles one transaction directory; did reports whether a
// committed or aborting transaction was finished.
func recoverTx(ws *Workspace, tx string, hook func(string) error) (did bool, err error) {
	t := &txn{ws: ws, tx: tx, hook: hook}
	b, err := os.ReadFile(filepath.Join(tx, manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		// Killed before the staging manifest (nothing was created), or
		// after a finished transaction removed it.
		os.RemoveAll(tx)
		return false, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &t.m)
	}
	if err == nil && t.m.Version == 1 {
		err = upgradeManifest(ws, &t.m)
	}
	if err == nil {
		err = checkManifest(ws, &t.m)
	}
	if err != nil {
		kept := t.setAside()
		return false, fmt.Errorf("journal %s: %v; nothing was written, the journal was set aside as %s", tx, err, kept)
	}
	if t.d, err = ws.dir(); err != nil {
		return false, err
	}
	var werr error
	switch t.m.State {
	case stateStaging:
		t.removeStaged()
	case stateCommitted:
		_, werr = t.rollForward(false)
		did = true
	case stateAborting:
		werr = t.rollBack(t.m.Touched, func(i int) ([]byte, error) {
			e := t.m.Entries[i]
			b, err := os.ReadFile(filepath.Join(tx, e.Backup))
			if err != nil {
				return nil, fmt.Errorf("backup unreadable: %w", err)
			}
			if Hash(b) != e.Before {
				return nil, errors.New("backup damaged")
			}
			return b, nil
		})
		did = true
	}
	if werr != nil {
		kept := t.setAside()
		return did, fmt.Errorf("journal %s (%s): %w; the journal was set aside as %s", tx, t.m.State, werr, kept)
	}
	if err := t.finish(); err != nil {
		return did, err
	}
	return did, nil
}

// Settle finishes a commit of CommitLogged that was cut short (the
// process killed, the system crashed) after its log returned, from its
// Journal j; before(i) gives entry i's bytes before the commit (the
// caller journalled them). The commit renames only once every temp file
// is synced, so a target found in its new state with its temp file gone
// (renamed) means that every temp file was complete: the others are
// renamed over their targets (rolled forward), each only if it holds its
// new bytes. A target in its new state beside its temp file was written
// by someone else and is no such sign. With no target in its new state nothing was renamed: the
// temp files (and the directories made for them) are removed. Should a
// target be neither renamed nor renameable (its temp file gone), the
// targets already renamed get their bytes before back (rolled back), so
// that the files end all before or all after the commit. A target found
// in neither state was edited since: it is left alone and reported (and,
// when its temp file is gone, renamed over it, the others are rolled
// forward: the commit had written it). written reports whether the commit's writes are in place. Every step
// looks at the file first, so Settle run again after a kill converges.
func (w *Workspace) Settle(j *Journal, before func(i int) ([]byte, error)) (written bool, err error) {
	return w.settle(j, before, nil)
}

func (w *Workspace) settle(j *Journal, before func(i int) ([]byte, error), hook func(string) error) (bool, error) {
	t := &txn{ws: w, hook: hook, m: manifest{Version: 2, Root: j.Root, State: stateCommitted, Entries: j.Entries}}
	if err := checkManifest(w, &t.m); err != nil {
		return false, fmt.Errorf("journal of an interrupted write: %v; nothing was written", err)
	}
	var err error
	if t.d, err = w.dir(); err != nil {
		return false, err
	}
	// A rename takes its temp file away: a target that holds its new
	// bytes beside its temp file was given them by someone else, and says
	// nothing of whether the temp files were complete.
	begun := false
	for _, e := range t.m.Entries {
		if e.After == e.Before {
			continue
		}
		if e.Temp != "" {
			if _, err := t.d.Lstat(e.Temp); err == nil {
				continue
			}
		}
		cur, err := t.hashOf(e.Path)
		if err == nil && cur == e.After {
			begun = true
			break
		}
	}
	if !begun {
		t.removeStaged()
		return false, nil
	}
	unfinished, ferr := t.rollForward(true)
	if ferr == nil {
		return true, nil
	}
	if !unfinished {
		// Every target was written; some were edited since.
		return true, ferr
	}
	// Some target could not get its new bytes: put every one that has
	// them back, so that the files are not half written.
	if berr := t.rollBack(len(t.m.Entries), before); berr != nil {
		return false, errors.Join(ferr, berr)
	}
	return false, fmt.Errorf("%w; the files written were put back", ferr)
}

// removeStaged removes the temp files and the directories made for them
// by a transaction that never committed (Commit's discard, and recovery
// of a staging journal).
func (t *txn) removeStaged() {
	for _, e := range t.m.Entries {
		if e.Temp != "" {
			t.d.Remove(e.Temp)
		}
		t.removeDirs(e.Dirs)
	}
}

// upgradeManifest reads a journal of smith before the write-ahead log
// (version 1: absolute paths, states staging and committing, backups of
// every file), left by a process killed before an upgrade. Its
// "committing" meant "roll back from the backups", which is this
// version's aborting state with every entry touched.
func upgradeManifest(ws *Workspace, m *manifest) error {
	rel := func(p string) (string, error) {
		if p == "" {
			return "", nil
		}
		r, ok := within(ws.real, p)
		if !ok {
			r, ok = within(ws.root, p)
		}
		if !ok {
			return "", fmt.Errorf("it names %s, outside the workspace", p)
		}
		return filepath.ToSlash(r), nil
	}
	var err error
	for i := range m.Entries {
		e := &m.Entries[i]
		if e.Path, err = rel(e.Path); err != nil {
			return err
		}
		if e.Temp, err = rel(e.Temp); err != nil {
			return err
		}
		for j := range e.Dirs {
			if e.Dirs[j], err = rel(e.Dirs[j]); err != nil {
				return err
			}
		}
	}
	switch m.State {
	case stateStaging:
	case "committing":
		m.State, m.Touched = stateAborting, len(m.Entries)
	default:
		return fmt.Errorf("unknown state %q", m.State)
	}
	m.Version, m.Root = 2, ws.real
	return nil
}

// checkManifest refuses a journal that is not this workspace's or names
// paths a commit could not have written (a forged or damaged journal).
func checkManifest(ws *Workspace, m *manifest) error {
	if m.Version != 2 {
		return fmt.Errorf("unknown journal version %d", m.Version)
	}
	if m.Root != ws.real {
		return fmt.Errorf("it records the workspace %q, not %s", m.Root, ws.real)
	}
	switch m.State {
	case stateStaging, stateCommitted, stateAborting:
	default:
		return fmt.Errorf("unknown state %q", m.State)
	}
	for i, e := range m.Entries {
		names := append([]string{e.Path}, e.Dirs...)
		if e.Temp != "" {
			names = append(names, e.Temp)
		}
		for _, p := range names {
			if r, err := ws.rel(p); err != nil || r != p {
				return fmt.Errorf("it names the path %q, which a commit could not write", p)
			}
		}
		if e.Backup != "" && (filepath.Base(e.Backup) != e.Backup || strings.HasPrefix(e.Backup, ".")) {
			return fmt.Errorf("it names the backup %q", e.Backup)
		}
		if m.State == stateAborting && i < m.Touched && e.Existed && e.Backup == "" && e.After != e.Before {
			return fmt.Errorf("entry %s has no backup", e.Path)
		}
	}
	return nil
}
