package daemon

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watcher is the one fsnotify watcher of a workspace. fsnotify watches are
// not recursive, so every directory is added by hand (skipping .git,
// node_modules and .agentsmithy, and smith's state folder should it lie
// inside the workspace). Following gopls, one goroutine drains the fsnotify channels
// and does nothing else; a second one debounces, adds new directories and
// re-validates the pending changes of the files that changed.
type watcher struct {
	e    *Engine
	w    *fsnotify.Watcher
	skip map[string]bool // directory base names never watched

	kick chan struct{} // wakes the worker; buffered 1
	mu   sync.Mutex    // guards dirty, rescan
	// dirty holds changed paths not yet handled, with whether a Create
	// was seen (a new directory must be added and scanned).
	dirty  map[string]bool
	rescan bool // events were lost: re-validate everything

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
		// .agentsmithy is AgentSmithy's own state (shadow repository,
		// checkpoints): busy on every turn, never a user file.
		skip:  map[string]bool{".git": true, "node_modules": true, ".agentsmithy": true},
		kick:  make(chan struct{}, 1),
		dirty: map[string]bool{},
		stop:  make(chan struct{}),
	}
	if err := w.addTree(e.ws.root); err != nil {
		fw.Close()
		return nil, err
	}
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

// ignored reports whether a directory is never watched.
func (w *watcher) ignored(dir string) bool {
	if dir == w.e.ws.root {
		return false
	}
	if w.skip[filepath.Base(dir)] {
		return true
	}
	sd := w.e.store.dir
	return dir == sd || strings.HasPrefix(dir, sd+string(filepath.Separator))
}

// addTree watches dir and every directory below it.
func (w *watcher) addTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // vanished while walking
		}
		if !d.IsDir() {
			return nil
		}
		if w.ignored(p) {
			return filepath.SkipDir
		}
		if err := w.w.Add(p); err != nil && p == dir {
			return err
		}
		return nil
	})
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
		select {
		case <-w.stop:
			return
		case <-time.After(w.e.cfg.WatchDebounce):
		}
		w.mu.Lock()
		dirty, rescan := w.dirty, w.rescan
		w.dirty, w.rescan = map[string]bool{}, false
		w.mu.Unlock()
		if rescan {
			// Lost events may include new directories.
			if err := w.addTree(w.e.ws.root); err != nil {
				w.e.log.Warn("file watcher rescan", "err", err)
			}
			w.e.revalidateAll()
			continue
		}
		var paths []string
		for p, created := range dirty {
			if created {
				if fi, err := os.Lstat(p); err == nil && fi.IsDir() && !w.ignored(p) {
					// Files may exist in it already (mkdir -p a/b && touch a/b/f):
					// add it, and treat everything under it as changed.
					_ = w.addTree(p)
				}
			}
			paths = append(paths, p)
		}
		w.e.revalidatePaths(paths)
	}
}

// revalidatePaths re-validates the open changes of files at or under the
// given paths and announces those whose status or hunks changed.
func (e *Engine) revalidatePaths(paths []string) {
	e.mu.Lock()
	var ids []string
	for _, c := range e.st.Changes {
		if !revalidatable(c.Status) || c.Abs == "" {
			continue
		}
		if slices.ContainsFunc(paths, func(p string) bool { return under(c.Abs, p) || (c.OldAbs != "" && under(c.OldAbs, p)) }) {
			ids = append(ids, c.ID)
		}
	}
	e.mu.Unlock()
	e.revalidateIDs(ids)
}

// revalidateAll re-validates every open change.
func (e *Engine) revalidateAll() {
	e.mu.Lock()
	var ids []string
	for _, c := range e.st.Changes {
		if revalidatable(c.Status) && c.Abs != "" {
			ids = append(ids, c.ID)
		}
	}
	e.mu.Unlock()
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
	e.applyMu.Lock()
	defer e.applyMu.Unlock()
	for _, id := range ids {
		c, err := e.record(id)
		if err != nil {
			continue
		}
		text, exists, err := e.userText(nil, c.source())
		if err != nil {
			continue
		}
		if e.revalidate(id, text, exists) {
			e.queue(Notification{Kind: NoteChangeUpdated, Change: e.view(id)})
		}
	}
}
