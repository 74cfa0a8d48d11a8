package editor_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/protocol/upstream"
)

// waitChange waits (at most a few seconds) for a smith/changeUpdated of
// change id with the given status.
func waitChange(t *testing.T, s *session, id, status string) daemon.Change {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
	defer cancel()
	var got daemon.Change
	if _, err := s.WaitNotification(ctx, editor.MethodChangeUpdated, func(raw json.RawMessage) bool {
		var p editor.ChangeUpdatedParams
		if json.Unmarshal(raw, &p) != nil || p.Change.ID != id || p.Change.Status != status {
			return false
		}
		got = p.Change
		return true
	}); err != nil {
		t.Fatalf("no smith/changeUpdated of %s with status %s: %v", id, status, err)
	}
	return got
}

// TestDidChangeRevalidates: the user edits away, in the buffer only, the
// lines a pending change rewrites; the change becomes conflict and the
// editor is told, before any apply (the file on disk never changes, so the watcher
// has nothing to see).
func TestDidChangeRevalidates(t *testing.T) {
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV0})
	s := serve(t, ws, up, t.TempDir())
	ctx := testCtx(t)
	path := filepath.Join(ws, "calc.go")
	if err := s.Open(ctx, path, calcGo); err != nil {
		t.Fatal(err)
	}
	res := s.mustChat("rename total to sum in calc.go")
	if c := s.change(res.Changes[0]); c.Status != daemon.StatusPending {
		t.Fatalf("change %s is %s, want pending", c.ID, c.Status)
	}
	if err := s.Type(ctx, path, strings.ReplaceAll(calcGo, "total", "acc")); err != nil {
		t.Fatal(err)
	}
	waitChange(t, s, res.Changes[0], daemon.StatusConflict)
	if got := readFile(t, path); got != calcGo {
		t.Errorf("calc.go on disk changed:\n%s", got)
	}
}
