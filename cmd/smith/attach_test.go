package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor/editortest"
	"github.com/smith-dev/smith/protocol/upstream"
)

const (
	calcOrig  = "package calc\n\n// total adds xs up.\nfunc total(xs []int) int {\n\ts := 0\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s\n}\n\nfunc double(xs []int) int {\n\treturn 2 * total(xs)\n}\n"
	calcWant  = "package calc\n\n// subtotal adds xs up.\nfunc subtotal(xs []int) int {\n\ts := 0\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s\n}\n\nfunc double(xs []int) int {\n\treturn 2 * subtotal(xs)\n}\n"
	renameMsg = "rename total to subtotal in calc.go"
)

// attachEnv is a workspace with calc.go, an embedded upstream (legacy v0
// proposals) and a state folder, for smith serve and terminal commands.
type attachEnv struct {
	t        testing.TB
	smith    string // the test binary, installed as smith by testscript.Main
	ws       string
	state    string
	upstream string
	chats    *atomic.Int64 // chat requests the upstream received
	env      []string
}

func newAttachEnv(t testing.TB, opts upstream.Options) *attachEnv {
	t.Helper()
	smith, err := exec.LookPath("smith")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	a := &attachEnv{t: t, smith: smith, ws: filepath.Join(root, "ws"), state: filepath.Join(root, "st"), chats: &atomic.Int64{}}
	if err := os.MkdirAll(a.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	a.writeCalc(calcOrig)
	opts.Workspace, opts.PingInterval = a.ws, -1
	if opts.Protocol == "" {
		opts.Protocol = upstream.ProtocolV0
	}
	up, err := upstream.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := up.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/chat") && r.Method == http.MethodPost {
			a.chats.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		up.Close()
		hs.CloseClientConnections()
		hs.Close()
	})
	a.upstream = hs.URL
	a.env = append(os.Environ(), "HOME="+filepath.Join(root, "home"), "XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"XDG_STATE_HOME="+filepath.Join(root, "xdg-state"), "NO_COLOR=1")
	return a
}

func (a *attachEnv) writeCalc(text string) {
	a.t.Helper()
	if err := os.WriteFile(filepath.Join(a.ws, "calc.go"), []byte(text), 0o644); err != nil {
		a.t.Fatal(err)
	}
}

func (a *attachEnv) calc() string {
	a.t.Helper()
	b, err := os.ReadFile(filepath.Join(a.ws, "calc.go"))
	if err != nil {
		a.t.Fatal(err)
	}
	return string(b)
}

// socket is where a smith serve holding the workspace's engine listens.
func (a *attachEnv) socket() string {
	dir, err := daemon.StateDirOf(daemon.Config{Workspace: a.ws, StateDir: a.state})
	if err != nil {
		a.t.Fatal(err)
	}
	return attachSocket(dir)
}

// serve starts `smith serve` on the workspace, driven by a fake editor
// that has initialized.
func (a *attachEnv) serve() *editortest.Editor {
	a.t.Helper()
	ed := editortest.Start(a.t, a.smith, "serve", "--workspace", a.ws, "--upstream", a.upstream, "--state-dir", a.state, "--log-level", "debug")
	if _, err := ed.Initialize(testContext(a.t), a.ws, nil); err != nil {
		a.t.Fatalf("initialize: %v\n%s", err, ed.Stderr())
	}
	return ed
}

// smithCmd is a terminal command on the workspace, with the serve's
// state folder and upstream.
func (a *attachEnv) smithCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(a.smith, append(args, "--state-dir", a.state, "--upstream", a.upstream)...)
	cmd.Dir = a.ws
	cmd.Env = a.env
	return cmd
}

// run runs a terminal command and returns its output and exit code.
func (a *attachEnv) run(args ...string) (stdout, stderr string, code int) {
	a.t.Helper()
	cmd := a.smithCmd(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		a.t.Fatalf("smith %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// mustRun runs a terminal command that must succeed.
func (a *attachEnv) mustRun(args ...string) (stdout, stderr string) {
	a.t.Helper()
	out, errs, code := a.run(args...)
	if code != 0 {
		a.t.Fatalf("smith %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out, errs
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// changeNote decodes a smith/changeUpdated notification.
func changeNote(raw json.RawMessage) (id, status string) {
	var n struct {
		Change struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"change"`
	}
	_ = json.Unmarshal(raw, &n)
	return n.Change.ID, n.Change.Status
}

// TestTerminalBesideEditor: while an editor's smith serve holds the
// workspace's engine, smith chat, changes and undo in a terminal work
// through it: the editor is told about what they did, a change to a file
// the editor has open goes into its buffer, and after the editor leaves
// the socket is gone and the commands open the engine themselves again.
func TestTerminalBesideEditor(t *testing.T) {
	a := newAttachEnv(t, upstream.Options{})
	ed := a.serve()
	ctx := testContext(t)

	sock := a.socket()
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatalf("smith serve does not listen for terminals: %v\n%s", err, ed.Stderr())
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("attach socket %s: mode %v, want a socket with 0600", sock, fi.Mode())
	}

	// A turn from the terminal, applied with --yes, on a file the editor
	// does not have open: written on disk, and the editor hears of it.
	_, errs := a.mustRun("chat", "--yes", renameMsg)
	if !strings.Contains(errs, "calc.go: 2 hunks applied") {
		t.Errorf("smith chat through the daemon:\n%s", errs)
	}
	if got := a.calc(); got != calcWant {
		t.Errorf("calc.go after smith chat --yes:\n%s", got)
	}
	if _, err := ed.WaitNotification(ctx, "smith/changeUpdated", func(p json.RawMessage) bool {
		id, st := changeNote(p)
		return id == "c1" && st == daemon.StatusApplied
	}); err != nil {
		t.Errorf("the editor was not told that c1 was applied: %v", err)
	}
	if _, err := ed.WaitNotification(ctx, "smith/fileChanged", func(p json.RawMessage) bool {
		return bytes.Contains(p, []byte("calc.go"))
	}); err != nil {
		t.Errorf("the editor was not told to reload calc.go: %v", err)
	}

	out, _ := a.mustRun("changes")
	if !regexpMatch(`c1 +applied`, out) {
		t.Errorf("smith changes through the daemon:\n%s", out)
	}

	out, _ = a.mustRun("status")
	if !regexpMatch(`smith serve +`+regexp.QuoteMeta(sock), out) || !regexpMatch(`pending changes +0`, out) {
		t.Errorf("smith status through the daemon does not name its socket:\n%s", out)
	}

	// Dialogs and history through the daemon: the turn's dialog is the
	// current one, and a dialog made in the terminal is the editor's too.
	var edStatus daemon.Status
	if err := ed.Call(ctx, "smith/status", nil, &edStatus); err != nil || edStatus.CurrentDialog == "" {
		t.Fatalf("smith/status in the editor: %+v, %v", edStatus, err)
	}
	out, _ = a.mustRun("history", "--json")
	var page struct {
		DialogID string `json:"dialog_id"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil || page.DialogID != edStatus.CurrentDialog {
		t.Errorf("smith history through the daemon: %v, want the page of %s\n%s", err, edStatus.CurrentDialog, out)
	}
	newID, _ := a.mustRun("dialogs", "new", "from the terminal")
	newID = strings.TrimSpace(newID)
	var dialogs []daemon.Dialog
	if err := ed.Call(ctx, "smith/dialogs", nil, &dialogs); err != nil || !slices.ContainsFunc(dialogs, func(d daemon.Dialog) bool {
		return d.ID == newID && d.Title == "from the terminal" && d.Current
	}) {
		t.Errorf("smith/dialogs in the editor after smith dialogs new (%s): %+v, %v", newID, dialogs, err)
	}

	// The editor sees the same journal.
	var listed []daemon.Change
	if err := ed.Call(ctx, "smith/changes", map[string]any{}, &listed); err != nil || len(listed) != 1 || listed[0].Status != daemon.StatusApplied {
		t.Errorf("smith/changes in the editor: %+v, %v", listed, err)
	}

	_, errs = a.mustRun("undo")
	if !strings.Contains(errs, "undid c1: calc.go restored") {
		t.Errorf("smith undo through the daemon:\n%s", errs)
	}
	if got := a.calc(); got != calcOrig {
		t.Errorf("calc.go after smith undo:\n%s", got)
	}
	if _, err := ed.WaitNotification(ctx, "smith/changeUpdated", func(p json.RawMessage) bool {
		id, st := changeNote(p)
		return id == "c1" && st == daemon.StatusUndone
	}); err != nil {
		t.Errorf("the editor was not told that c1 was undone: %v", err)
	}

	// With calc.go open in the editor, the terminal's apply goes into the
	// editor's buffer (workspace/applyEdit), not behind it on disk.
	path := filepath.Join(a.ws, "calc.go")
	if err := ed.Open(ctx, path, calcOrig); err != nil {
		t.Fatal(err)
	}
	_, errs = a.mustRun("chat", "--yes", renameMsg)
	if !strings.Contains(errs, "calc.go: 2 hunks applied") {
		t.Errorf("second smith chat:\n%s", errs)
	}
	if b, _ := ed.Buffer(path); b.Text != calcWant {
		t.Errorf("the editor's buffer after a terminal apply:\n%s", b.Text)
	}
	if len(ed.Edits()) != 1 {
		t.Errorf("the editor got %d workspace/applyEdit, want 1", len(ed.Edits()))
	}
	if got := a.calc(); got != calcOrig {
		t.Errorf("the file on disk changed behind the editor's buffer:\n%s", got)
	}

	// Undo from the editor of what the terminal applied: one journal.
	var undone daemon.Change
	if err := ed.Call(ctx, "smith/undo", map[string]any{}, &undone); err != nil || undone.ID != "c2" {
		t.Errorf("smith/undo in the editor after a terminal apply: %+v, %v", undone, err)
	}
	if b, _ := ed.Buffer(path); b.Text != calcOrig {
		t.Errorf("the editor's buffer after its undo of the terminal's apply:\n%s", b.Text)
	}
	out, _ = a.mustRun("changes")
	if !regexpMatch(`c2 +undone`, out) {
		t.Errorf("smith changes after the editor's undo:\n%s", out)
	}

	// The editor leaves: the daemon exits and takes its socket along.
	if err := ed.Call(ctx, "shutdown", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := ed.Notify(ctx, "exit", nil); err != nil {
		t.Fatal(err)
	}
	if code, err := ed.Wait(20 * time.Second); err != nil || code != 0 {
		t.Fatalf("smith serve exit: %d, %v\n%s", code, err, ed.Stderr())
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("attach socket left behind after serve exited: %v", err)
	}
	// The same journal, now opened by the command itself. (An undone
	// change is pending again once the engine has re-validated it against
	// the restored file: either status is right.)
	out, _ = a.mustRun("changes")
	if !regexpMatch(`c1 +(undone|pending)`, out) || !regexpMatch(`c2 +(undone|pending)`, out) {
		t.Errorf("smith changes without a daemon:\n%s", out)
	}
}

// TestTerminalCancelThroughDaemon: Ctrl-C in smith chat attached to a
// daemon cancels the turn there ($/cancelRequest): the partial answer is
// kept, nothing is written, exit 130.
func TestTerminalCancelThroughDaemon(t *testing.T) {
	faults, err := upstream.ParseFaults("stall=30")
	if err != nil {
		t.Fatal(err)
	}
	a := newAttachEnv(t, upstream.Options{Faults: faults})
	ed := a.serve()
	cmd := a.smithCmd("chat", "--yes", renameMsg)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for a.chats.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("smith chat after Ctrl-C: %v, want exit %d\n%s\nserve:\n%s", err, ExitInterrupted, errb.String(), ed.Stderr())
	}
	if !strings.Contains(errb.String(), "turn cancelled; the partial answer is kept") {
		t.Errorf("smith chat stderr:\n%s", errb.String())
	}
	if got := a.calc(); got != calcOrig {
		t.Errorf("calc.go changed by a cancelled turn:\n%s", got)
	}
	// The daemon is still there for the next command, and not busy.
	out, _ := a.mustRun("status", "--json")
	var st daemon.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.RunningTurns != 0 {
		t.Errorf("smith status after the cancel: %+v, %v\n%s", st, err, out)
	}
}

// TestTerminalStaleSocket: a socket file left by a crashed daemon neither
// blocks the terminal (nothing answers: it opens the engine itself) nor a
// new smith serve (which replaces it).
func TestTerminalStaleSocket(t *testing.T) {
	a := newAttachEnv(t, upstream.Options{})
	sock := a.socket()
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("no stale socket to test with: %v", err)
	}

	_, errs := a.mustRun("changes")
	if !strings.Contains(errs, "no changes recorded") {
		t.Errorf("smith changes beside a stale socket:\n%s", errs)
	}

	ed := a.serve()
	out, _ := a.mustRun("chat", "--json", "--yes", renameMsg)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum struct {
		Type     string  `json:"type"`
		Dialect  string  `json:"dialect"`
		Protocol *string `json:"protocol"`
		Outcome  string  `json:"outcome"`
		Text     string  `json:"text"`
		Changes  []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Type != "summary" || sum.Outcome != "completed" || sum.Text == "" ||
		len(sum.Changes) != 1 || sum.Changes[0].Status != daemon.StatusApplied {
		t.Errorf("smith chat --json --yes through a daemon that replaced a stale socket: summary %+v, %v\n%s", sum, err, out)
	}
	// attachEnv's upstream speaks legacy AgentSmithy (v0).
	if sum.Dialect != "agentsmithy" || sum.Protocol == nil || *sum.Protocol != "v0" {
		t.Errorf("smith chat --json through a daemon: dialect %q, protocol %v; want agentsmithy v0, as without a daemon", sum.Dialect, sum.Protocol)
	}
	if len(lines) < 3 {
		t.Errorf("smith chat --json streamed %d lines, want the events before the summary:\n%s", len(lines), out)
	}
	if _, err := ed.WaitNotification(testContext(t), "smith/changeUpdated", nil); err != nil {
		t.Errorf("the editor heard nothing of the terminal's turn: %v", err)
	}
}

// TestTerminalLockedWithoutDaemon: when the engine is held by something
// that does not listen for terminals, the command fails and says what
// holds the workspace and what to do; nothing is changed.
func TestTerminalLockedWithoutDaemon(t *testing.T) {
	a := newAttachEnv(t, upstream.Options{})
	eng, err := daemon.New(context.Background(), daemon.Config{Workspace: a.ws, StateDir: a.state, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, args := range [][]string{{"changes"}, {"undo"}, {"chat", "--yes", renameMsg}} {
		_, errs, code := a.run(args...)
		if code != ExitFailure {
			t.Errorf("smith %s with the state locked: exit %d, want %d\n%s", args[0], code, ExitFailure, errs)
		}
		for _, want := range []string{"workspace state in use", "pid " + itoa(os.Getpid()), "no smith serve answers on " + a.socket() + " (no such file or directory)", "finish or stop it"} {
			if !strings.Contains(errs, want) {
				t.Errorf("smith %s: the error does not say %q:\n%s", args[0], want, errs)
			}
		}
	}
	if a.chats.Load() != 0 {
		t.Errorf("the upstream got %d chat requests from a command that could not open the engine", a.chats.Load())
	}
	if got := a.calc(); got != calcOrig {
		t.Errorf("calc.go changed:\n%s", got)
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

func itoa(n int) string { return strconv.Itoa(n) }

// BenchmarkTerminalChanges: the cost of one `smith changes` process with
// the engine in the process (local) and through a running smith serve
// (attached): dial, initialize, smith/changes, shutdown against opening,
// recovering and closing the state.
func BenchmarkTerminalChanges(b *testing.B) {
	for _, attached := range []bool{false, true} {
		name := "local"
		if attached {
			name = "attached"
		}
		b.Run(name, func(b *testing.B) {
			a := newAttachEnv(b, upstream.Options{})
			if attached {
				a.serve()
			}
			for b.Loop() {
				a.mustRun("changes")
			}
		})
	}
}

// TestChatBesideServe: a chat that runs through a smith
// serve uses the serve's settings. An --upstream that differs from the
// serve's is named as not used (it was ignored silently), and a serve
// that cannot reach its upstream gets advice about the serve, not about
// this command's --upstream.
func TestChatBesideServe(t *testing.T) {
	t.Run("other", func(t *testing.T) {
		a := newAttachEnv(t, upstream.Options{})
		a.serve()
		cmd := exec.Command(a.smith, "chat", "--yes", "--state-dir", a.state, "--upstream", "http://127.0.0.1:9", renameMsg)
		cmd.Dir, cmd.Env = a.ws, a.env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("smith chat through the serve: %v\n%s", err, out)
		}
		want := "smith: note: not used: --upstream http://127.0.0.1:9 (it uses " + a.upstream + "): this chat runs through the smith serve that holds this workspace (" + a.socket() + "), with its settings; stop it to chat with yours\n"
		if !strings.Contains(string(out), want) {
			t.Errorf("the chat does not say that --upstream is not used:\n%s\nwant the line:\n%s", out, want)
		}
		if got := a.calc(); got != calcWant {
			t.Errorf("calc.go after the chat through the serve:\n%s", got)
		}
		// The serve's own upstream, given again: nothing to say.
		_, errs := a.mustRun("dialogs")
		if strings.Contains(errs, "not used") {
			t.Errorf("smith dialogs with the serve's --upstream says a flag is not used:\n%s", errs)
		}
	})
	t.Run("down", func(t *testing.T) {
		a := newAttachEnv(t, upstream.Options{})
		a.upstream = "http://127.0.0.1:9"
		a.serve()
		_, errs, code := a.run("chat", renameMsg)
		if code != ExitUnreachable {
			t.Errorf("exit %d, want %d\n%s", code, ExitUnreachable, errs)
		}
		want := "smith: the smith serve that holds this workspace (" + a.socket() + ") cannot reach its upstream: start that chat server, or restart smith serve with the right --upstream"
		if !strings.Contains(errs, want) {
			t.Errorf("no advice about the serve:\n%s\nwant:\n%s", errs, want)
		}
		if strings.Contains(errs, "name a running one with --upstream URL") {
			t.Errorf("advice about this command's --upstream, which the serve does not use:\n%s", errs)
		}
	})
}

// TestTerminalWithStateTooDeep: a state folder so deep that its attach
// socket's path is too long for a Unix socket. serve cannot share its
// engine, and a terminal command then failed saying that no smith serve
// answers on the socket ("no such file or directory") and guessing at an
// older smith; both now say the path is too long and what to do.
func TestTerminalWithStateTooDeep(t *testing.T) {
	a := newAttachEnv(t, upstream.Options{})
	a.state = filepath.Join(a.state, strings.Repeat("deep", 20))
	ed := a.serve()
	_, errs, code := a.run("changes")
	if code != ExitFailure {
		t.Errorf("exit %d, want %d\n%s", code, ExitFailure, errs)
	}
	for _, want := range []string{"workspace state in use", "the path is", "bytes long, too long for a Unix socket", "use a shorter one (--state-dir, or XDG_STATE_HOME)"} {
		if !strings.Contains(errs, want) {
			t.Errorf("smith changes does not say %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "an older smith") {
		t.Errorf("smith changes guesses at an older smith:\n%s", errs)
	}
	if !strings.Contains(ed.Stderr(), "too long for a Unix socket (about 100 at most): use a shorter state folder") {
		t.Errorf("serve's warning does not say why terminals cannot attach:\n%s", ed.Stderr())
	}
}
