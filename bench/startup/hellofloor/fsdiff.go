//go:build !floor_only || floor_fsdiff

package main

import (
	"os"

	"github.com/fsnotify/fsnotify"
	"github.com/sourcegraph/go-diff/diff"
)

func init() { uses = append(uses, useFSDiff) }

// useFSDiff parses a diff and watches a directory.
func useFSDiff() {
	if fds, err := diff.ParseMultiFileDiff([]byte(os.Args[1])); err == nil && len(fds) > 0 {
		os.Stdout.WriteString(fds[0].NewName)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return
	}
	_ = w.Add(os.Args[2])
	for ev := range w.Events {
		os.Stdout.WriteString(ev.String())
	}
}
