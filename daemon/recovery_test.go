package daemon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smith-dev/smith/protocol"
)

// TestRestartSettlesAWriteKilledBeforeItsStatus: serve killed after a
// change's file was written but before its status was saved leaves a
// pending journal record, the change "pending" against the old text, a
// temp file of its own in the workspace and .tmp-* files in the state
// folder. The next start must list the change as applied (not stale),
// keep it undoable, and remove those temporaries.
func TestRestartSettlesAWriteKilledBeforeItsStatus(t *testing.T) {
	f, p, c := renameProposed(t)
	f.mustApply(p, c.ID)
	dir, err := StateDirOf(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	// Rewind state.json to the moment of the kill.
	statePath := filepath.Join(dir, "state.json")
	st := readStateJSON(t, statePath)
	for _, x := range st["changes"].([]any) {
		ch := x.(map[string]any)
		if ch["id"] != c.ID {
			continue
		}
		ch["status"], ch["baseHash"] = StatusPending, hashBytes([]byte(mainGo))
		for _, h := range ch["hunks"].([]any) {
			h.(map[string]any)["status"] = StatusPending
		}
	}
	undo := st["undo"].([]any)
	undo[len(undo)-1].(map[string]any)["state"] = undoPending
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	leftovers := map[string]string{
		statePath:                       string(b),
		filepath.Join(dir, ".tmp-1234"): "half a state file",
		filepath.Join(dir, "blobs", "ab", ".tmp-5678"): strings.Repeat("x", 1<<16),
		f.path(".main.go.smith-0123456789ab"):          "a temp file of a single write",
	}
	// The single write's staging journal names its temp file.
	realWS, _ := filepath.EvalSymlinks(f.ws)
	tx := filepath.Join(dir, "txn", "tx-1-killed")
	manifest := `{"version":2,"root":` + jsonString(realWS) + `,"state":"staging","entries":[{"path":"main.go","temp":".main.go.smith-0123456789ab","existed":true,"mode":420,"before":"x","after":"y"}]}`
	leftovers[filepath.Join(tx, "manifest.json")] = manifest
	for p, text := range leftovers {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	f.e = f.open()
	p = f.e.Attach(nil)
	got, err := f.e.Change(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusApplied {
		t.Errorf("after the restart change %s is %s (%s), want applied", c.ID, got.Status, got.Reason)
	}
	for _, h := range got.Hunks {
		if h.Status != StatusApplied {
			t.Errorf("hunk %s is %s, want applied", h.ID, h.Status)
		}
	}
	for p := range leftovers {
		if p == statePath {
			continue
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("left behind: %s", p)
		}
	}
	if _, err := f.e.Undo(WithPeer(context.Background(), p), c.ID); err != nil {
		t.Fatalf("undo after the restart: %v", err)
	}
	if f.read("main.go") != mainGo {
		t.Error("undo did not restore main.go")
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestFIFOChangeIsRefused: a change naming a FIFO must be refused without
// opening it (reading a FIFO blocks until a writer comes: the turn hung
// for good). A watcher keeps trying to open the FIFO for writing without
// blocking, which succeeds only while someone has it open for reading: it
// records that the engine opened it, and releases the engine so that the
// test fails instead of hanging.
func TestFIFOChangeIsRefused(t *testing.T) {
	replay := []byte(`data: {"dialog_id": "d1", "type": "user", "content": "x"}` + "\r\n\r\n" +
		`data: {"dialog_id": "d1", "type": "file_edit", "file": "pipe", "diff": "--- a/pipe\n+++ b/pipe\n@@ -1 +1 @@\n-a\n+b\n"}` + "\r\n\r\n" +
		`data: {"dialog_id": "d1", "type": "done", "done": true}` + "\r\n\r\n")
	f := newFixture(t, fixtureOpts{protocol: "v2", replay: replay})
	if err := syscall.Mkfifo(f.path("pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	blocked := make(chan bool, 1)
	go func() {
		opened := false
		for {
			if w, err := os.OpenFile(f.path("pipe"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				opened = true
				w.Close() // the reader wakes up and reads EOF
			}
			select {
			case <-done:
				blocked <- opened
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	p := f.e.Attach(nil)
	res, evs := f.mustChat(p, "anything")
	close(done)
	if <-blocked {
		t.Fatal("the engine opened the FIFO for reading (the turn would block until a writer came)")
	}
	if len(res.Changes) != 1 {
		t.Fatalf("changes %v, want 1", res.Changes)
	}
	c, _ := f.e.Change(res.Changes[0])
	if c.Status != StatusRejected || !strings.Contains(c.Reason, "not a regular file") {
		t.Errorf("change %+v: want refused as not a regular file", c)
	}
	refused := false
	for _, ev := range evs {
		if ev.Type == protocol.KindViolation && strings.Contains(ev.Violation.Message, "not a regular file") {
			refused = true
		}
	}
	if !refused {
		t.Errorf("no violation names the FIFO: %+v", evs)
	}
}

// TestStateFolderInsideTheWorkspaceIsNotWritable: with the state folder
// inside the workspace (the default when the workspace is $HOME), no
// change may name a path in it.
func TestStateFolderInsideTheWorkspaceIsNotWritable(t *testing.T) {
	f := newFixture(t, fixtureOpts{protocol: "v0", mutate: func(c *Config) {
		c.StateDir = filepath.Join(c.Workspace, ".local", "state", "smith")
	}})
	dir, err := StateDirOf(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(f.ws, filepath.Join(dir, "txn", "tx-1-forged", "manifest.json"))
	if _, _, err := f.e.ws.resolve(rel); err == nil || !strings.Contains(err.Error(), "state folder") {
		t.Fatalf("resolve(%s) = %v, want refused as smith's state folder", rel, err)
	}
	if _, _, err := f.e.ws.resolve(".local/state/smith/other/state.json"); err == nil {
		t.Fatal("another workspace's state is writable")
	}
	if _, _, err := f.e.ws.resolve(".local/share/ok.txt"); err != nil {
		t.Fatalf("a path beside the state folder is refused: %v", err)
	}
}
