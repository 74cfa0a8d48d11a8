package main

import (
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/smith-dev/smith/editor/editortest"
	"github.com/smith-dev/smith/protocol/upstream"
)

// ptyScreen collects everything the program writes to its terminal.
type ptyScreen struct{ editortest.SyncBuffer }

// waitFor waits until the screen shows want n times in all.
func (s *ptyScreen) waitFor(t *testing.T, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(s.String(), want) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q (%d times); it shows:\n%s", want, n, s.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// calcBeforeRename is calc.go before the fake upstream's rename of total to
// subtotal, which proposes two hunks: the doc comment and signature, and
// the call in double.
const calcBeforeRename = "package calc\n\n// total adds xs up.\nfunc total(xs []int) int {\n\ts := 0\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s\n}\n\nfunc double(xs []int) int {\n\treturn 2 * total(xs)\n}\n"

// calcUpstream writes calcBeforeRename to ws/calc.go and serves a fake
// AgentSmithy v0 upstream on ws; it returns the upstream's URL.
func calcUpstream(t *testing.T, ws string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(ws, "calc.go"), []byte(calcBeforeRename), 0o644); err != nil {
		t.Fatal(err)
	}
	up, err := upstream.New(upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV0, PingInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(up.Handler())
	t.Cleanup(func() { up.Close() })
	t.Cleanup(hs.Close)
	return hs.URL
}

// startOnPTY starts cmd on a new pseudo-terminal (its own state folder,
// TERM=xterm) and copies what it shows to screen; copied is closed when
// the terminal has no more to show. The terminal is closed at the test's end.
func startOnPTY(t *testing.T, cmd *exec.Cmd) (tty *os.File, screen *ptyScreen, copied <-chan struct{}) {
	t.Helper()
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	screen = &ptyScreen{}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(screen, tty); close(done) }()
	return tty, screen, done
}

// TestHunkPromptOnPTY drives `smith chat` on a real pseudo-terminal: the
// proposal has two hunks; the user asks for help, views the change, applies
// the first hunk and rejects the second, and the file holds exactly that.
func TestHunkPromptOnPTY(t *testing.T) {
	smith, err := exec.LookPath("smith") // the test binary, installed by testscript.Main
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	want := "package calc\n\n// subtotal adds xs up.\nfunc subtotal(xs []int) int {\n\ts := 0\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s\n}\n\nfunc double(xs []int) int {\n\treturn 2 * total(xs)\n}\n"
	url := calcUpstream(t, ws)

	cmd := exec.Command(smith, "chat", "--upstream", url, "rename total to subtotal in calc.go")
	cmd.Dir = ws
	tty, screen, copied := startOnPTY(t, cmd)

	const prompt = "Apply this hunk of calc.go [y,n,a,q,v,?]? "
	screen.waitFor(t, prompt, 1)
	io.WriteString(tty, "?\r")
	screen.waitFor(t, "q - quit; leave this hunk", 1)
	screen.waitFor(t, prompt, 2)
	io.WriteString(tty, "v\r")
	screen.waitFor(t, prompt, 3)
	io.WriteString(tty, "y\r")
	screen.waitFor(t, prompt, 4) // the second hunk
	io.WriteString(tty, "n\r")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("smith chat: %v\n%s", err, screen.String())
	}
	<-copied
	out := screen.String()
	for _, w := range []string{"calc.go: 1 hunk applied", "calc.go: 1 hunk rejected", "undo with: smith undo c1", "\x1b[32m+func subtotal"} {
		if !strings.Contains(out, w) {
			t.Errorf("the terminal does not show %q:\n%s", w, out)
		}
	}
	got, _ := os.ReadFile(filepath.Join(ws, "calc.go"))
	if string(got) != want {
		t.Errorf("calc.go after y,n:\n%s\nwant:\n%s", got, want)
	}
}

// TestHunkPromptEndsOnSignal: SIGINT or SIGTERM sent with kill while a hunk
// prompt waits ends the prompt like Ctrl-C: the hunk answered y before is
// not applied, the change stays pending, the exit status is 130 or 143,
// and the terminal is left in its normal mode.
func TestHunkPromptEndsOnSignal(t *testing.T) {
	smith, err := exec.LookPath("smith")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sig  syscall.Signal // 0: Ctrl-C typed on the terminal
		code int
	}{{"kill -INT", syscall.SIGINT, 130}, {"kill -TERM", syscall.SIGTERM, 143}, {"typed Ctrl-C", 0, 130}} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			url := calcUpstream(t, ws)
			cmd := exec.Command(smith, "chat", "--upstream", url, "rename total to subtotal in calc.go")
			cmd.Dir = ws
			tty, screen, _ := startOnPTY(t, cmd)
			const prompt = "Apply this hunk of calc.go [y,n,a,q,v,?]? "
			screen.waitFor(t, prompt, 1)
			io.WriteString(tty, "y\r")
			screen.waitFor(t, prompt, 2) // the second hunk waits
			if c.sig == 0 {
				io.WriteString(tty, "\x03")
			} else if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("smith chat still waits at the prompt 10 s after %s:\n%s", c.name, screen.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != c.code {
				t.Fatalf("smith chat after %s: %v, want exit status %d\n%s", c.name, err, c.code, screen.String())
			}
			if got, _ := os.ReadFile(filepath.Join(ws, "calc.go")); string(got) != calcBeforeRename {
				t.Errorf("calc.go changed after %s:\n%s", c.name, got)
			}
			screen.waitFor(t, "smith changes apply c1", 1) // how to act on the pending change
		})
	}
}

// TestChatPromptEndsOnSIGTERM: SIGTERM sent with kill while smith chat
// waits at its "smith> " prompt ends the session at once, exit status 143,
// with the terminal back in its normal mode (the prompt reads in raw mode).
func TestChatPromptEndsOnSIGTERM(t *testing.T) {
	smith, err := exec.LookPath("smith")
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	url := calcUpstream(t, ws)
	cmd := exec.Command(smith, "chat", "--upstream", url)
	cmd.Dir = ws
	tty, screen, _ := startOnPTY(t, cmd)
	screen.waitFor(t, "smith> ", 1)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("smith chat still waits at its prompt 10 s after SIGTERM:\n%s", screen.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("smith chat after SIGTERM at its prompt: %v, want exit status 143\n%s", err, screen.String())
	}
	// The master side reads the terminal's one set of modes.
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&(unix.ICANON|unix.ECHO) != unix.ICANON|unix.ECHO {
		t.Errorf("the terminal was left in raw mode (lflag %#x)", tio.Lflag)
	}
}

// TestServeOnPTY: smith serve started by hand in a terminal says what it
// waits for, and Ctrl-D (end of input on a terminal, which is not the end
// of the terminal: reads after it block again) ends it, exit 0.
func TestServeOnPTY(t *testing.T) {
	smith, err := exec.LookPath("smith")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(smith, "serve")
	cmd.Dir = t.TempDir()
	tty, screen, _ := startOnPTY(t, cmd)
	screen.waitFor(t, "Ctrl-D quits", 1)
	io.WriteString(tty, "\x04")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("smith serve after Ctrl-D: %v\n%s", err, screen.String())
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("smith serve still runs after Ctrl-D; the terminal shows:\n%s", screen.String())
	}
}
