//go:build linux

package diffapply

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSwapRaceWritesNothingOutside: a goroutine keeps exchanging a
// workspace directory with a symlink to a directory outside (renameat2
// RENAME_EXCHANGE, atomic) while 1,000 commits write into that directory.
// A check made before the write cannot see the swap; the use through the
// workspace's os.Root must refuse it. Nothing may appear outside.
func TestSwapRaceWritesNothingOutside(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	dir, link := filepath.Join(root, "d"), filepath.Join(root, "swap")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte("start\n"), 0o644))
	must(t, os.Symlink(outside, link))
	ws, err := OpenWorkspace(root)
	must(t, err)
	defer ws.Close()

	var stop atomic.Bool
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Go(func() {
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2: %v", err)
				return
			}
			swaps.Add(1)
		}
	})
	ok := 0
	for i := range 1000 {
		writes := []Write{
			{Path: "d/f.txt", Content: []byte("write " + string(rune('a'+i%26)) + "\n")},
			{Path: "d/new.txt", Content: []byte("new\n")},
		}
		if ws.Commit(context.Background(), writes, "") == nil {
			ok++
		}
	}
	stop.Store(true)
	wg.Wait()
	ents, err := os.ReadDir(outside)
	must(t, err)
	if len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("%d files written outside the workspace: %v", len(ents), names)
	}
	t.Logf("%d of 1000 commits succeeded while %d swaps ran", ok, swaps.Load())
	if swaps.Load() == 0 {
		t.Fatal("no swap happened: the test tested nothing")
	}
}
