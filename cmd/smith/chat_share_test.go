package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/protocol/upstream"
)

// TestEditorJoinsTerminalChat: while an interactive smith chat holds the
// workspace's engine (no smith serve running), an editor's smith serve
// joins it through the chat's attach socket instead of failing on the
// lock, and so does another terminal; the chat's turns are heard in the
// editor and the editor's in the chat's engine. When the chat ends, the
// editor is told and its serve exits; the state is the chat's, intact.
func TestEditorJoinsTerminalChat(t *testing.T) {
	a := newAttachEnv(t, upstream.Options{})
	ctx := testContext(t)

	chat := a.smithCmd("chat", "--yes")
	stdin, err := chat.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var chatOut, chatErr bytes.Buffer
	chat.Stdout, chat.Stderr = &chatOut, &chatErr
	if err := chat.Start(); err != nil {
		t.Fatal(err)
	}
	chatDone := make(chan error, 1)
	go func() { chatDone <- chat.Wait() }()
	defer func() {
		if chat.ProcessState == nil {
			chat.Process.Kill()
		}
	}()
	// The socket appears once the chat holds the engine.
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := os.Stat(a.socket()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("smith chat did not share its engine on %s\n%s", a.socket(), chatErr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	ed := a.serve() // fails on the lock unless it joins the chat
	var st daemon.Status
	if err := ed.Call(ctx, editor.MethodStatus, nil, &st); err != nil {
		t.Fatalf("smith/status in an editor beside smith chat: %v\n%s", err, ed.Stderr())
	}
	if _, errs := a.mustRun("changes"); !strings.Contains(errs, "no changes recorded") {
		t.Errorf("smith changes in another terminal beside smith chat:\n%s", errs)
	}

	// A turn in the chat: applied there (--yes), heard in the editor.
	if _, err := io.WriteString(stdin, renameMsg+"\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := ed.WaitNotification(ctx, editor.MethodChangeUpdated, func(p json.RawMessage) bool {
		_, status := changeNote(p)
		return status == daemon.StatusApplied
	}); err != nil {
		t.Fatalf("the editor heard nothing of the chat's applied change: %v\nchat:\n%s", err, chatErr.String())
	}
	if got := a.calc(); got != calcWant {
		t.Errorf("calc.go after the chat's turn:\n%s", got)
	}
	// The editor undoes it in the chat's engine: one journal.
	var undone daemon.Change
	if err := ed.Call(ctx, "smith/undo", map[string]any{}, &undone); err != nil || undone.Status != daemon.StatusUndone {
		t.Fatalf("smith/undo in the editor of the chat's apply: %+v, %v", undone, err)
	}
	if got := a.calc(); got != calcOrig {
		t.Errorf("calc.go after the editor's undo:\n%s", got)
	}

	// The chat ends (Ctrl-D): the editor is told, and its serve ends.
	stdin.Close()
	select {
	case err := <-chatDone:
		if err != nil {
			t.Fatalf("smith chat after Ctrl-D: %v\n%s", err, chatErr.String())
		}
	case <-ctx.Done():
		t.Fatalf("smith chat did not end after Ctrl-D while an editor was joined\n%s", chatErr.String())
	}
	if _, err := ed.WaitNotification(ctx, "window/showMessage", nil); err != nil {
		t.Errorf("the editor was not told that the chat holding the engine ended: %v", err)
	}
	if code, err := ed.Wait(20 * time.Second); err != nil || code != 0 {
		t.Errorf("the editor's smith serve after the chat ended: %d, %v\n%s", code, err, ed.Stderr())
	}
	if _, err := os.Stat(a.socket()); !os.IsNotExist(err) {
		t.Errorf("the chat left its attach socket behind: %v", err)
	}
	out, _ := a.mustRun("changes")
	if !regexpMatch(`c1 +undone`, out) {
		t.Errorf("smith changes after the chat ended:\n%s", out)
	}
	if strings.Contains(chatErr.String(), "level=") {
		t.Errorf("the shared engine's server logged into the chat's terminal:\n%s", chatErr.String())
	}
}

// TestSessionThroughDaemon: smith session lists, checkpoints and resets an
// AgentSmithy (v2) server's own writes through a running smith serve, and
// the editor is told the file changed behind it.
func TestSessionThroughDaemon(t *testing.T) {
	a := newAttachEnv(t, upstream.Options{Protocol: upstream.ProtocolV2})
	ctx := testContext(t)
	ed := a.serve()
	a.mustRun("chat", "--yes", `create shared.txt with "hi"`)
	if _, err := os.Stat(filepath.Join(a.ws, "shared.txt")); err != nil {
		t.Fatalf("the server did not write shared.txt: %v", err)
	}
	out, errs := a.mustRun("session")
	if !strings.Contains(out, "A shared.txt (+1 -0)") || !strings.Contains(errs, "smith session reset") {
		t.Errorf("smith session through the daemon:\n%s", out)
	}
	if out, _ = a.mustRun("session", "checkpoints"); !regexpMatch(`(?m)^[0-9a-f]{40}  User message: create shared.txt`, out) {
		t.Errorf("smith session checkpoints through the daemon:\n%s", out)
	}
	a.mustRun("session", "reset", "--yes")
	if _, err := os.Stat(filepath.Join(a.ws, "shared.txt")); !os.IsNotExist(err) {
		t.Errorf("shared.txt after smith session reset: %v", err)
	}
	if _, err := ed.WaitNotification(ctx, editor.MethodFileChanged, func(p json.RawMessage) bool {
		return strings.Contains(string(p), "shared.txt")
	}); err != nil {
		t.Errorf("the editor was not told that the reset removed shared.txt: %v", err)
	}
}
