package acp_test

// These tests drive a real `smith acp` process over its stdin/stdout with
// the ACP Go SDK's client side, against the embedded upstream on loopback
// and a real workspace in a temporary folder.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/creack/pty"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor/editortest"
	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

var smithBin string

// TestMain builds smith for the run, unless SMITH_BIN names a binary to
// test (for example one built with -race).
func TestMain(m *testing.M) {
	if b := os.Getenv("SMITH_BIN"); b != "" {
		smithBin = b
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "smith-acp-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	smithBin, err = editortest.Build("..", dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mainGo has "total" on lines far apart: renaming it gives two hunks.
const mainGo = `package main

import "fmt"

func main() {
	basket := []float64{1.5, 2.25}
	fmt.Printf("subtotal: %.2f\n", total(basket))
	fmt.Printf("with tax: %.2f\n", total(basket)*1.2)
}

// padding
// padding
// padding
// padding
// padding

func total(items []float64) float64 {
	var s float64
	for _, x := range items {
		s += x
	}
	return s
}
`

// renamed is mainGo after "rename total to subtotal in main.go".
var renamed = regexp.MustCompile(`\btotal\b`).ReplaceAllString(mainGo, "subtotal")

// fixture is a workspace, an upstream on it and a state folder.
type fixture struct {
	ws, state, url string
}

func newFixture(t *testing.T, o upstream.Options) *fixture {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte(mainGo), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Workspace = ws
	o.PingInterval = -1
	srv, err := upstream.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); ts.Close() })
	return &fixture{ws: ws, state: t.TempDir(), url: ts.URL}
}

// write writes files (name: text) into the workspace.
func (f *fixture) write(t *testing.T, files map[string]string) {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(f.ws, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.ws, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// client is the editor side: it records every update and answers smith's
// requests as the test says.
type client struct {
	t      *testing.T
	fs     bool // answer fs/* from buffers (and never touch the disk)
	mu     sync.Mutex
	upd    []sdk.SessionNotification
	wake   chan struct{}
	reads  []string
	writes map[string]string // path -> content written through fs/write_text_file
	// save: a write also goes to disk, as an editor that saves what an
	// agent writes (Zed does).
	save bool
	// noRead: with fs, declare fs.writeTextFile only.
	noRead bool
	// onWrite, when not nil, runs before each fs/write_text_file; an
	// error fails that write, and nothing of it is written.
	onWrite func(p sdk.WriteTextFileRequest) error
	// onRead, when not nil, runs before each fs/read_text_file; an error
	// fails that read (a file the client cannot give as text).
	onRead func(p sdk.ReadTextFileRequest) error
	// permit answers a permission request; nil answers allow_once.
	permit func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)
}

func (c *client) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.upd = append(c.upd, n)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

func (c *client) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	if c.permit != nil {
		return c.permit(ctx, p)
	}
	return choose(optionOf(p, sdk.PermissionOptionKindAllowOnce)), nil
}

func (c *client) ReadTextFile(ctx context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	if c.onRead != nil {
		if err := c.onRead(p); err != nil {
			return sdk.ReadTextFileResponse{}, err
		}
	}
	c.mu.Lock()
	c.reads = append(c.reads, p.Path)
	text, ok := c.writes[p.Path]
	c.mu.Unlock()
	if ok {
		return sdk.ReadTextFileResponse{Content: text}, nil
	}
	b, err := os.ReadFile(p.Path)
	if err != nil {
		return sdk.ReadTextFileResponse{}, err
	}
	return sdk.ReadTextFileResponse{Content: string(b)}, nil
}

func (c *client) WriteTextFile(ctx context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	if c.onWrite != nil {
		if err := c.onWrite(p); err != nil {
			return sdk.WriteTextFileResponse{}, err
		}
	}
	return sdk.WriteTextFileResponse{}, c.edit(p.Path, p.Content)
}

// edit puts text in path's buffer (and on disk, with save): what a write
// through fs/write_text_file does, and what the user does by typing.
func (c *client) edit(path, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writes == nil {
		c.writes = map[string]string{}
	}
	c.writes[path] = text
	if c.save {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, []byte(text), 0o644)
	}
	return nil
}

func (c *client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errors.New("no terminal")
}
func (c *client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errors.New("no terminal")
}
func (c *client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errors.New("no terminal")
}
func (c *client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errors.New("no terminal")
}
func (c *client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errors.New("no terminal")
}

func optionOf(p sdk.RequestPermissionRequest, kind sdk.PermissionOptionKind) sdk.PermissionOptionId {
	for _, o := range p.Options {
		if o.Kind == kind {
			return o.OptionId
		}
	}
	return ""
}

func choose(id sdk.PermissionOptionId) sdk.RequestPermissionResponse {
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: id}}}
}

// updates returns a copy of what the client got so far.
func (c *client) updates() []sdk.SessionNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sdk.SessionNotification(nil), c.upd...)
}

// waitFor waits until cond holds for the updates (20 s at most).
func (c *client) waitFor(what string, cond func([]sdk.SessionNotification) bool) {
	c.t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond(c.updates()) {
		select {
		case <-c.wake:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			c.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// agentProc is a running smith acp and the SDK client connected to it.
type agentProc struct {
	conn   *sdk.ClientSideConnection
	c      *client
	in     *lockedWriter
	mu     sync.Mutex
	lines  []string // every line smith wrote on stdout
	stderr *editortest.SyncBuffer
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// start runs smith acp on f and connects c to it. At the end of the test it
// checks that stdout carried only JSON-RPC 2.0 messages, one per line.
func start(t *testing.T, f *fixture, c *client, extra ...string) *agentProc {
	t.Helper()
	c.t = t
	c.wake = make(chan struct{}, 1)
	args := append([]string{"acp", "--upstream", f.url, "--workspace", f.ws, "--state-dir", f.state, "--log-level", "debug"}, extra...)
	cmd := exec.Command(smithBin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &agentProc{c: c, in: &lockedWriter{w: stdin}, stderr: &editortest.SyncBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
			fmt.Fprintln(pw, line)
		}
		pw.Close()
	}()
	p.conn = sdk.NewClientSideConnection(c, p.in, pr)
	p.conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("smith acp exited with %v", err)
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Errorf("smith acp did not exit when stdin closed")
		}
		<-readDone
		for i, l := range p.stdout() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &m); err != nil || string(m["jsonrpc"]) != `"2.0"` {
				t.Errorf("stdout line %d is not a JSON-RPC 2.0 message: %q", i+1, l)
			}
		}
		if strings.Contains(p.stderr.String(), "waiting for an ACP client") {
			t.Error("smith acp printed the terminal hint although stdin is a pipe")
		}
		if t.Failed() {
			t.Logf("smith acp stderr:\n%s", p.stderr.String())
		}
	})
	return p
}

// waitStderr waits until smith acp's stderr holds want: the process
// writes it before what the test saw, but exec copies it on a goroutine
// of its own.
func (p *agentProc) waitStderr(t *testing.T, want string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !strings.Contains(p.stderr.String(), want); {
		if time.Now().After(end) {
			t.Errorf("smith acp's stderr does not say %q:\n%s", want, p.stderr.String())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *agentProc) stdout() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// session initializes (with fs capabilities when the client has them) and
// opens a session on the workspace.
func (p *agentProc) session(t *testing.T, f *fixture) sdk.SessionId {
	t.Helper()
	ctx := ctxT(t)
	caps := sdk.ClientCapabilities{}
	if p.c.fs {
		caps.Fs = sdk.FileSystemCapabilities{ReadTextFile: !p.c.noRead, WriteTextFile: true}
	}
	if _, err := p.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
		t.Fatal(err)
	}
	s, err := p.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: f.ws, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return s.SessionId
}

func (p *agentProc) prompt(t *testing.T, sid sdk.SessionId, text string) sdk.PromptResponse {
	t.Helper()
	r, err := p.conn.Prompt(ctxT(t), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	return r
}

// promptAsync sends a prompt without waiting for its answer, so that the
// test can act while the turn runs; the answer comes on the channel.
func (p *agentProc) promptAsync(t *testing.T, sid sdk.SessionId, text string) <-chan sdk.PromptResponse {
	ctx := ctxT(t)
	done := make(chan sdk.PromptResponse, 1)
	go func() {
		r, err := p.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
		if err != nil {
			t.Errorf("prompt %q: %v", text, err)
		}
		done <- r
	}()
	return done
}

// cancel sends session/cancel for the session's running prompt.
func (p *agentProc) cancel(t *testing.T, sid sdk.SessionId) {
	t.Helper()
	if err := p.conn.Cancel(ctxT(t), sdk.CancelNotification{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
}

// agentText is the concatenated agent_message_chunk text of the updates.
func agentText(us []sdk.SessionNotification) string {
	var b strings.Builder
	for _, u := range us {
		if m := u.Update.AgentMessageChunk; m != nil && m.Content.Text != nil {
			b.WriteString(m.Content.Text.Text)
		}
	}
	return b.String()
}

// toolCall returns the last state of a tool call: its start merged with
// its updates.
type callState struct {
	kind    sdk.ToolKind
	status  sdk.ToolCallStatus
	content []sdk.ToolCallContent
	started bool
	updates int
}

func toolCalls(us []sdk.SessionNotification) map[sdk.ToolCallId]*callState {
	m := map[sdk.ToolCallId]*callState{}
	for _, u := range us {
		if tc := u.Update.ToolCall; tc != nil {
			m[tc.ToolCallId] = &callState{kind: tc.Kind, status: tc.Status, content: tc.Content, started: true}
		}
		if tu := u.Update.ToolCallUpdate; tu != nil {
			st := m[tu.ToolCallId]
			if st == nil {
				st = &callState{}
				m[tu.ToolCallId] = st
			}
			st.updates++
			if tu.Status != nil {
				st.status = *tu.Status
			}
			if tu.Content != nil {
				st.content = tu.Content
			}
		}
	}
	return m
}

func editCalls(us []sdk.SessionNotification) []*callState {
	var out []*callState
	for id, st := range toolCalls(us) {
		if strings.HasPrefix(string(id), "change-") {
			out = append(out, st)
		}
	}
	return out
}

func contentText(cs []sdk.ToolCallContent) string {
	var b strings.Builder
	for _, c := range cs {
		if c.Content != nil && c.Content.Content.Text != nil {
			b.WriteString(c.Content.Content.Text.Text)
		}
	}
	return b.String()
}

func TestInitializeNegotiatesVersion1(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	p := start(t, f, &client{})
	for _, asked := range []int{1, 2, 99} {
		r, err := p.conn.Initialize(ctxT(t), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersion(asked)})
		if err != nil {
			t.Fatal(err)
		}
		if r.ProtocolVersion != 1 {
			t.Errorf("asked for version %d, got %d; smith speaks 1", asked, r.ProtocolVersion)
		}
		if !r.AgentCapabilities.LoadSession || !r.AgentCapabilities.PromptCapabilities.EmbeddedContext || r.AgentCapabilities.PromptCapabilities.Image {
			t.Errorf("capabilities %+v: want loadSession and embeddedContext, no image", r.AgentCapabilities)
		}
		if r.AgentInfo == nil || r.AgentInfo.Name != "smith" {
			t.Errorf("agentInfo %+v", r.AgentInfo)
		}
	}
}

// TestTextTurn: the chunks, in order, are the upstream's answer; the turn
// ends with end_turn. The answer is compared with what smith's own upstream
// client reads from the same (deterministic) demo agent.
func TestTextTurn(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	const msg = "what does this project do?"
	cl := protocol.NewClient(protocol.ClientConfig{BaseURL: f.url})
	defer cl.Close()
	sum, err := cl.Chat(ctxT(t), protocol.ChatRequest{Message: msg}, func(protocol.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Text) < 40 {
		t.Fatalf("the oracle's answer is too short to test ordering: %q", sum.Text)
	}
	c := &client{}
	p := start(t, f, c)
	sid := p.session(t, f)
	r := p.prompt(t, sid, msg)
	if r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("stopReason %q, want end_turn", r.StopReason)
	}
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if got := agentText(c.updates()); squash(got) != squash(sum.Text) {
		t.Errorf("agent_message_chunks, in order:\n%s\nwant the upstream's answer:\n%s", got, sum.Text)
	}
	n := 0
	for _, u := range c.updates() {
		if u.Update.AgentMessageChunk != nil {
			n++
		}
		if u.SessionId != sid {
			t.Errorf("update for session %q, want %q", u.SessionId, sid)
		}
	}
	if n < 3 {
		t.Errorf("%d agent_message_chunks: the answer should stream in several", n)
	}
}

// renameTurn runs "rename total to subtotal in main.go" and returns the
// prompt's answer and the permission requests seen.
func renameTurn(t *testing.T, f *fixture, c *client) (sdk.PromptResponse, *agentProc) {
	t.Helper()
	p := start(t, f, c)
	sid := p.session(t, f)
	return p.prompt(t, sid, "rename total to subtotal in main.go"), p
}

// checkDiff checks the permission request's diff: main.go, the whole file
// before and after.
func checkDiff(t *testing.T, f *fixture, p sdk.RequestPermissionRequest) {
	t.Helper()
	var d *sdk.ToolCallContentDiff
	for _, c := range p.ToolCall.Content {
		if c.Diff != nil {
			d = c.Diff
		}
	}
	if d == nil {
		t.Fatalf("permission request without a diff: %+v", p.ToolCall)
	}
	if d.Path != filepath.Join(f.ws, "main.go") {
		t.Errorf("diff path %q, want the absolute path of main.go", d.Path)
	}
	if d.OldText == nil || *d.OldText != mainGo {
		t.Errorf("diff oldText is not main.go as it is: %v", d.OldText)
	}
	if d.NewText != renamed {
		t.Errorf("diff newText:\n%s\nwant:\n%s", d.NewText, renamed)
	}
	if p.ToolCall.Kind == nil || *p.ToolCall.Kind != sdk.ToolKindEdit {
		t.Errorf("tool call kind %v, want edit", p.ToolCall.Kind)
	}
	// The first hunk: "total" is first on line 7, with 3 lines of context.
	if l := p.ToolCall.Locations; len(l) == 0 || l[0].Path != d.Path || l[0].Line == nil || *l[0].Line != 4 {
		t.Errorf("locations %+v, want main.go line 4 (the first hunk)", l)
	}
}

func TestRenameAllowWritesTheFile(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	asked := 0
	c := &client{}
	c.permit = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		asked++
		checkDiff(t, f, p)
		if f.read(t, "main.go") != mainGo {
			t.Error("main.go changed before permission was given")
		}
		return choose(optionOf(p, sdk.PermissionOptionKindAllowOnce)), nil
	}
	r, _ := renameTurn(t, f, c)
	if r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("stopReason %q", r.StopReason)
	}
	if asked != 1 {
		t.Errorf("%d permission requests, want 1", asked)
	}
	if got := f.read(t, "main.go"); got != renamed {
		t.Errorf("main.go after allow:\n%s\nwant:\n%s", got, renamed)
	}
	calls := editCalls(c.updates())
	if len(calls) != 1 || calls[0].status != sdk.ToolCallStatusCompleted || calls[0].kind != sdk.ToolKindEdit {
		t.Errorf("edit tool calls %+v, want one completed edit", calls)
	}
}

func TestRenameRejectLeavesTheFile(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	c := &client{}
	c.permit = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		checkDiff(t, f, p)
		return choose(optionOf(p, sdk.PermissionOptionKindRejectOnce)), nil
	}
	r, _ := renameTurn(t, f, c)
	if r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("stopReason %q", r.StopReason)
	}
	if got := f.read(t, "main.go"); got != mainGo {
		t.Errorf("main.go changed after reject:\n%s", got)
	}
	calls := editCalls(c.updates())
	if len(calls) != 1 || calls[0].status != sdk.ToolCallStatusFailed || !strings.Contains(contentText(calls[0].content), "rejected") {
		t.Errorf("edit tool calls %+v, want one failed (rejected)", calls)
	}
}

// TestWriteThroughClientFS: a client with fs capabilities gets the write
// through fs/write_text_file and smith writes nothing on disk.
func TestWriteThroughClientFS(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	c := &client{fs: true}
	r, _ := renameTurn(t, f, c)
	if r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("stopReason %q", r.StopReason)
	}
	abs := filepath.Join(f.ws, "main.go")
	c.mu.Lock()
	written, ok := c.writes[abs]
	reads := len(c.reads)
	c.mu.Unlock()
	if !ok || written != renamed {
		t.Errorf("fs/write_text_file of %s: %q (sent: %v), want the renamed file", abs, written, ok)
	}
	if reads == 0 {
		t.Error("smith never read main.go through fs/read_text_file")
	}
	if got := f.read(t, "main.go"); got != mainGo {
		t.Errorf("smith wrote main.go on disk itself:\n%s", got)
	}
	calls := editCalls(c.updates())
	if len(calls) != 1 || calls[0].status != sdk.ToolCallStatusCompleted {
		t.Errorf("edit tool calls %+v, want one completed", calls)
	}
}

// TestCreateThroughClientFS: with fs.writeTextFile, a new file goes
// through fs/write_text_file like an edit (the client must create a
// missing file), so the editor's review and undo see it; smith creates
// nothing on disk. Its undo is a deletion, which ACP cannot express: that
// one is done on disk (docs/acp.md, "Where the write goes").
func TestCreateThroughClientFS(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	c := &client{fs: true}
	p := start(t, f, c)
	sid := p.session(t, f)
	r := p.prompt(t, sid, `create notes/todo.md with "# Todo"`)
	if r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("stopReason %q", r.StopReason)
	}
	abs := filepath.Join(f.ws, "notes", "todo.md")
	c.mu.Lock()
	written, ok := c.writes[abs]
	c.mu.Unlock()
	if !ok || written != "# Todo\n" {
		t.Errorf("fs/write_text_file of %s: %q (sent: %v), want the new file's text", abs, written, ok)
	}
	if _, err := os.Stat(abs); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("smith created %s on disk itself (stat: %v)", abs, err)
	}
	calls := editCalls(c.updates())
	if len(calls) != 1 || calls[0].status != sdk.ToolCallStatusCompleted {
		t.Errorf("edit tool calls %+v, want one completed", calls)
	}
	// The client saves it (as Zed does); /undo deletes it on disk.
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(written), 0o644); err != nil {
		t.Fatal(err)
	}
	p.prompt(t, sid, "/undo")
	if _, err := os.Stat(abs); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("/undo left %s (stat: %v):\n%s", abs, err, agentText(c.updates()))
	}
}

// TestConflictIsAFailedToolCall: the file changes while the permission
// request is open; allowing it then writes nothing and fails the call with
// the engine's reason.
func TestConflictIsAFailedToolCall(t *testing.T) {
	// The allow comes at once, or after the watcher had time to re-plan
	// the change against the edited file: both must end the same way.
	for _, wait := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprintf("allow after %v", wait), func(t *testing.T) { conflictIsAFailedToolCall(t, wait) })
	}
}

func conflictIsAFailedToolCall(t *testing.T, wait time.Duration) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	// The edit touches a line of each hunk: the watcher may re-plan the
	// change before the allow arrives, and an edit outside the hunks would
	// then (rightly) let the change apply around it.
	edited := strings.Replace(mainGo, "total(basket)*1.2)", "total(basket)*1.25) // edited meanwhile", 1)
	edited = strings.Replace(edited, "func total(items []float64)", "func total(values []float64)", 1)
	if strings.Count(edited, "edited meanwhile") != 1 || !strings.Contains(edited, "total(values") {
		t.Fatal("the test's edit did not apply to mainGo")
	}
	c := &client{}
	c.permit = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		if err := os.WriteFile(filepath.Join(f.ws, "main.go"), []byte(edited), 0o644); err != nil {
			t.Error(err)
		}
		time.Sleep(wait)
		return choose(optionOf(p, sdk.PermissionOptionKindAllowOnce)), nil
	}
	r, _ := renameTurn(t, f, c)
	if r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("stopReason %q", r.StopReason)
	}
	if got := f.read(t, "main.go"); got != edited {
		t.Errorf("main.go after a conflict:\n%s\nwant the user's edit only", got)
	}
	calls := editCalls(c.updates())
	// Either the apply finds the file changed since the plan, or the
	// watcher re-planned first and the hunks no longer match.
	saysWhy := func(s string) bool { return strings.Contains(s, "changed") || strings.Contains(s, "no longer match") }
	if len(calls) != 1 || calls[0].status != sdk.ToolCallStatusFailed || !saysWhy(contentText(calls[0].content)) {
		var got []string
		for _, call := range calls {
			got = append(got, fmt.Sprintf("%s: %q", call.status, contentText(call.content)))
		}
		t.Errorf("edit tool calls %v, want one failed saying the file changed or no longer matches", got)
	}
}

// countStopReasons counts the answers on stdout that carry a stopReason.
func countStopReasons(lines []string, reason string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, `"stopReason":"`+reason+`"`) {
			n++
		}
	}
	return n
}

// TestCancelMidStream: session/cancel while text streams ends the prompt
// with exactly one "cancelled"; the next prompt in the session works.
func TestCancelMidStream(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0, DeltaDelay: 100 * time.Millisecond})
	c := &client{}
	p := start(t, f, c)
	sid := p.session(t, f)
	done := p.promptAsync(t, sid, "what does this project do?")
	c.waitFor("the first chunk", func(us []sdk.SessionNotification) bool { return agentText(us) != "" })
	p.cancel(t, sid)
	if r := <-done; r.StopReason != sdk.StopReasonCancelled {
		t.Errorf("stopReason %q, want cancelled", r.StopReason)
	}
	if r := p.prompt(t, sid, "rename total to subtotal in main.go"); r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("second prompt: stopReason %q", r.StopReason)
	}
	if n := countStopReasons(p.stdout(), "cancelled"); n != 1 {
		t.Errorf("%d cancelled answers on stdout, want exactly 1", n)
	}
	if got := f.read(t, "main.go"); got != renamed {
		t.Errorf("the prompt after the cancel did not apply its change:\n%s", got)
	}
}

// TestCancelWithPermissionOpen: session/cancel while smith waits for a
// permission answer. The client answers "cancelled", as the protocol says;
// the prompt ends with exactly one stopReason "cancelled" (not end_turn),
// nothing is written, and the session takes the next prompt.
func TestCancelWithPermissionOpen(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	c := &client{}
	p := start(t, f, c)
	sid := p.session(t, f)
	asked := make(chan struct{})
	cancelled := make(chan struct{})
	c.permit = func(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		close(asked)
		select {
		case <-cancelled:
		case <-ctx.Done():
		}
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}, nil
	}
	done := p.promptAsync(t, sid, "rename total to subtotal in main.go")
	<-asked
	p.cancel(t, sid)
	close(cancelled)
	if r := <-done; r.StopReason != sdk.StopReasonCancelled {
		t.Errorf("stopReason %q, want cancelled", r.StopReason)
	}
	if got := f.read(t, "main.go"); got != mainGo {
		t.Errorf("main.go written although the permission was cancelled:\n%s", got)
	}
	c.permit = nil
	if r := p.prompt(t, sid, "what does this project do?"); r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("prompt after the cancel: stopReason %q", r.StopReason)
	}
	// The change the cancel left pending is applied by typing /apply.
	p.prompt(t, sid, "/apply")
	if got := f.read(t, "main.go"); got != renamed {
		t.Errorf("/apply did not apply the pending change:\n%s", got)
	}
	lines := p.stdout()
	if n := countStopReasons(lines, "cancelled"); n != 1 {
		t.Errorf("%d cancelled answers, want exactly 1", n)
	}
	if n := countStopReasons(lines, "end_turn"); n != 2 {
		t.Errorf("%d end_turn answers, want 2 (the second prompt's and /apply's)", n)
	}
}

// TestUpstreamWriteAndLoad: with AgentSmithy v2 the server writes the
// file itself: the change is a completed edit tool call with its diff and
// no permission is asked. Then a second smith acp on the same state loads
// the session and replays the dialog before answering.
func TestUpstreamWriteAndLoad(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV2})
	c1 := &client{}
	c1.permit = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		t.Errorf("permission asked for a change the server already wrote: %+v", p.ToolCall)
		return choose(optionOf(p, sdk.PermissionOptionKindAllowOnce)), nil
	}
	p1 := start(t, f, c1)
	sid := p1.session(t, f)
	const msg = "rename total to subtotal in main.go"
	if r := p1.prompt(t, sid, msg); r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("stopReason %q", r.StopReason)
	}
	if got := f.read(t, "main.go"); got != renamed {
		t.Errorf("the server did not write main.go:\n%s", got)
	}
	calls := editCalls(c1.updates())
	if len(calls) != 1 || calls[0].status != sdk.ToolCallStatusCompleted {
		t.Fatalf("edit tool calls %+v, want one completed", calls)
	}
	var d *sdk.ToolCallContentDiff
	for _, c := range calls[0].content {
		if c.Diff != nil {
			d = c.Diff
		}
	}
	if d == nil || d.OldText == nil || *d.OldText != mainGo || d.NewText != renamed {
		t.Errorf("the written change's diff is not main.go before and after: %+v", d)
	}
	answer := agentText(c1.updates())
	p1.in.w.(io.Closer).Close()

	// The first process lets go of the state when it has seen stdin end.
	deadline := time.Now().Add(15 * time.Second)
	var c2 *client
	var p2 *agentProc
	for {
		c2 = &client{}
		p2 = start(t, f, c2)
		if _, err := p2.conn.Initialize(ctxT(t), sdk.InitializeRequest{ProtocolVersion: 1}); err != nil {
			t.Fatal(err)
		}
		_, err := p2.conn.LoadSession(ctxT(t), sdk.LoadSessionRequest{SessionId: sid, Cwd: f.ws, McpServers: []sdk.McpServer{}})
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "state") || time.Now().After(deadline) {
			t.Fatalf("session/load: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	us := c2.updates()
	var user string
	for _, u := range us {
		if m := u.Update.UserMessageChunk; m != nil && m.Content.Text != nil {
			user += m.Content.Text.Text
		}
	}
	if user != msg {
		t.Errorf("replayed user message %q, want %q", user, msg)
	}
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if got := agentText(us); squash(got) != squash(answer) {
		t.Errorf("replayed answer:\n%s\nwant:\n%s", got, answer)
	}
	edits := 0
	for _, st := range toolCalls(us) {
		if st.kind == sdk.ToolKindEdit && st.status == sdk.ToolCallStatusCompleted && strings.Contains(contentText(st.content), "+func subtotal") {
			edits++
		}
	}
	if edits != 1 {
		t.Errorf("%d replayed edit tool calls with the diff, want 1: %+v", edits, toolCalls(us))
	}
	_, err := p2.conn.LoadSession(ctxT(t), sdk.LoadSessionRequest{SessionId: "no-such-dialog", Cwd: f.ws, McpServers: []sdk.McpServer{}})
	if re := rpcError(t, err); re.Code != -32602 || !strings.Contains(re.Message, `unknown session "no-such-dialog"`) {
		t.Errorf("loading an unknown session: %v", re)
	}
}

func rpcError(t *testing.T, err error) *sdk.RequestError {
	t.Helper()
	var re *sdk.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	return re
}

// TestBadInput: each mistake is a JSON-RPC error with a message saying
// what is wrong, and the connection stays up for the next request.
func TestBadInput(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0, DeltaDelay: 50 * time.Millisecond})
	c := &client{}
	p := start(t, f, c)
	sid := p.session(t, f)
	ctx := ctxT(t)

	_, err := p.conn.Prompt(ctx, sdk.PromptRequest{SessionId: "no-such-session", Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}})
	if re := rpcError(t, err); re.Code != -32602 || !strings.Contains(re.Message, `unknown session "no-such-session"`) {
		t.Errorf("unknown session: %v", re)
	}

	_, err = p.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	if re := rpcError(t, err); !strings.Contains(re.Message, "outside the workspace") {
		t.Errorf("cwd outside the workspace: %v", re)
	}

	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("secret"), 0o644)
	_, err = p.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{
		sdk.TextBlock("explain"), sdk.ResourceLinkBlock("secret.txt", "file://"+outside)}})
	if re := rpcError(t, err); re.Code != -32602 || !strings.Contains(re.Message, "outside the workspace") {
		t.Errorf("resource outside the workspace: %v", re)
	}

	// A malformed line gets a Parse error; the connection stays up.
	if _, err := p.in.Write([]byte("{this is not json\n")); err != nil {
		t.Fatal(err)
	}

	// A second prompt while one runs in the session is refused, and the
	// first one goes on to its end.
	first := p.promptAsync(t, sid, "what does this project do?")
	c.waitFor("the first chunk", func(us []sdk.SessionNotification) bool { return agentText(us) != "" })
	_, err = p.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("and another")}})
	if re := rpcError(t, err); re.Code != -32600 || !strings.Contains(re.Message, "already running a prompt") {
		t.Errorf("concurrent prompt: %v", re)
	}
	if r := <-first; r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("the first prompt ended %q, want end_turn (the refused second must not cancel it)", r.StopReason)
	}

	parse := false
	for _, l := range p.stdout() {
		if strings.Contains(l, `"code":-32700`) && strings.Contains(l, "not valid JSON") {
			parse = true
		}
	}
	if !parse {
		t.Errorf("no Parse error answered the malformed line; stdout:\n%s", strings.Join(p.stdout(), "\n"))
	}
	if _, err := p.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: f.ws, McpServers: []sdk.McpServer{}}); err != nil {
		t.Errorf("the connection did not stay up: %v", err)
	}
}

// TestUpstreamToolsErrorsAndCitations: the upstream's own tool calls are
// tool calls of the right kind that end completed; an upstream error is
// text in the answer and the turn still ends end_turn; citations are
// resource links in the message.
func TestUpstreamToolsErrorsAndCitations(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV2})
	c := &client{}
	p := start(t, f, c)
	sid := p.session(t, f)
	p.prompt(t, sid, "rename total to subtotal in main.go")
	reads := 0
	for id, st := range toolCalls(c.updates()) {
		if strings.HasPrefix(string(id), "change-") {
			continue
		}
		if st.status != sdk.ToolCallStatusCompleted {
			t.Errorf("upstream tool call %s ended %q, want completed", id, st.status)
		}
		if st.kind == sdk.ToolKindRead {
			reads++
		}
	}
	if reads != 1 {
		t.Errorf("%d read tool calls, want 1 (read_file): %+v", reads, toolCalls(c.updates()))
	}
	thoughts := 0
	for _, u := range c.updates() {
		if m := u.Update.AgentThoughtChunk; m != nil && m.Content.Text != nil && m.Content.Text.Text != "" {
			thoughts++
		}
	}
	if thoughts == 0 {
		t.Error("the upstream's reasoning came as no agent_thought_chunk")
	}

	r := p.prompt(t, sid, "fail with quota exceeded")
	if r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("a turn with an upstream error ended %q, want end_turn", r.StopReason)
	}
	if got := agentText(c.updates()); !strings.Contains(got, "upstream error") || !strings.Contains(got, "quota exceeded") {
		t.Errorf("the upstream error is not in the answer:\n%s", got)
	}

	tf := newFixture(t, upstream.Options{Dialect: protocol.DialectTextbook})
	tc := &client{}
	tp := start(t, tf, tc, "--dialect", "textbook")
	tsid := tp.session(t, tf)
	tp.prompt(t, tsid, "what does main do?")
	links := 0
	for _, u := range tc.updates() {
		if m := u.Update.AgentMessageChunk; m != nil && m.Content.ResourceLink != nil && m.Content.ResourceLink.Uri != "" {
			links++
		}
	}
	if links == 0 {
		t.Errorf("no citation came as a resource link: %+v", tc.updates())
	}
}

// TestTerminalHint: started by hand (stdin a terminal), smith acp says on
// stderr what it is waiting for, prints nothing on stdout, and Ctrl-D ends
// it. (Started by an editor, with pipes, it prints no hint: start checks.)
func TestTerminalHint(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	cmd := exec.Command(smithBin, "acp", "--state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	var stdout, stderr editortest.SyncBuffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if first, _, _ := strings.Cut(stderr.String(), "\n"); !strings.Contains(first, "smith acp: waiting for an ACP client on stdin") || !strings.Contains(first, "smith acp --help") {
		t.Errorf("stderr's first line %q is not the hint", first)
	}
	ptmx.Write([]byte{4}) // Ctrl-D
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("smith acp after Ctrl-D: %v", err)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("smith acp did not end on Ctrl-D")
	}
	if stdout.String() != "" {
		t.Errorf("stdout is for the protocol only; it got %q", stdout.String())
	}
}

// TestModesAndSlashCommands: the slash commands are announced after the
// session/new answer; in mode "auto" a change is applied without asking;
// /changes lists it and /undo takes it back.
func TestModesAndSlashCommands(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	c := &client{}
	c.permit = func(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		t.Errorf("permission asked in mode auto: %+v", p.ToolCall)
		return choose(optionOf(p, sdk.PermissionOptionKindRejectOnce)), nil
	}
	p := start(t, f, c)
	ctx := ctxT(t)
	if _, err := p.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	ns, err := p.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: f.ws, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Modes == nil || ns.Modes.CurrentModeId != "review" || len(ns.Modes.AvailableModes) != 2 {
		t.Errorf("modes %+v, want review and auto, review current", ns.Modes)
	}
	sid := ns.SessionId
	c.waitFor("the slash commands", func(us []sdk.SessionNotification) bool {
		for _, u := range us {
			if u.Update.AvailableCommandsUpdate != nil {
				return true
			}
		}
		return false
	})
	var names []string
	for _, u := range c.updates() {
		if a := u.Update.AvailableCommandsUpdate; a != nil {
			for _, cmd := range a.AvailableCommands {
				names = append(names, cmd.Name)
			}
		}
	}
	if strings.Join(names, " ") != "changes apply reject undo approve reset dialogs" {
		t.Errorf("slash commands %v", names)
	}
	answered, announced := -1, -1
	for i, l := range p.stdout() {
		if strings.Contains(l, `"result"`) && strings.Contains(l, string(sid)) && answered < 0 {
			answered = i
		}
		if strings.Contains(l, "available_commands_update") && announced < 0 {
			announced = i
		}
	}
	if answered < 0 || announced < answered {
		t.Errorf("available_commands_update (line %d) came before the session/new answer (line %d)", announced, answered)
	}

	if _, err := p.conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: sid, ModeId: "auto"}); err != nil {
		t.Fatal(err)
	}
	p.prompt(t, sid, "rename total to subtotal in main.go")
	if got := f.read(t, "main.go"); got != renamed {
		t.Errorf("mode auto did not apply the change:\n%s", got)
	}
	p.prompt(t, sid, "/changes")
	if got := agentText(c.updates()); !strings.Contains(got, "c1") || !strings.Contains(got, "**applied**") {
		t.Errorf("/changes answered:\n%s", got)
	}
	p.prompt(t, sid, "/undo")
	if got := f.read(t, "main.go"); got != mainGo {
		t.Errorf("/undo did not restore main.go:\n%s", got)
	}
	// An unknown id is named, with where to find the right one.
	p.prompt(t, sid, "/undo c99")
	if got := agentText(c.updates()); !strings.Contains(got, "/undo failed: unknown change: c99 (/changes lists them)") {
		t.Errorf("/undo c99 answered:\n%s", got)
	}
	// Nothing left to undo is said in words, without the engine's kind of
	// error in front ("not possible in this state: ").
	p.prompt(t, sid, "/undo")
	if got := agentText(c.updates()); !strings.Contains(got, "/undo failed: nothing to undo: every write smith made in this workspace is undone already") || strings.Contains(got, "not possible in this state") {
		t.Errorf("/undo with nothing left answered:\n%s", got)
	}
	if _, err := p.conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: sid, ModeId: "yolo"}); err == nil || !strings.Contains(err.Error(), `unknown mode \"yolo\"`) {
		t.Errorf("an unknown mode: %v", err)
	}
}

// TestCancelRightBehindPrompt: a session/cancel sent right behind a
// session/prompt (one write, so the agent reads both at once) cancels
// that prompt, although the SDK handles the cancel before the prompt has
// started (here the prompt first reads the file it names through
// fs/read_text_file): exactly one "cancelled", nothing written, and the
// session takes the next prompt.
func TestCancelRightBehindPrompt(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	c := &client{fs: true}
	p := start(t, f, c)
	sid := p.session(t, f)
	link := "file://" + filepath.Join(f.ws, "main.go")
	both := fmt.Sprintf(`{"jsonrpc":"2.0","id":"raw-1","method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"rename total to subtotal in"},{"type":"resource_link","name":"main.go","uri":%q}]}}`+"\n"+
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`+"\n", sid, link, sid)
	if _, err := p.in.Write([]byte(both)); err != nil {
		t.Fatal(err)
	}
	answer := func() []string {
		var out []string
		for _, l := range p.stdout() {
			if strings.Contains(l, `"id":"raw-1"`) {
				out = append(out, l)
			}
		}
		return out
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(answer()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if a := answer(); len(a) != 1 || !strings.Contains(a[0], `"stopReason":"cancelled"`) {
		t.Fatalf("answers to the cancelled prompt: %q, want one stopReason cancelled", a)
	}
	if r := p.prompt(t, sid, "what does this project do?"); r.StopReason != sdk.StopReasonEndTurn {
		t.Errorf("the next prompt: stopReason %q", r.StopReason)
	}
	c.mu.Lock()
	written := len(c.writes)
	c.mu.Unlock()
	if got := f.read(t, "main.go"); got != mainGo || written != 0 {
		t.Errorf("a cancelled prompt wrote main.go (%d fs writes):\n%s", written, got)
	}
	if n := len(answer()); n != 1 {
		t.Errorf("%d answers to the cancelled prompt", n)
	}
}

// TestCancelStopsTheUpstream: session/cancel ends the upstream's chat
// request itself, not only the answer to the client. Each delta of this
// upstream waits 2 s, so the whole answer would take over a minute; the
// request must end (the upstream logs it) well within the wait below.
func TestCancelStopsTheUpstream(t *testing.T) {
	var logs editortest.SyncBuffer
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0, DeltaDelay: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c := &client{}
	p := start(t, f, c)
	sid := p.session(t, f)
	done := p.promptAsync(t, sid, "what does this project do?")
	c.waitFor("the first chunk", func(us []sdk.SessionNotification) bool { return agentText(us) != "" })
	if strings.Contains(logs.String(), "path=/api/chat ") {
		t.Fatalf("the chat request ended before the cancel:\n%s", logs.String())
	}
	p.cancel(t, sid)
	if r := <-done; r.StopReason != sdk.StopReasonCancelled {
		t.Errorf("stopReason %q", r.StopReason)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "path=/api/chat ") {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream's chat request still runs after the cancel:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUnusableStateDirRefusesInitialize: with a --state-dir smith cannot
// use, smith acp says so on stderr at start-up, answers the client's
// initialize with the same message (what an editor shows; its log alone
// gets stderr), and exits 2 when the client lets go.
func TestUnusableStateDirRefusesInitialize(t *testing.T) {
	afile := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(afile, []byte("not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(smithBin, "acp", "--upstream", "http://127.0.0.1:1", "--state-dir", afile)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &editortest.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	conn := sdk.NewClientSideConnection(&client{t: t, wake: make(chan struct{}, 1)}, stdin, stdout)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	_, err = conn.Initialize(ctxT(t), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
	go func() { done <- cmd.Wait() }()
	re := rpcError(t, err)
	stdin.Close() // the client lets go, as editors do after a failed initialize
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("smith acp exited with %v, want status 2", err)
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("smith acp did not exit after refusing initialize and stdin closing")
	}
	// After Wait, which waits for stderr to be copied.
	for _, want := range []string{afile, "--state-dir", "not a directory", "give --state-dir a directory"} {
		if !strings.Contains(re.Message, want) {
			t.Errorf("initialize error %q does not name %q", re.Message, want)
		}
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not name %q:\n%s", want, stderr.String())
		}
	}
}

// TestJoinsTheServeHoldingTheWorkspace: while an editor's smith serve
// holds the workspace's engine, smith acp on the same workspace (and state
// folder) joins that serve through its serve.sock instead of failing on
// the lock: the turn runs, the change is applied by the holder (on disk,
// since its editor does not have the file open), and the serve's editor
// sees the same change.
func TestJoinsTheServeHoldingTheWorkspace(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	holder := editortest.Start(t, smithBin, "serve", "--workspace", f.ws, "--upstream", f.url, "--state-dir", f.state)
	ctx := ctxT(t)
	if _, err := holder.Initialize(ctx, f.ws, nil); err != nil {
		t.Fatalf("the holder's initialize: %v\n%s", err, holder.Stderr())
	}
	c := &client{}
	r, p := renameTurn(t, f, c)
	if r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason %q\n%s", r.StopReason, p.stderr.String())
	}
	calls := editCalls(c.updates())
	if len(calls) != 1 || calls[0].status != sdk.ToolCallStatusCompleted {
		t.Fatalf("edit tool calls %+v, want one completed\n%s", calls, p.stderr.String())
	}
	if got := f.read(t, "main.go"); got != renamed {
		t.Errorf("main.go after the joined apply:\n%s", got)
	}
	var changes []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := holder.Call(ctx, "smith/changes", map[string]any{}, &changes); err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Status != "applied" {
		t.Errorf("the holder's changes %+v, want the one smith acp applied", changes)
	}
	p.waitStderr(t, "joined the smith serve")

	// The holder stops (its editor left): the next prompt opens the
	// engine in smith acp itself, on the same dialogs and journal.
	if err := holder.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if code, err := holder.Wait(15 * time.Second); err != nil || code != 0 {
		t.Fatalf("the holder's exit: %d, %v", code, err)
	}
	var sid sdk.SessionId
	for _, u := range c.updates() {
		sid = u.SessionId
	}
	if r := p.prompt(t, sid, "rename subtotal to total in main.go"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason after the holder stopped: %q\n%s", r.StopReason, p.stderr.String())
	}
	if got, want := f.read(t, "main.go"), regexp.MustCompile(`\bsubtotal\b`).ReplaceAllString(renamed, "total"); got != want {
		t.Errorf("main.go after the second turn, on smith acp's own engine:\n%s", got)
	}
	p.waitStderr(t, "has stopped; opening the workspace's engine again")
}

// TestLockedByAProcessThatCannotBeJoined: an engine held by a process that
// does not answer on serve.sock (here this test's own) is not joined:
// session/new fails saying who holds it, that nothing answers on the
// socket, and what to do.
func TestLockedByAProcessThatCannotBeJoined(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	eng, err := daemon.New(context.Background(), daemon.Config{Workspace: f.ws, Upstream: f.url, StateDir: f.state, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := &client{}
	p := start(t, f, c)
	ctx := ctxT(t)
	if _, err := p.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	_, err = p.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: f.ws, McpServers: []sdk.McpServer{}})
	re := rpcError(t, err)
	for _, want := range []string{"workspace state in use", fmt.Sprintf("pid %d", os.Getpid()), "serve.sock", "finish or stop that process"} {
		if !strings.Contains(re.Message, want) {
			t.Errorf("session/new error %q does not say %q", re.Message, want)
		}
	}
}
