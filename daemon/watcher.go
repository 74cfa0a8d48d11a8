package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watcher is the one fsnotify watcher of a workspace. It exists to
// re-validate open changes when their files change on disk, so it watches
// only the directories of files that have open changes (pending, conflict,
// stale or undone), and follows them as changes come and go: a workspace
// with no open change costs no watch, however large its tree. (It used to
// watch every directory: 30 000 watches and most of a second before a
// 30 000-directory workspace answered, and past the kernel's limit a
// monorepo silently stopped being watched.)
//
// A directory, not the file, is watched, because editors save by writing a
// new file and renaming it over the old one, and a file that does not exist
// yet (a change that creates it) has no inode to watch. When the directory
// itself does not exist yet, its nearest existing ancestor in the workspace
// is watched, and the watch moves down as directories appear.
//
// Following gopls, one goroutine drains the fsnotify channels and does
// nothing else; a second one debounces, moves the watches and re-validates
// the open changes of the files that changed. Files open in an editor need
// no watch: the editor's buffer, not the disk, is what a change is checked
// against, and fronts call Revalidate when a buffer changes.
type watcher struct {
	e *Engine
	w *fsnotify.Watcher

	kick chan struct{} // wakes the worker; buffered 1
	mu   sync.Mutex    // guards dirty, rescan, resync
	// dirty holds changed paths not yet handled, with whether a Create
	// was seen (a directory that appeared may be where a watch belongs).
	dirty  map[string]bool
	rescan bool // events were lost: re-validate everything
	resync bool // the open changes moved: recompute the watched directories

	warned bool // the worker's: a watch that could not be added was reported

	stop chan struct{}
	wg   sync.WaitGroup
}

func newWatcher(e *Engine) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &watcher{
		e: e, w: fw,
		kick:  make(chan struct{}, 1),
		dirty: map[string]bool{},
		stop:  make(chan struct{}),
	}
	w.sync()
	w.wg.Add(2)
	go w.read()
	go w.work()
	return w, nil
}

func (w *watcher) close() error {
	close(w.stop)
	err := w.w.Close()
	w.wg.Wait()
	return err
}

// changesMoved tells the watcher that the set of open changes may have
// changed (one was recorded, applied, rejected, undone). It does not block
// and takes no lock the engine holds: the engine calls it with e.mu held.
func (w *watcher) changesMoved() {
	w.mu.Lock()
	w.resync = true
	w.mu.Unlock()
	w.wake()
}

// wanted returns the directories to watch: for the file of every open
// change (and the old path of a rename), its directory, or the nearest
// ancestor of it that exists, within the workspace.
func (w *watcher) wanted() map[string]bool {
	e := w.e
	e.cs.mu.Lock()
	var files []string
	for _, c := range e.cs.st.Changes {
		if !revalidatable(c.Status) || c.Abs == "" {
			continue
		}
		files = append(files, c.Abs)
		if c.OldAbs != "" {
			files = append(files, c.OldAbs)
		}
	}
	e.cs.mu.Unlock()
	dirs := map[string]bool{}
	for _, f := range files {
		if d, ok := w.watchDir(f); ok {
			dirs[d] = true
		}
	}
	return dirs
}

// watchDir is the directory to watch for file: its directory, or the
// nearest existing ancestor inside the workspace; false for a file outside
// the workspace or in smith's state folder.
func (w *watcher) watchDir(file string) (string, bool) {
	root := w.e.ws.root
	if !under(file, root) || file == root || w.inStateDir(file) {
		return "", false
	}
	for d := filepath.Dir(file); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d, true
		}
		if d == root || len(d) <= len(root) {
			return "", false
		}
	}
}

// inStateDir reports whether p lies in smith's state folder (when that
// lies inside the workspace): smith's own writes are never changes.
func (w *watcher) inStateDir(p string) bool {
	return under(p, w.e.store.dir)
}

// sync adds the watches the open changes need and drops the others. It
// returns the directories it added: changes in them may have been written
// while nothing watched, so the caller re-validates them.
func (w *watcher) sync() []string {
	want := w.wanted()
	var added []string
	for _, d := range w.w.WatchList() {
		if !want[d] {
			_ = w.w.Remove(d) // gone already when the directory was removed
		}
		delete(want, d)
	}
	for d := range want {
		if err := w.w.Add(d); err != nil {
			w.addFailed(d, err)
			continue
		}
		added = append(added, d)
	}
	slices.Sort(added)
	return added
}

// addFailed reports a watch that could not be added. Running out of
// inotify watches is reported once, with the fix: without it the open
// changes in that directory would silently stop following the disk.
func (w *watcher) addFailed(dir string, err error) {
	if errors.Is(err, os.ErrNotExist) {
		return // removed since wanted looked; its create event resyncs
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) {
		if !w.warned {
			w.warned = true
			w.e.log.Warn("file watcher: the kernel's limit of inotify watches is reached, so open changes in this directory are not re-validated when their files change on disk; raise the limit, e.g. sudo sysctl fs.inotify.max_user_watches=524288; smith tries again whenever the open changes move",
				"dir", dir, "err", err)
		}
		return
	}
	w.e.log.Warn("file watcher: cannot watch a directory of open changes; they are re-validated only when an editor reports a change", "dir", dir, "err", err)
}

// read drains fsnotify's channels; it only records and wakes the worker.
func (w *watcher) read() {
	defer w.wg.Done()
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			w.mu.Lock()
			w.dirty[ev.Name] = w.dirty[ev.Name] || ev.Has(fsnotify.Create)
			w.mu.Unlock()
			w.wake()
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.mu.Lock()
				w.rescan = true
				w.mu.Unlock()
				w.wake()
			} else {
				w.e.log.Warn("file watcher", "err", err)
			}
		}
	}
}

func (w *watcher) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// work handles batches of changed paths: after the first event it waits
// for WatchDebounce, so that an editor's save (several events) or a burst
// of writes is handled once, with the file's final content.
func (w *watcher) work() {
	defer w.wg.Done()
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
		}
		// Moving the watches waits for nothing: a change just recorded
		// is watched at once, as it was when every directory was, so
		// that an edit right after it is seen as an edit (and debounced
		// like one), not folded into the re-validation of a new watch.
		w.mu.Lock()
		onlyResync := w.resync && !w.rescan && len(w.dirty) == 0
		w.mu.Unlock()
		if !onlyResync {
			select {
			case <-w.stop:
				return
			case <-time.After(w.e.cfg.WatchDebounce):
			}
		}
		w.mu.Lock()
		dirty, rescan, resync := w.dirty, w.rescan, w.resync
		w.dirty, w.rescan, w.resync = map[string]bool{}, false, false
		w.mu.Unlock()
		var paths []string
		for p, created := range dirty {
			if created {
				// A new directory may be where a change's file will be.
				if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
					resync = true
				}
			}
			paths = append(paths, p)
		}
		if resync || rescan {
			paths = append(paths, w.sync()...)
		}
		if rescan {
			w.e.revalidateAll()
			continue
		}
		w.e.revalidatePaths(paths)
	}
}

// revalidatePaths re-validates the open changes of files at or under the
// given paths and announces those whose status or hunks changed.
func (e *Engine) revalidatePaths(paths []string) {
	if len(paths) == 0 {
		return
	}
	e.cs.mu.Lock()
	var ids []string
	for _, c := range e.cs.st.Changes {
		if !revalidatable(c.Status) || c.Abs == "" {
			continue
		}
		if slices.ContainsFunc(paths, func(p string) bool { return under(c.Abs, p) || (c.OldAbs != "" && under(c.OldAbs, p)) }) {
			ids = append(ids, c.ID)
		}
	}
	e.cs.mu.Unlock()
	e.revalidateIDs(ids)
}

// revalidateAll re-validates every open change.
func (e *Engine) revalidateAll() {
	e.cs.mu.Lock()
	var ids []string
	for _, c := range e.cs.st.Changes {
		if revalidatable(c.Status) && c.Abs != "" {
			ids = append(ids, c.ID)
		}
	}
	e.cs.mu.Unlock()
	e.revalidateIDs(ids)
}

// under reports whether path is dir or lies below it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

func revalidatable(status string) bool {
	return status == StatusPending || status == StatusConflict || status == StatusStale || status == StatusUndone
}

// Revalidate re-validates the open changes of path (absolute) against the
// text the user sees now. Fronts call it when a buffer changes
// (textDocument/didChange); the watcher calls it for disk changes.
func (e *Engine) Revalidate(path string) {
	e.revalidatePaths([]string{filepath.Clean(path)})
}

func (e *Engine) revalidateIDs(ids []string) {
	defer e.flush()
	e.cs.writeMu.Lock()
	defer e.cs.writeMu.Unlock()
	for _, id := range ids {
		c, err := e.cs.record(id)
		if err != nil {
			continue
		}
		text, exists, err := e.userText(nil, c.source())
		if err != nil {
			continue
		}
		// Which change, and the text it was checked against: what to
		// look for when a front asks why a file was read.
		e.log.Debug("re-validated", "change", id, "path", c.Path, "bytes", len(text))
		if e.revalidate(id, text, exists) {
			e.queue(Notification{Kind: NoteChangeUpdated, Change: e.view(id)})
		}
	}
}
