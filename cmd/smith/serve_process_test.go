package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/editor/editortest"
	"github.com/smith-dev/smith/protocol/upstream"
)

// The tests of `smith serve` as a process: framing on its stdio, how it
// exits, its socket and its flags. The protocol behind it is tested in
// process, in package editor.

// TestServeProcessStdio: over the real binary's stdio, a malformed frame
// and an unknown method are answered with errors and the connection stays
// usable; closing stdin ends the process with status 0.
func TestServeProcessStdio(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t, upstream.Options{})
	ed := a.serve()
	ctx := testContext(t)
	if err := ed.WriteRaw([]byte("Content-Length: 9\r\n\r\n{\"id\":1,]")); err != nil {
		t.Fatal(err)
	}
	raw, err := ed.WaitRawError(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"code":-32700`) {
		t.Errorf("answer to a malformed frame: %s", raw)
	}
	if err := ed.Call(ctx, "smith/frobnicate", map[string]any{}, nil); err == nil || !strings.Contains(err.Error(), "-32601") && !strings.Contains(err.Error(), "method not found") {
		t.Errorf("unknown method: %v", err)
	}
	var st daemon.Status
	if err := ed.Call(ctx, editor.MethodStatus, nil, &st); err != nil || st.Workspace != a.ws {
		t.Fatalf("after bad input: status %+v, %v", st, err)
	}
	if err := ed.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if code, err := ed.Wait(10 * time.Second); err != nil || code != 0 {
		t.Fatalf("exit code %d, %v; want 0", code, err)
	}
}

// TestServeProcessExitsOnSignal: SIGTERM ends a stdio server cleanly even
// while it waits for input.
func TestServeProcessExitsOnSignal(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t, upstream.Options{})
	ed := a.serve()
	if err := ed.Process().Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := ed.Wait(10 * time.Second); err != nil || code != 0 {
		t.Fatalf("exit code %d, %v; want 0", code, err)
	}
}

// TestServeProcessUnixSocket: two editors on one --listen socket (one
// naming the workspace through a symlink) share its engine; the socket is
// 0600 and removed on exit.
func TestServeProcessUnixSocket(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t, upstream.Options{})
	sock := filepath.Join(t.TempDir(), "smith.sock")
	proc := editortest.Start(t, a.smith, "serve", "--listen", "unix:"+sock, "--upstream", a.upstream, "--state-dir", a.state)
	ctx := testContext(t)
	var edA, edB *editortest.Editor
	deadline := time.Now().Add(10 * time.Second)
	for edA == nil {
		if _, err := os.Stat(sock); err == nil {
			edA, edB = editortest.Dial(t, sock), editortest.Dial(t, sock)
		} else if time.Now().After(deadline) {
			t.Fatalf("no socket: %v\n%s", err, proc.Stderr())
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	link := filepath.Join(t.TempDir(), "ws-link")
	if err := os.Symlink(a.ws, link); err != nil {
		t.Fatal(err)
	}
	if _, err := edA.Initialize(ctx, a.ws, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := edB.Initialize(ctx, link, nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket: %v, %v; want mode 0600", fi, err)
	}
	res := mustChatIn(t, ctx, edA, "A")
	if got := listChanges(t, ctx, edB); got[res.Changes[0]] != daemon.StatusPending {
		t.Fatalf("B's changes %v: one engine per workspace", got)
	}
	var c daemon.Change
	if err := edB.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": res.Changes[0]}, &c); err != nil || c.Status != daemon.StatusApplied {
		t.Fatalf("apply from B: %+v, %v", c, err)
	}
	if _, err := edA.WaitNotification(ctx, editor.MethodChangeUpdated, func(raw json.RawMessage) bool {
		id, status := changeNote(raw)
		return id == c.ID && status == daemon.StatusApplied
	}); err != nil {
		t.Errorf("A was not told: %v", err)
	}
	proc.Process().Process.Signal(os.Interrupt)
	if code, err := proc.Wait(10 * time.Second); err != nil {
		t.Fatalf("smith serve --listen did not stop: %v (code %d)", err, code)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}

// TestServeProcessBadFlags: bad flags exit 2 with a message naming the
// flag, before any protocol is spoken.
func TestServeProcessBadFlags(t *testing.T) {
	t.Parallel()
	smith, err := exec.LookPath("smith")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "tcp:127.0.0.1:9"}, "--listen"},
		{[]string{"--dialect", "klingon"}, "dialect"},
		{[]string{"--idle-timeout", "soon"}, "idle_timeout"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--workspace", "/nonexistent/smith-ws"}, "--workspace /nonexistent/smith-ws is not a directory"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(smith, append([]string{"serve"}, tt.args...)...)
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want status 2; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("message does not name %s:\n%s", tt.want, out)
			}
		})
	}
}
