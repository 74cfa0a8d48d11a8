package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/editor/editortest"
	"github.com/smith-dev/smith/protocol/upstream"
)

// relayChat is the part of a smith/chat result the relay tests read.
type relayChat struct {
	Outcome string   `json:"outcome"`
	Changes []string `json:"changes"`
}

func mustChatIn(t *testing.T, ctx context.Context, ed *editortest.Editor, who string) relayChat {
	t.Helper()
	var res relayChat
	if err := ed.Call(ctx, editor.MethodChat, map[string]any{"message": renameMsg}, &res); err != nil {
		t.Fatalf("smith/chat from %s: %v\n%s", who, err, ed.Stderr())
	}
	if res.Outcome != "completed" || len(res.Changes) != 1 {
		t.Fatalf("smith/chat from %s: %+v, want one change from a completed turn", who, res)
	}
	return res
}

func listChanges(t *testing.T, ctx context.Context, ed *editortest.Editor) map[string]string {
	t.Helper()
	var all []daemon.Change
	if err := ed.Call(ctx, editor.MethodChanges, map[string]any{}, &all); err != nil {
		t.Fatalf("smith/changes: %v", err)
	}
	m := map[string]string{}
	for _, c := range all {
		m[c.ID] = c.Status
	}
	return m
}

func waitChange(t *testing.T, ctx context.Context, ed *editortest.Editor, who, id, status string) {
	t.Helper()
	if _, err := ed.WaitNotification(ctx, editor.MethodChangeUpdated, func(p json.RawMessage) bool {
		got, st := changeNote(p)
		return got == id && st == status
	}); err != nil {
		t.Errorf("%s was not told that %s is %s: %v", who, id, status, err)
	}
}

func quit(t *testing.T, ctx context.Context, ed *editortest.Editor, who string) {
	t.Helper()
	if err := ed.Call(ctx, editor.MethodShutdown, nil, nil); err != nil {
		t.Fatalf("shutdown of %s: %v", who, err)
	}
	if err := ed.Notify(ctx, editor.MethodExit, nil); err != nil {
		t.Fatalf("exit of %s: %v", who, err)
	}
	if code, err := ed.Wait(20 * time.Second); err != nil || code != 0 {
		t.Fatalf("smith serve of %s after shutdown and exit: %d, %v\n%s", who, code, err, ed.Stderr())
	}
}

// TestSecondEditorJoinsServe: a second editor's stdio smith serve on a
// workspace that a first one holds does not fail on the lock; it relays
// to the first, and both editors share one engine: B's turn is in A's
// list, B's apply and A's undo are heard on the other side, and A's apply
// of a file B has open goes into B's buffer (workspace/applyEdit, from the
// holder back through the relay). B leaving, by exit or by closing its
// stdin, leaves A working.
func TestSecondEditorJoinsServe(t *testing.T) {
	a := newAttachEnv(t, upstream.Options{})
	ctx := testContext(t)
	edA := a.serve()
	edB := a.serve() // fails on the state lock unless it joins A
	if !stderrSays(edB, "relaying this editor") {
		t.Errorf("B's smith serve does not say it joined A:\n%s", edB.Stderr())
	}

	c1 := mustChatIn(t, ctx, edB, "B").Changes[0]
	waitChange(t, ctx, edA, "A", c1, daemon.StatusPending)
	if got := listChanges(t, ctx, edA); got[c1] != daemon.StatusPending {
		t.Errorf("A's smith/changes after B's turn: %v, want %s pending", got, c1)
	}
	var applied daemon.Change
	if err := edB.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": c1}, &applied); err != nil || applied.Status != daemon.StatusApplied {
		t.Fatalf("apply from B: %+v, %v", applied, err)
	}
	if got := a.calc(); got != calcWant {
		t.Errorf("calc.go after B's apply:\n%s", got)
	}
	waitChange(t, ctx, edA, "A", c1, daemon.StatusApplied)
	if got := listChanges(t, ctx, edA); got[c1] != daemon.StatusApplied {
		t.Errorf("A's smith/changes after B's apply: %v", got)
	}
	var dialogsA, dialogsB []daemon.Dialog
	if err := edA.Call(ctx, editor.MethodDialogs, nil, &dialogsA); err != nil {
		t.Fatal(err)
	}
	if err := edB.Call(ctx, editor.MethodDialogs, nil, &dialogsB); err != nil {
		t.Fatal(err)
	}
	if len(dialogsA) == 0 || !cmp.Equal(dialogsA, dialogsB) {
		t.Errorf("A and B list different dialogs:\n%s", cmp.Diff(dialogsA, dialogsB))
	}
	var undone daemon.Change
	if err := edA.Call(ctx, editor.MethodUndo, map[string]any{}, &undone); err != nil || undone.ID != c1 {
		t.Fatalf("undo from A of B's apply: %+v, %v", undone, err)
	}
	waitChange(t, ctx, edB, "B", c1, daemon.StatusUndone)
	if got := a.calc(); got != calcOrig {
		t.Errorf("calc.go after A's undo:\n%s", got)
	}

	// A request from the holder to the joined editor: B has calc.go open,
	// so A's apply goes into B's buffer, not on disk.
	path := filepath.Join(a.ws, "calc.go")
	if err := edB.Open(ctx, path, calcOrig); err != nil {
		t.Fatal(err)
	}
	c2 := mustChatIn(t, ctx, edA, "A").Changes[0]
	if err := edA.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": c2}, nil); err != nil {
		t.Fatalf("apply from A of a file open in B: %v", err)
	}
	if b, _ := edB.Buffer(path); b.Text != calcWant || len(edB.Edits()) != 1 {
		t.Errorf("B's buffer after A's apply (%d workspace/applyEdit):\n%s", len(edB.Edits()), b.Text)
	}
	if got := a.calc(); got != calcOrig {
		t.Errorf("calc.go was written behind B's buffer:\n%s", got)
	}

	// B leaves without saving its buffer: the file never got c2, and the
	// listing says so rather than "applied".
	// The holder learns that B left when the relay's connection to it
	// ends, which may come after B's serve has exited: ask until it has.
	quit(t, ctx, edB, "B")
	got := listChanges(t, ctx, edA)
	for deadline := time.Now().Add(10 * time.Second); got[c2] != daemon.StatusStale && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		got = listChanges(t, ctx, edA)
	}
	if got[c2] != daemon.StatusStale {
		t.Errorf("A's smith/changes 10 s after B left: %v", got)
	}

	// An editor that just closes its end: its serve ends 0 and says nothing
	// to it, and A goes on.
	edC := a.serve()
	if err := edC.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if code, err := edC.Wait(20 * time.Second); err != nil || code != 0 {
		t.Fatalf("smith serve of C after its stdin closed: %d, %v\n%s", code, err, edC.Stderr())
	}
	if n := edC.Notifications("window/showMessage"); len(n) != 0 {
		t.Errorf("C was shown %v when it left", n)
	}
	c3 := mustChatIn(t, ctx, edA, "A").Changes[0]
	if c3 == c2 {
		t.Errorf("A's turn after C left made %s again", c3)
	}
	quit(t, ctx, edA, "A")
}

// TestJoinedEditorWhenHolderExits: when the smith serve that B joined
// ends (its editor left), B's editor is told with window/showMessage and
// B's serve ends 0 by itself.
func TestJoinedEditorWhenHolderExits(t *testing.T) {
	a := newAttachEnv(t, upstream.Options{})
	ctx := testContext(t)
	edA := a.serve()
	edB := a.serve()
	if err := edB.Call(ctx, editor.MethodStatus, nil, nil); err != nil {
		t.Fatalf("smith/status through the relay: %v", err)
	}
	quit(t, ctx, edA, "A")
	n, err := edB.WaitNotification(ctx, "window/showMessage", nil)
	if err != nil {
		t.Fatalf("B was not told that A went away: %v\n%s", err, edB.Stderr())
	}
	var msg struct {
		Type    int    `json:"type"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(n.Params, &msg); err != nil || msg.Type != 1 || !strings.Contains(msg.Message, "has stopped") || !strings.Contains(msg.Message, a.ws) {
		t.Errorf("window/showMessage to B: %s (%v)", n.Params, err)
	}
	if code, err := edB.Wait(20 * time.Second); err != nil || code != 0 {
		t.Fatalf("smith serve of B after A left: %d, %v\n%s", code, err, edB.Stderr())
	}
}

// TestSecondEditorLockedWithoutServe: when the engine is held by a process
// that does not answer on serve.sock (here an engine in the test process,
// as an interactive smith chat would hold it), initialize fails and says
// who holds the workspace and what to do; nothing on disk changes.
func TestSecondEditorLockedWithoutServe(t *testing.T) {
	a := newAttachEnv(t, upstream.Options{})
	eng, err := daemon.New(context.Background(), daemon.Config{Workspace: a.ws, StateDir: a.state, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	before := snapshot(t, a.ws, a.state)

	ctx := testContext(t)
	ed := editortest.Start(t, a.smith, "serve", "--workspace", a.ws, "--upstream", a.upstream, "--state-dir", a.state)
	_, err = ed.Initialize(ctx, a.ws, nil)
	if err == nil {
		t.Fatal("initialize succeeded while another engine holds the workspace")
	}
	for _, want := range []string{"workspace state in use", "pid " + itoa(os.Getpid()), "no smith serve answers on " + a.socket(), "finish or stop it", "restart smith in this editor"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the initialize error does not say %q:\n%v", want, err)
		}
	}
	// The user is told too, not only the client's log.
	if _, err := ed.WaitNotification(ctx, "window/showMessage", func(p json.RawMessage) bool {
		var m struct {
			Type    int    `json:"type"`
			Message string `json:"message"`
		}
		return json.Unmarshal(p, &m) == nil && m.Type == 1 && strings.Contains(m.Message, "workspace state in use")
	}); err != nil {
		t.Errorf("no window/showMessage with the reason initialize failed: %v", err)
	}
	if err := ed.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if code, err := ed.Wait(20 * time.Second); err != nil || code != 0 {
		t.Errorf("smith serve after a refused initialize and a closed stdin: %d, %v", code, err)
	}
	if diff := cmp.Diff(before, snapshot(t, a.ws, a.state)); diff != "" {
		t.Errorf("files changed by a refused initialize (-before +after):\n%s", diff)
	}
	if a.chats.Load() != 0 {
		t.Errorf("the upstream got %d chat requests", a.chats.Load())
	}
}

// snapshot maps every file under dirs to its mode and content.
func snapshot(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			entry := fi.Mode().String()
			if fi.Mode().IsRegular() {
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				entry += " " + string(b)
			}
			m[path] = entry
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestJoiningServeKeepsItsWorkspaceFlag: a serve started with --workspace
// joins the engine of that workspace even when its editor names another
// root, and the holder (which has no --workspace of its own) opens that
// workspace for it, not the editor's root.
func TestJoiningServeKeepsItsWorkspaceFlag(t *testing.T) {
	a := newAttachEnv(t, upstream.Options{})
	ctx := testContext(t)
	edA := editortest.Start(t, a.smith, "serve", "--upstream", a.upstream, "--state-dir", a.state)
	if _, err := edA.Initialize(ctx, a.ws, nil); err != nil {
		t.Fatalf("initialize A: %v\n%s", err, edA.Stderr())
	}
	edB := editortest.Start(t, a.smith, "serve", "--workspace", a.ws, "--upstream", a.upstream, "--state-dir", a.state, "--log-level", "debug")
	res, err := edB.Initialize(ctx, t.TempDir(), map[string]any{"maxTurns": 3})
	if err != nil {
		t.Fatalf("initialize B: %v\n%s", err, edB.Stderr())
	}
	var r struct {
		Capabilities struct {
			Experimental struct {
				Smith struct {
					Workspace string `json:"workspace"`
				} `json:"smith"`
			} `json:"experimental"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Capabilities.Experimental.Smith.Workspace != a.ws {
		t.Errorf("B's initialize result names workspace %q, want %s (%v)", r.Capabilities.Experimental.Smith.Workspace, a.ws, err)
	}
	if !stderrSays(edB, "relaying this editor") {
		t.Errorf("B did not join A:\n%s", edB.Stderr())
	}
	c1 := mustChatIn(t, ctx, edB, "B").Changes[0]
	if got := listChanges(t, ctx, edA); got[c1] != daemon.StatusPending {
		t.Errorf("A's smith/changes after B's turn: %v", got)
	}
	quit(t, ctx, edB, "B")
	quit(t, ctx, edA, "A")
}

// stderrSays reports whether ed's server wrote want to its stderr, waiting
// a little for it: the log line is written before the answer on stdout, but
// the two pipes are copied by different goroutines.
func stderrSays(ed *editortest.Editor, want string) bool {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if strings.Contains(ed.Stderr(), want) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
