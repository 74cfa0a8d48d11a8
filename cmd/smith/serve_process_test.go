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
		// -C, as in every other command that takes a workspace.
		{[]string{"-C", "/nonexistent/smith-ws"}, "--workspace /nonexistent/smith-ws is not a directory"},
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

// TestServeProcessUnusableStateDir: a state folder smith cannot use is
// said on stderr at start-up, before any editor message, and the editor's
// initialize is answered with the same message (and a showMessage, which
// is what VS Code and Neovim show the user; stderr only reaches their
// logs); then serve exits 2, as the CLI does for a bad --state-dir, once
// the editor has closed its end (at most refuseGrace later). A folder the editor's
// initializationOptions.stateDir may still replace (XDG_STATE_HOME) is
// said only if initialize fails with it, once, as serve's last words
// (not also as a warning at start-up): with a good stateDir the editor is
// served, and stderr does not speak of the folder it does not use.
func TestServeProcessUnusableStateDir(t *testing.T) {
	t.Parallel()
	a := newAttachEnv(t, upstream.Options{})
	afile := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(afile, []byte("not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		env  string
		args []string
		init map[string]any
		want []string // in the error, the showMessage and stderr
		ok   bool     // initialize succeeds
		// keepStdin: the editor does not close its end after the error
		keepStdin bool
	}{
		{name: "flag", args: []string{"--state-dir", afile}, want: []string{afile, "--state-dir", "not a directory"}, keepStdin: true},
		{name: "flag beats initializationOptions", args: []string{"--state-dir", afile}, init: map[string]any{"stateDir": a.state}, want: []string{afile, "--state-dir"}},
		{name: "XDG_STATE_HOME", env: "XDG_STATE_HOME=" + afile, want: []string{afile, "XDG_STATE_HOME", "not a directory"}},
		{name: "SMITH_STATE_DIR", env: "SMITH_STATE_DIR=" + afile, want: []string{afile, "SMITH_STATE_DIR"}},
		{name: "initializationOptions", init: map[string]any{"stateDir": afile}, want: []string{afile, "initializationOptions.stateDir"}},
		{name: "XDG_STATE_HOME replaced by initializationOptions", env: "XDG_STATE_HOME=" + afile, init: map[string]any{"stateDir": a.state}, ok: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := []string{"HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
			if tt.env != "" {
				env = append(env, tt.env)
			}
			args := append(env, a.smith, "serve", "--workspace", a.ws, "--upstream", a.upstream)
			ed := editortest.Start(t, "env", append(args, tt.args...)...)
			ctx := testContext(t)
			_, err := ed.Initialize(ctx, a.ws, tt.init)
			if tt.ok {
				if err != nil {
					t.Fatalf("initialize: %v\n%s", err, ed.Stderr())
				}
				// Its stderr is whole once it has exited.
				if err := ed.CloseStdin(); err != nil {
					t.Fatal(err)
				}
				if code, err := ed.Wait(10 * time.Second); err != nil || code != 0 {
					t.Fatalf("exit code %d, %v; want 0 once stdin is closed", code, err)
				}
				if strings.Contains(ed.Stderr(), afile) {
					t.Errorf("stderr speaks of %s, which the editor's stateDir replaced:\n%s", afile, ed.Stderr())
				}
				return
			}
			if err == nil {
				t.Fatalf("initialize succeeded with an unusable state folder")
			}
			// The editor lets go, as Neovim and VS Code do after a failed
			// initialize (one that does not is waited for refuseGrace:
			// the flag case).
			if !tt.keepStdin {
				if err := ed.CloseStdin(); err != nil {
					t.Fatal(err)
				}
			}
			code, werr := ed.Wait(3 * refuseGrace)
			if werr != nil || code != 2 {
				t.Fatalf("exit code %d, %v; want 2\n%s", code, werr, ed.Stderr())
			}
			shown := ed.Notifications("window/showMessage")
			if len(shown) == 0 {
				t.Fatalf("no window/showMessage before the failed initialize")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("initialize error does not name %q: %v", w, err)
				}
				if !strings.Contains(string(shown[0].Params), w) {
					t.Errorf("showMessage does not name %q: %s", w, shown[0].Params)
				}
				if !strings.Contains(ed.Stderr(), w) {
					t.Errorf("stderr does not name %q:\n%s", w, ed.Stderr())
				}
			}
			if n := strings.Count(ed.Stderr(), "cannot be used"); n != 1 {
				t.Errorf("stderr says the reason %d times, want once:\n%s", n, ed.Stderr())
			}
		})
	}
}
