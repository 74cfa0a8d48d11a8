package diffapply

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
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
	// Mode sets the permission bits; 0 keeps the current ones (0644 for a
	// new file).
	Mode fs.FileMode
	// ExpectHash guards against lost updates: "" skips the check,
	// HashAbsent requires that the file does not exist, anything else must
	// equal Hash of the current content.
	ExpectHash string
}

// The journal of one transaction is a directory journalDir/tx-*/ holding
// manifest.json and a backup of every pre-image. The protocol:
//
//  1. manifest in state "staging" (before any file is created);
//  2. backups and the temp files next to the targets, each fsynced;
//  3. manifest rewritten (temp + rename) to state "committing";
//  4. each temp renamed over its target (or the target removed);
//  5. the transaction directory removed.
//
// A crash before 3 leaves only temp files, which Recover deletes; a crash
// after 3 leaves complete backups, from which Recover restores every file.
// So every file ends up entirely before or after, never in between.
//
// Fsyncs, batched (each costs milliseconds on a disk): a kill -9 loses
// nothing the process wrote, so fsyncs only matter for an operating-system
// crash, and there only what must be durable before the first rename of
// step 4 is: the backups, the temp files (else a renamed target could come
// back empty), the "committing" manifest, and the directory entries that
// lead to them (the transaction directory in journalDir, the manifest and
// backups in it). The backups and temp files are fsynced concurrently,
// all before the committing manifest. The "staging" manifest is not synced: losing it in an OS
// crash leaves at worst stray temp files, never a changed target. So the
// directory entries are synced once, after the committing manifest, not
// after each file. The targets' directories are synced once each, after
// all renames: until the journal is removed, an OS crash that undoes some
// renames still finds the committing manifest and complete backups, and
// Recover restores every file. The removal of the journal is synced last,
// so a reported success is never rolled back by a later Recover.
//
// A commit of a single write has no journal at all: a temp file in the
// target's directory, fsynced, renamed over the target (rename is atomic)
// and the directory fsynced is already all-or-nothing, and a deletion is
// one unlink. A process killed before the rename leaves the target as it
// was and, at worst, its temp file (".NAME.smith-XXXX") next to it.
type manifest struct {
	Version int            `json:"version"`
	State   string         `json:"state"` // "staging" or "committing"
	Entries []journalEntry `json:"entries"`
}

type journalEntry struct {
	Path    string      `json:"path"`             // absolute target
	Temp    string      `json:"temp,omitempty"`   // absolute temp file next to the target
	Backup  string      `json:"backup,omitempty"` // file in the transaction dir
	Existed bool        `json:"existed"`
	Mode    fs.FileMode `json:"mode"` // mode of the pre-image
	Dirs    []string    `json:"dirs,omitempty"`
	// Before and After are the hashes of the file's two states (or
	// HashAbsent): Recover restores only a file that is in one of them.
	Before string `json:"before"`
	After  string `json:"after"`
}

const (
	stateStaging    = "staging"
	stateCommitting = "committing"
)

// Commit writes all files or none. Each target must pass the workspace
// rules (see Plan) and its ExpectHash; contents go to temp files in the
// target's directory, are fsynced and renamed into place. On any failure
// the files already renamed are restored. With a journalDir and more than
// one write, a process killed mid-commit leaves a journal that
// Recover(journalDir) rolls back; with "" there is no journal, and a
// single write needs none (its rename is atomic). ctx is checked before
// the first rename.
// Concurrent Commits on the same files are not coordinated.
func Commit(ctx context.Context, root string, writes []Write, journalDir string) error {
	return commit(ctx, root, writes, journalDir, nil)
}

// commit is Commit with a hook called just before (renamed false) and just
// after (true) the i-th target is renamed or removed; tests use it to kill
// the process mid-commit or to inject a failure.
func commit(ctx context.Context, root string, writes []Write, journalDir string, hook func(i int, renamed bool) error) (err error) {
	ws, err := newWorkspace(root)
	if err != nil {
		return fmt.Errorf("workspace root: %w", err)
	}
	entries, contents, backups, err := prepare(ws, writes)
	if err != nil {
		return err
	}
	var tx string
	if journalDir != "" && len(writes) > 1 {
		if tx, err = newTxDir(journalDir); err != nil {
			return err
		}
	}
	m := &manifest{Version: 1, State: stateStaging, Entries: entries}
	cleanup := func() {
		for _, e := range entries {
			if e.Temp != "" {
				os.Remove(e.Temp)
			}
		}
		if tx != "" {
			os.RemoveAll(tx)
		}
	}
	if tx != "" {
		if err := writeManifest(tx, m, false); err != nil {
			cleanup()
			return err
		}
	}
	if err := stage(tx, entries, contents, backups, writes); err != nil {
		cleanup()
		return err
	}
	if err := ctx.Err(); err != nil {
		cleanup()
		return err
	}
	if tx != "" {
		m.State = stateCommitting
		if err := writeManifest(tx, m, true); err != nil {
			cleanup()
			return err
		}
		syncDir(journalDir) // the transaction directory's entry
	}
	var dirs []string // to sync once each, after all renames
	for i := range entries {
		e := &entries[i]
		var rerr error
		if hook != nil {
			rerr = hook(i, false)
		}
		switch {
		case rerr != nil:
		case writes[i].Content == nil:
			rerr = os.Remove(e.Path)
		default:
			rerr = os.Rename(e.Temp, e.Path)
		}
		if rerr == nil && hook != nil {
			rerr = hook(i, true)
		}
		if rerr != nil {
			rb := rollback(tx, entries, backups)
			cleanup()
			return errors.Join(fmt.Errorf("writing %s: %w; all files were restored", e.Path, rerr), rb)
		}
		// The target's directory, and the parents of directories this
		// commit created (else a new file could vanish with its directory).
		for _, d := range append([]string{e.Path}, e.Dirs...) {
			if d = filepath.Dir(d); !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	for _, d := range dirs {
		syncDir(d)
	}
	for i, e := range entries {
		if writes[i].Content == nil {
			removeEmptyParents(ws.real, filepath.Dir(e.Path))
		}
	}
	if tx != "" {
		if err := os.RemoveAll(tx); err != nil {
			return fmt.Errorf("all files written, but removing the journal %s failed: %w", tx, err)
		}
		syncDir(journalDir)
	}
	return nil
}

// removeEmptyParents removes dir and its parents while they are empty,
// stopping at root, as git does after deleting a file. Best effort: a
// directory that is not empty, or cannot be removed, simply stays.
func removeEmptyParents(root, dir string) {
	for dir != root {
		if _, ok := within(root, dir); !ok || os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// prepare resolves every target, checks hashes and reads the pre-images.
func prepare(ws *workspace, writes []Write) ([]journalEntry, [][]byte, [][]byte, error) {
	entries := make([]journalEntry, len(writes))
	contents := make([][]byte, len(writes))
	backups := make([][]byte, len(writes))
	seen := map[string]bool{}
	for i, w := range writes {
		rel, err := ws.rel(w.Path)
		if err != nil {
			return nil, nil, nil, err
		}
		abs, err := ws.resolve(rel)
		if err != nil {
			return nil, nil, nil, err
		}
		if seen[abs] {
			return nil, nil, nil, fmt.Errorf("%s is written twice in one transaction", rel)
		}
		seen[abs] = true
		e := journalEntry{Path: abs, Mode: 0o644}
		cur, err := os.ReadFile(abs)
		switch {
		case err == nil:
			e.Existed = true
			fi, err := os.Stat(abs)
			if err != nil {
				return nil, nil, nil, err
			}
			e.Mode = fi.Mode().Perm()
			backups[i] = cur
		case errors.Is(err, fs.ErrNotExist):
		default:
			return nil, nil, nil, fmt.Errorf("reading %s: %w", rel, err)
		}
		got := HashAbsent
		if e.Existed {
			got = Hash(cur)
		}
		if w.ExpectHash != "" && w.ExpectHash != got {
			return nil, nil, nil, &StaleError{Path: rel, Want: w.ExpectHash, Got: got}
		}
		if w.Content == nil && !e.Existed {
			return nil, nil, nil, fmt.Errorf("cannot delete %s: it does not exist", rel)
		}
		e.Before, e.After = got, HashAbsent
		if w.Content != nil {
			e.After = Hash(w.Content)
		}
		if w.Content != nil {
			e.Temp = filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".smith-"+randomHex(6))
			contents[i] = w.Content
		}
		entries[i] = e
	}
	return entries, contents, backups, nil
}

// stage writes the backups and the temp files, all fsynced; the
// transaction directory itself is synced with the committing manifest.
// The files are written first and fsynced together, concurrently: each
// fsync waits for the file system's journal to commit, and concurrent
// ones share a commit. Nothing is renamed before all of them returned.
func stage(tx string, entries []journalEntry, contents, backups [][]byte, writes []Write) error {
	var open []*os.File
	var what []string // for errors: what each open file is
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	for i := range entries {
		e := &entries[i]
		if tx != "" && e.Existed {
			e.Backup = fmt.Sprintf("backup-%d", i)
			f, err := writeFile(filepath.Join(tx, e.Backup), backups[i], 0o600)
			if err != nil {
				return fmt.Errorf("journal backup of %s: %w", e.Path, err)
			}
			open, what = append(open, f), append(what, "journal backup of "+e.Path)
		}
		if e.Temp == "" {
			continue
		}
		dirs, err := mkdirs(filepath.Dir(e.Path), 0o755)
		if err != nil {
			return err
		}
		e.Dirs = dirs
		mode := writes[i].Mode
		if mode == 0 {
			mode = e.Mode
		}
		f, err := writeFile(e.Temp, contents[i], mode)
		if err != nil {
			return fmt.Errorf("writing a temp file for %s: %w", e.Path, err)
		}
		open, what = append(open, f), append(what, "writing a temp file for "+e.Path)
	}
	errs := make([]error, len(open))
	var wg sync.WaitGroup
	for i, f := range open {
		wg.Go(func() {
			if err := f.Sync(); err != nil {
				errs[i] = fmt.Errorf("%s: %w", what[i], err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// mkdirs creates dir and its missing parents with perm, returning those it
// created, deepest first.
func mkdirs(dir string, perm fs.FileMode) ([]string, error) {
	var created []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return nil, err
	}
	return created, nil
}

func writeSynced(path string, b []byte, mode fs.FileMode) error {
	f, err := writeFile(path, b, mode)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// writeFile creates path (which must not exist) with b and mode, and
// returns it open and not yet synced; on error nothing is left behind.
func writeFile(path string, b []byte, mode fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(mode) // the umask must not change the file's mode
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some file systems refuse to sync directories
		d.Close()
	}
}

// writeManifest replaces tx's manifest (temp file and rename); durable
// also syncs the manifest and tx, so that everything staged in tx is on
// disk (see the protocol above for why the staging manifest need not be).
func writeManifest(tx string, m *manifest, durable bool) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	// Through a temp file even when not durable: a process killed while
	// writing must not leave a half manifest that Recover cannot read.
	path := filepath.Join(tx, "manifest.json")
	tmp := path + ".tmp"
	os.Remove(tmp)
	if durable {
		err = writeSynced(tmp, b, 0o600)
	} else {
		err = os.WriteFile(tmp, b, 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("writing the journal: %w", err)
	}
	if durable {
		syncDir(tx)
	}
	return nil
}

func newTxDir(journalDir string) (string, error) {
	created, err := mkdirs(journalDir, 0o700)
	if err != nil {
		return "", fmt.Errorf("journal directory: %w", err)
	}
	// A journal directory made just now must be reachable after an OS
	// crash too; this happens once per journal directory, not per commit.
	for _, d := range created {
		syncDir(filepath.Dir(d))
	}
	tx := filepath.Join(journalDir, fmt.Sprintf("tx-%d-%s", time.Now().UnixNano(), randomHex(4)))
	if err := os.Mkdir(tx, 0o700); err != nil {
		return "", fmt.Errorf("journal directory: %w", err)
	}
	return tx, nil // journalDir is synced with the committing manifest
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// rollback puts every entry back to its pre-image: from memory when the
// committing process still runs, else from the journal's backups.
func rollback(tx string, entries []journalEntry, mem [][]byte) error {
	var errs []error
	for i, e := range entries {
		if e.Temp != "" {
			os.Remove(e.Temp)
		}
		if mem == nil && e.After != "" {
			// After a crash someone may have edited the file since: only
			// a file still in the transaction's before or after state is
			// ours to restore.
			cur := HashAbsent
			if b, err := os.ReadFile(e.Path); err == nil {
				cur = Hash(b)
			}
			if cur == e.Before {
				if !e.Existed {
					removeDirs(e.Dirs)
				}
				continue
			}
			if cur != e.After {
				old := "it did not exist before"
				if e.Existed {
					old = "its old content is in " + filepath.Join(tx, e.Backup)
				}
				errs = append(errs, fmt.Errorf("%s changed after the interrupted apply; left as it is (%s)", e.Path, old))
				continue
			}
		}
		if !e.Existed {
			if err := os.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing %s: %w", e.Path, err))
			}
			removeDirs(e.Dirs)
			continue
		}
		var old []byte
		if mem != nil {
			old = mem[i]
		} else {
			b, err := os.ReadFile(filepath.Join(tx, e.Backup))
			if err != nil {
				errs = append(errs, fmt.Errorf("cannot restore %s: backup unreadable: %w", e.Path, err))
				continue
			}
			old = b
		}
		if err := replace(e.Path, old, e.Mode); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s: %w", e.Path, err))
		}
	}
	return errors.Join(errs...)
}

// removeDirs removes directories a transaction created, deepest first,
// each only while it is empty.
func removeDirs(dirs []string) {
	for _, d := range dirs {
		os.Remove(d)
	}
}

// replace writes b to path through a synced temp file and a rename.
func replace(path string, b []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".smith-"+randomHex(6))
	if err := writeSynced(tmp, b, mode); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// Recover finishes what a killed Commit left in journalDir: a transaction
// that had not started renaming loses its temp files; one that had is
// rolled back from its backups, so every file is as before that Commit.
// A file that is in neither the transaction's before nor after state was
// edited since the crash: it is left alone, reported in the error, and
// the transaction's journal is kept for inspection. Recover returns how
// many transactions it rolled back. A missing journalDir is not an error.
// Call it before planning against files a Commit with the same journalDir
// may have touched.
func Recover(journalDir string) (int, error) {
	ents, err := os.ReadDir(journalDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the journal: %w", err)
	}
	n, removed := 0, false
	var errs []error
	for _, de := range ents {
		if !de.IsDir() || !strings.HasPrefix(de.Name(), "tx-") {
			continue
		}
		tx := filepath.Join(journalDir, de.Name())
		b, err := os.ReadFile(filepath.Join(tx, "manifest.json"))
		if errors.Is(err, fs.ErrNotExist) {
			os.RemoveAll(tx) // killed before the manifest: nothing was created
			removed = true
			continue
		}
		var m manifest
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("journal %s: %w; inspect it by hand", tx, err))
			continue
		}
		if m.State == stateCommitting {
			if err := rollback(tx, m.Entries, nil); err != nil {
				errs = append(errs, fmt.Errorf("journal %s: %w; the journal is kept", tx, err))
				continue
			}
			n++
		} else {
			for _, e := range m.Entries {
				if e.Temp != "" {
					os.Remove(e.Temp)
				}
				for _, d := range e.Dirs {
					os.Remove(d)
				}
			}
		}
		os.RemoveAll(tx)
		removed = true
	}
	if removed {
		syncDir(journalDir) // an empty journal, the common case, costs no fsync
	}
	return n, errors.Join(errs...)
}
