package editor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/editor/editortest"
	"github.com/smith-dev/smith/protocol"
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
	t.Parallel()
	_, s := serveCalc(t)
	ctx := testCtx(t)
	path := s.openCalc(ctx)
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

// TestDeleteOpenFileWithoutResourceOperations: an editor that cannot
// delete files through workspace/applyEdit has old.go open; applying the
// deletion writes it on disk (atomically, as for a closed file) and tells
// the editor to reload, instead of failing as a conflict. The disk write
// is guarded by the text smith planned against: a disk that holds
// something else is a conflict and keeps its file.
func TestDeleteOpenFileWithoutResourceOperations(t *testing.T) {
	t.Parallel()
	const diskEdit = "package old\n\n// written behind the buffer\n"
	tests := []struct {
		name   string
		edited bool // the disk differs from the buffer at apply
	}{
		{"disk as planned", false},
		{"disk changed", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t, map[string]string{"old.go": "package old\n"})
			up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV0})
			ed := startServe(t, up, t.TempDir())
			ed.ResourceOperations() // none
			ctx := testCtx(t)
			if _, err := ed.Initialize(ctx, ws, nil); err != nil {
				t.Fatalf("initialize: %v", err)
			}
			s := &session{Editor: ed, t: t, ws: ws}
			old := filepath.Join(ws, "old.go")
			if err := s.Open(ctx, old, "package old\n"); err != nil {
				t.Fatal(err)
			}
			del := s.mustChat("delete old.go")
			if tt.edited {
				// The buffer stays as planned; the disk moves on.
				if err := os.WriteFile(old, []byte(diskEdit), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": del.Changes[0]}, nil)
			if tt.edited {
				if got := rpcCode(t, err); got != editor.CodeConflict {
					t.Fatalf("apply over a changed disk: code %d, want %d (%v)", got, editor.CodeConflict, err)
				}
				if got := readFile(t, old); got != diskEdit {
					t.Errorf("old.go = %q, want it untouched", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if _, err := os.Stat(old); !os.IsNotExist(err) {
				t.Errorf("old.go still exists: %v", err)
			}
			if edits := s.Edits(); len(edits) != 0 {
				t.Errorf("workspace/applyEdit sent to an editor that cannot delete: %s", edits)
			}
			if _, err := s.WaitNotification(ctx, editor.MethodFileChanged, func(raw json.RawMessage) bool {
				var p editor.FileChangedParams
				return json.Unmarshal(raw, &p) == nil && p.URI == editor.DocumentURI(editortest.FileURI(old))
			}); err != nil {
				t.Errorf("no smith/fileChanged for old.go: %v", err)
			}
			if c := s.change(del.Changes[0]); c.Status != daemon.StatusApplied {
				t.Errorf("change %s is %s, want applied", c.ID, c.Status)
			}
			// Undo brings the file back on disk (the buffer still holds
			// its text, so nothing is lost).
			if err := s.Call(ctx, editor.MethodUndo, map[string]any{"changeId": del.Changes[0]}, nil); err != nil {
				t.Fatalf("undo: %v", err)
			}
			if got := readFile(t, old); got != "package old\n" {
				t.Errorf("old.go after undo = %q", got)
			}
		})
	}
}

// TestLongAnswerResultIsBounded: a smith/chat result carries at most
// MaxResultText bytes of the answer (its beginning, textTruncated set);
// the smith/event notifications carried all of it.
func TestLongAnswerResultIsBounded(t *testing.T) {
	t.Parallel()
	const n = 30000 // about 1.8 MB, more than editor.MaxResultText
	var body strings.Builder
	for i := range n {
		fmt.Fprintf(&body, "data: {\"type\":\"delta\",\"content\":\"%06d lorem ipsum dolor sit amet, consectetur adipiscing elit \"}\n\n", i)
	}
	body.WriteString("data: {\"type\":\"done\",\"citations\":[]}\n\n")
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Dialect: protocol.DialectTextbook, PingInterval: -1, Replay: []byte(body.String())})
	s := serve(t, ws, up, t.TempDir(), "--dialect", "textbook")
	var res struct {
		chatResult
		TextTruncated bool `json:"textTruncated"`
	}
	if err := s.Call(testCtx(t), editor.MethodChat, map[string]any{"message": "tell me everything"}, &res); err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	for _, ev := range s.events(res.TurnID) {
		if ev.Event.Type == protocol.KindText {
			streamed.WriteString(ev.Event.Text)
		}
	}
	if streamed.Len() <= editor.MaxResultText {
		t.Fatalf("the events carried %d bytes, want the whole answer (more than %d)", streamed.Len(), editor.MaxResultText)
	}
	if !res.TextTruncated || len(res.Text) > editor.MaxResultText || !strings.HasPrefix(streamed.String(), res.Text) || len(res.Text) < editor.MaxResultText-100 {
		t.Errorf("result: %d bytes of text, textTruncated %v; want the first %d bytes of the %d streamed, marked truncated",
			len(res.Text), res.TextTruncated, editor.MaxResultText, streamed.Len())
	}
}

// TestClientRebuildsACutText: editor.Client (the terminal's side) gets a
// result whose text the server cut at MaxResultText; it gives its caller
// the whole answer, rebuilt from the turn's events.
func TestClientRebuildsACutText(t *testing.T) {
	t.Parallel()
	const n = 30000 // about 1.8 MB
	var body strings.Builder
	for i := range n {
		fmt.Fprintf(&body, "data: {\"type\":\"delta\",\"content\":\"%06d lorem ipsum dolor sit amet, consectetur adipiscing elit \"}\n\n", i)
	}
	body.WriteString("data: {\"type\":\"done\",\"citations\":[]}\n\n")
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Dialect: protocol.DialectTextbook, PingInterval: -1, Replay: []byte(body.String())})
	state := t.TempDir()
	srv := editor.NewServer(editor.Options{
		Resolve: func(_ context.Context, ws string, init editor.InitOptions) (daemon.Config, error) {
			return editor.ApplyInitOptions(daemon.Config{Workspace: ws, Upstream: up, Dialect: protocol.DialectTextbook, StateDir: state, NoWatch: true}, init)
		},
	})
	t.Cleanup(func() { srv.Close() })
	serverEnd, clientEnd := net.Pipe()
	ctx := testCtx(t)
	go srv.ServeConn(ctx, serverEnd)
	c := editor.NewClient(clientEnd, editor.ClientOptions{})
	defer c.Close()
	if _, err := c.Initialize(ctx, ws, "gaps-test", "0"); err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	res, err := c.Chat(ctx, daemon.ChatRequest{Message: "tell me everything"}, func(ev protocol.Event) {
		if ev.Type == protocol.KindText {
			streamed.WriteString(ev.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if streamed.Len() <= editor.MaxResultText || res.Text != streamed.String() || res.TextTruncated || res.Summary.Text != res.Text {
		t.Errorf("result text %d bytes (truncated %v, summary %d), streamed %d: want the whole answer",
			len(res.Text), res.TextTruncated, len(res.Summary.Text), streamed.Len())
	}
}
