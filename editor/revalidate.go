package editor

import (
	"sync"
	"time"
)

// revalidateDelay is how long after the last didChange of a buffer the
// engine re-validates the changes of its file. Engine.Revalidate scans the
// change list and re-plans every open change of the file against the whole
// buffer (diffapply, linear in the file's size), which is too much for
// every keystroke on a large file; a burst of typing is handled once, with
// the buffer's final text, as the watcher does for disk writes.
const revalidateDelay = 100 * time.Millisecond

// revalidator collects the paths of edited buffers and, revalidateDelay
// after the first edit of a burst, hands them to run on a goroutine of its
// own: didChange itself must not wait for the engine, which may be in an
// apply that waits for this very editor to answer workspace/applyEdit.
type revalidator struct {
	run func(paths []string)

	mu      sync.Mutex // guards paths, armed, stopped
	paths   map[string]struct{}
	armed   bool
	stopped bool
	running sync.Mutex // held while run runs, so that stop can wait for it
}

func newRevalidator(run func(paths []string)) *revalidator {
	return &revalidator{run: run, paths: map[string]struct{}{}}
}

// touch records that the buffer of path changed.
func (r *revalidator) touch(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	r.paths[path] = struct{}{}
	if !r.armed {
		r.armed = true
		time.AfterFunc(revalidateDelay, r.fire)
	}
}

func (r *revalidator) fire() {
	r.running.Lock()
	defer r.running.Unlock()
	r.mu.Lock()
	paths := make([]string, 0, len(r.paths))
	for p := range r.paths {
		paths = append(paths, p)
	}
	clear(r.paths)
	r.armed = false
	stopped := r.stopped
	r.mu.Unlock()
	if !stopped {
		r.run(paths)
	}
}

// stop drops pending paths and waits for a run in progress: after it, run
// is not called again.
func (r *revalidator) stop() {
	r.mu.Lock()
	r.stopped = true
	clear(r.paths)
	r.mu.Unlock()
	r.running.Lock()
	//lint:ignore SA2001 an empty critical section on purpose: it waits for a run of fire to end
	r.running.Unlock()
}
