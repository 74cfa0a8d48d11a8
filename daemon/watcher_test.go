package daemon

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// watchList is what the engine's fsnotify watcher watches now, sorted.
func watchList(e *Engine) []string {
	l := e.watch.w.WatchList()
	slices.Sort(l)
	return l
}

// TestWatcherFollowsOpenChanges: the watcher watches nothing in a workspace
// without open changes, however many directories it has; the directory of
// a file gets a watch when a change to it is proposed, a disk edit there is
// seen through it, and the watch goes when the change is no longer open.
func TestWatcherFollowsOpenChanges(t *testing.T) {
	files := map[string]string{"main.go": mainGo}
	for i := range 300 {
		files[fmt.Sprintf("pkg%d/sub%d/x.go", i/30, i%30)] = "package x\n"
	}
	f := newFixture(t, fixtureOpts{protocol: "v0", files: files})
	if l := watchList(f.e); len(l) != 0 {
		t.Fatalf("no open change, but %d watches: %v", len(l), l)
	}
	p := f.e.Attach(nil)
	res, _ := f.mustChat(p, "rename Foo to Bar in main.go")
	c := f.change(res)
	waitFor(t, "a watch on main.go's directory", func() bool { return slices.Equal(watchList(f.e), []string{f.ws}) })

	// The watch is what notices an edit on disk.
	f.write("main.go", "package main\n")
	waitFor(t, "the change to conflict after the edit", func() bool {
		now, _ := f.e.Change(c.ID)
		return now.Status == StatusConflict
	})

	if _, err := f.e.Reject(WithPeer(context.Background(), p), c.ID, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no watch once the change is rejected", func() bool { return len(watchList(f.e)) == 0 })
}

// TestWatcherWatchesOpenChangesAtStart: an engine that opens a workspace
// with an open change (a restart) watches its directory at once.
func TestWatcherWatchesOpenChangesAtStart(t *testing.T) {
	f, _, c := renameProposed(t)
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	if l := watchList(f.e); !slices.Equal(l, []string{f.ws}) {
		t.Fatalf("after a restart with change %s open, watches %v, want [%s]", c.ID, l, f.ws)
	}
}

// TestWatchDirOfMissingDirectory: a change to a file in a directory that
// does not exist yet is watched at its nearest existing ancestor, and the
// watch moves down once the directory exists; nothing outside the workspace
// or in smith's state folder is watched.
func TestWatchDirOfMissingDirectory(t *testing.T) {
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"a/x.go": "package a\n"}})
	w := f.e.watch
	file := f.path("a/b/c/new.go")
	if d, ok := w.watchDir(file); !ok || d != f.path("a") {
		t.Fatalf("watchDir(%s) = %q, %v; want %s", file, d, ok, f.path("a"))
	}
	if err := os.MkdirAll(f.path("a/b/c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if d, ok := w.watchDir(file); !ok || d != f.path("a/b/c") {
		t.Fatalf("after mkdir, watchDir = %q, %v; want %s", d, ok, f.path("a/b/c"))
	}
	for _, out := range []string{filepath.Join(filepath.Dir(f.ws), "elsewhere.go"), f.ws} {
		if d, ok := w.watchDir(out); ok {
			t.Errorf("watchDir(%s) = %s, want no watch", out, d)
		}
	}
}

// TestWatchLimitReportedOnce: running out of inotify watches is logged
// once, with the setting that fixes it, however often it happens.
func TestWatchLimitReportedOnce(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo},
		mutate: func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) }})
	w := f.e.watch
	for _, d := range []string{f.path("a"), f.path("b"), f.path("c")} {
		w.addFailed(d, &os.PathError{Op: "inotify_add_watch", Path: d, Err: syscall.ENOSPC})
	}
	if n := strings.Count(logs.String(), "fs.inotify.max_user_watches"); n != 1 {
		t.Errorf("the watch limit was reported %d times, want once with the fix:\n%s", n, logs.String())
	}
}
