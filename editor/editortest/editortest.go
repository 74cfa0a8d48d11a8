// Package editortest is a small fake editor for tests of smith serve: it
// speaks framed JSON-RPC (LSP base protocol) to a real smith process over
// its stdin/stdout, or to a Unix socket, keeps buffers the way an editor
// does (versioned, edited by workspace/applyEdit, reported with didChange)
// and records every notification the server sends.
//
// It deliberately shares no code with package editor: positions are
// converted here on their own, so a test that passes checks the server's
// arithmetic against an independent implementation.
package editortest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.lsp.dev/jsonrpc2"
)

// Notification is one notification the server sent.
type Notification struct {
	Method string
	Params json.RawMessage
}

// Buffer is an open document of the fake editor.
type Buffer struct {
	Text    string
	Version int32
}

// Editor is a fake editor connected to one smith serve.
type Editor struct {
	conn    jsonrpc2.Conn
	raw     *lockedWriter
	proc    *exec.Cmd
	errb    *SyncBuffer   // the server's stderr (subprocess only)
	exited  chan struct{} // closed when proc has been waited for
	exitErr error         // proc.Wait's result, once exited is closed

	mu       sync.Mutex
	cond     *sync.Cond
	notes    []Notification
	rawErrs  []json.RawMessage // error responses as they arrived
	bufs     map[string]*Buffer
	edits    []json.RawMessage // workspace/applyEdit params received
	rawCalls map[string]chan json.RawMessage
	rawSeq   int

	resourceOps []string           // see ResourceOperations; nil: create, rename, delete
	refuseEdits bool               // see RefuseEdits
	holdEdits   bool               // see HoldEdits
	onApplyEdit func(label string) // see OnApplyEdit
	// Encoding is the position encoding the editor uses ("utf-16" unless
	// Initialize negotiated another).
	Encoding     string
	caps         map[string]any // see Capabilities; nil: the defaults
	deferChanges bool           // see DeferChanges
	unsent       []string       // buffers whose didChange is held back
	requests     []Notification // window/* requests of the server
	// observe, when set, receives every notification on the read loop
	// instead of the record (see Observe).
	observe func(method string, params []byte)
}

// ResourceOperations sets the workspaceEdit.resourceOperations that
// Initialize announces (by default create, rename and delete); with none,
// the editor cannot create or delete files through workspace/applyEdit.
// Call it before Initialize.
func (e *Editor) ResourceOperations(ops ...string) {
	e.mu.Lock()
	e.resourceOps = append([]string{}, ops...)
	e.mu.Unlock()
}

// RefuseEdits makes the editor answer workspace/applyEdit with
// applied=false from now on (or again normally, with false).
func (e *Editor) RefuseEdits(refuse bool) {
	e.mu.Lock()
	e.refuseEdits = refuse
	e.mu.Unlock()
}

// OnApplyEdit makes the editor run f before it applies each later
// workspace/applyEdit (one it refuses or holds does not run it), with the
// edit's label: a test changes the disk while smith's write is under way.
// nil stops it.
func (e *Editor) OnApplyEdit(f func(label string)) {
	e.mu.Lock()
	e.onApplyEdit = f
	e.mu.Unlock()
}

// HoldEdits makes the editor sit on workspace/applyEdit until the server
// cancels it with $/cancelRequest (then it answers RequestCancelled, as
// LSP asks).
func (e *Editor) HoldEdits(hold bool) {
	e.mu.Lock()
	e.holdEdits = hold
	e.mu.Unlock()
}

// Observe sends every later notification to f, on the connection's read
// loop and in order, instead of recording it: for benchmarks, which see
// many notifications and need their arrival time. params is valid only
// during the call. Set it before the traffic starts.
func (e *Editor) Observe(f func(method string, params []byte)) {
	e.mu.Lock()
	e.observe = f
	e.mu.Unlock()
}

// Build compiles ./cmd/smith of the module containing dir into outDir and
// returns the binary's path. Tests build once per run (TestMain).
func Build(moduleDir, outDir string) (string, error) {
	bin := filepath.Join(outDir, "smith")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/smith")
	cmd.Dir = moduleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/smith: %v\n%s", err, out)
	}
	return bin, nil
}

// Start runs bin with args (for example "serve", "--state-dir", dir) and
// connects to its stdin/stdout. The process is killed at the end of the
// test if it is still running; its stderr is logged when the test fails.
func Start(t testing.TB, bin string, args ...string) *Editor {
	t.Helper()
	// Plain pipes rather than StdinPipe/StdoutPipe: exec's Wait closes
	// those, and output the server wrote just before exiting would be lost
	// to a reader that had not got to it yet.
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout = inR, outW
	errb := &SyncBuffer{}
	cmd.Stderr = errb
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	stdin, stdout := inW, outR
	e := newEditor(t, &pipeRWC{r: stdout, w: stdin})
	e.proc, e.errb, e.exited = cmd, errb, make(chan struct{})
	go func() {
		e.exitErr = cmd.Wait()
		close(e.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-e.exited:
		default:
			cmd.Process.Kill()
			<-e.exited
		}
		if t.Failed() {
			t.Logf("smith stderr:\n%s", errb.String())
		}
	})
	return e
}

// Dial connects to a smith serve listening on a Unix socket.
func Dial(t testing.TB, socket string) *Editor {
	t.Helper()
	var nc net.Conn
	var err error
	for i := 0; i < 200; i++ { // the server may still be starting
		if nc, err = net.Dial("unix", socket); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("dial %s: %v", socket, err)
	}
	return newEditor(t, nc)
}

// New connects to a server over rwc (for in-process tests).
func New(t testing.TB, rwc io.ReadWriteCloser) *Editor { return newEditor(t, rwc) }

func newEditor(t testing.TB, rwc io.ReadWriteCloser) *Editor {
	e := &Editor{bufs: map[string]*Buffer{}, Encoding: "utf-16", rawCalls: map[string]chan json.RawMessage{}}
	e.cond = sync.NewCond(&e.mu)
	e.raw = &lockedWriter{rwc: rwc}
	stream := &recordingStream{frames: jsonrpc2.NewHeaderStream(e.raw).(frameStream), onError: e.recordError, onResponse: e.deliverRaw}
	e.conn = jsonrpc2.NewConn(stream)
	e.conn.Go(context.Background(), e.handle)
	t.Cleanup(func() { e.conn.Close() })
	return e
}

// Stderr returns what the server process wrote to stderr so far.
func (e *Editor) Stderr() string {
	if e.errb == nil {
		return ""
	}
	return e.errb.String()
}

// Process returns the server process (nil when not started by Start).
func (e *Editor) Process() *exec.Cmd { return e.proc }

// Call sends a request and decodes its result into result (may be nil).
func (e *Editor) Call(ctx context.Context, method string, params, result any) error {
	_, err := e.conn.Call(ctx, method, params, result)
	return err
}

// rawIDPrefix marks the ids of CallRaw requests.
const rawIDPrefix = "editortest-raw-"

// RawCall is a request sent with CallRaw.
type RawCall struct {
	// ID is the request's id, for $/cancelRequest.
	ID string
	// Response receives the whole response frame.
	Response <-chan json.RawMessage
}

// CallRaw sends a request under an id the test knows, so that the test can
// cancel it with Cancel and still read the response (jsonrpc2's Call gives
// up on a cancelled context without waiting for the answer).
func (e *Editor) CallRaw(method string, params any) (*RawCall, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan json.RawMessage, 1)
	e.mu.Lock()
	e.rawSeq++
	id := fmt.Sprintf("%s%d", rawIDPrefix, e.rawSeq)
	e.rawCalls[id] = ch
	e.mu.Unlock()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": json.RawMessage(p)})
	if err != nil {
		return nil, err
	}
	if err := e.WriteRaw([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))); err != nil {
		return nil, err
	}
	return &RawCall{ID: id, Response: ch}, nil
}

// Cancel sends $/cancelRequest for a CallRaw request.
func (e *Editor) Cancel(ctx context.Context, id string) error {
	return e.Notify(ctx, "$/cancelRequest", map[string]any{"id": id})
}

func (e *Editor) deliverRaw(id string, frame []byte) {
	e.mu.Lock()
	ch := e.rawCalls[id]
	delete(e.rawCalls, id)
	e.mu.Unlock()
	if ch != nil {
		ch <- json.RawMessage(bytes.Clone(frame))
	}
}

// Notify sends a notification.
func (e *Editor) Notify(ctx context.Context, method string, params any) error {
	return e.conn.Notify(ctx, method, params)
}

// WriteRaw writes bytes as they are onto the connection, framing included:
// for malformed-input tests.
func (e *Editor) WriteRaw(b []byte) error {
	_, err := e.raw.Write(b)
	return err
}

// Initialize sends initialize (with full workspace-edit capabilities and
// the given position encodings offered) and initialized. It returns the
// initialize result.
func (e *Editor) Initialize(ctx context.Context, root string, initOptions map[string]any, encodings ...string) (json.RawMessage, error) {
	if len(encodings) == 0 {
		encodings = []string{"utf-16"}
	}
	e.mu.Lock()
	ops := e.resourceOps
	e.mu.Unlock()
	if ops == nil {
		ops = []string{"create", "rename", "delete"}
	}
	e.mu.Lock()
	caps := e.caps
	e.mu.Unlock()
	params := map[string]any{
		"processId":  os.Getpid(),
		"clientInfo": map[string]any{"name": "editortest"},
		"rootUri":    FileURI(root),
		"capabilities": cmpOr(caps, map[string]any{
			"workspace": map[string]any{
				"applyEdit": true,
				"workspaceEdit": map[string]any{
					"documentChanges":    true,
					"resourceOperations": ops,
				},
			},
			"window":  map[string]any{"workDoneProgress": true},
			"general": map[string]any{"positionEncodings": encodings},
		}),
	}
	if initOptions != nil {
		params["initializationOptions"] = initOptions
	}
	var res json.RawMessage
	if err := e.Call(ctx, "initialize", params, &res); err != nil {
		return nil, err
	}
	var r struct {
		Capabilities struct {
			PositionEncoding string `json:"positionEncoding"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.Encoding = r.Capabilities.PositionEncoding
	e.mu.Unlock()
	return res, e.Notify(ctx, "initialized", map[string]any{})
}

// Open opens path with text (didOpen, version 1).
func (e *Editor) Open(ctx context.Context, path, text string) error {
	e.mu.Lock()
	e.bufs[path] = &Buffer{Text: text, Version: 1}
	e.mu.Unlock()
	return e.Notify(ctx, "textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": FileURI(path), "languageId": "go", "version": 1, "text": text},
	})
}

// Type replaces the whole text of an open buffer, as a user edit (full
// didChange with the next version).
func (e *Editor) Type(ctx context.Context, path, text string) error {
	e.mu.Lock()
	b, ok := e.bufs[path]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("%s is not open", path)
	}
	b.Text, b.Version = text, b.Version+1
	v := b.Version
	e.cond.Broadcast()
	e.mu.Unlock()
	return e.didChangeFull(ctx, path, text, v)
}

// Close closes an open buffer (didClose).
func (e *Editor) Close(ctx context.Context, path string) error {
	e.mu.Lock()
	delete(e.bufs, path)
	e.mu.Unlock()
	return e.Notify(ctx, "textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": FileURI(path)}})
}

// Buffer returns an open buffer.
func (e *Editor) Buffer(path string) (Buffer, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b, ok := e.bufs[path]
	if !ok {
		return Buffer{}, false
	}
	return *b, true
}

// Edits returns the params of every workspace/applyEdit received so far.
func (e *Editor) Edits() []json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]json.RawMessage(nil), e.edits...)
}

// Notifications returns the notifications received so far with method
// ("" for all).
func (e *Editor) Notifications(method string) []Notification {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Notification
	for _, n := range e.notes {
		if method == "" || n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// WaitNotification waits until a notification with method satisfies
// match (nil matches any) and returns it.
func (e *Editor) WaitNotification(ctx context.Context, method string, match func(json.RawMessage) bool) (Notification, error) {
	var found Notification
	seen := 0
	err := e.waitFor(ctx, func() bool {
		for ; seen < len(e.notes); seen++ {
			if n := e.notes[seen]; n.Method == method && (match == nil || match(n.Params)) {
				found = n
				return true
			}
		}
		return false
	})
	if err != nil {
		return Notification{}, fmt.Errorf("waiting for %s: %w", method, err)
	}
	return found, nil
}

// WaitRawError waits for the n-th (from 1) error response the server sent
// for a message the connection could not match to a call (a malformed
// frame), and returns it.
func (e *Editor) WaitRawError(ctx context.Context, n int) (json.RawMessage, error) {
	var got json.RawMessage
	err := e.waitFor(ctx, func() bool {
		if len(e.rawErrs) < n {
			return false
		}
		got = e.rawErrs[n-1]
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for error response %d: %w", n, err)
	}
	return got, nil
}

// waitFor calls done under e.mu each time what the server sent changes,
// until it reports true or ctx ends (its error is returned).
func (e *Editor) waitFor(ctx context.Context, done func() bool) error {
	stop := context.AfterFunc(ctx, func() {
		e.mu.Lock()
		e.cond.Broadcast()
		e.mu.Unlock()
	})
	defer stop()
	e.mu.Lock()
	defer e.mu.Unlock()
	for !done() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.cond.Wait()
	}
	return nil
}

// Wait waits for the server process to exit and returns its exit code.
func (e *Editor) Wait(timeout time.Duration) (int, error) {
	if e.proc == nil {
		return 0, errors.New("not a subprocess")
	}
	select {
	case <-e.exited:
		var ee *exec.ExitError
		if errors.As(e.exitErr, &ee) {
			return ee.ExitCode(), nil
		}
		return 0, e.exitErr
	case <-time.After(timeout):
		return -1, fmt.Errorf("smith did not exit within %s", timeout)
	}
}

// CloseStdin closes the connection's write side (the server sees EOF).
func (e *Editor) CloseStdin() error { return e.raw.closeWrite() }

// handle answers the server's requests and records its notifications.
// Notifications are recorded inline, on the read loop, so that their order
// is the order the server sent them; requests are released (Async) because
// answering one sends notifications and may take a while.
func (e *Editor) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	e.mu.Lock()
	observe := e.observe
	e.mu.Unlock()
	if observe != nil && !req.IsCall() {
		observe(req.Method(), req.Params())
		return nil, nil
	}
	params := json.RawMessage(bytes.Clone(req.Params()))
	if req.IsCall() {
		jsonrpc2.Async(ctx)
	} else {
		e.mu.Lock()
		// The method string is borrowed from the read buffer: copy it.
		e.notes = append(e.notes, Notification{Method: strings.Clone(req.Method()), Params: params})
		e.cond.Broadcast()
		e.mu.Unlock()
		return nil, nil
	}
	switch req.Method() {
	case "workspace/applyEdit":
		return e.applyEdit(ctx, req.ID(), params)
	case "window/workDoneProgress/create":
		return nil, nil
	}
	if res, ok := e.recordRequest(req.Method(), params); ok {
		return res, nil
	}
	return nil, jsonrpc2.ErrMethodNotFound
}

func (e *Editor) recordError(frame []byte) {
	e.mu.Lock()
	e.rawErrs = append(e.rawErrs, json.RawMessage(bytes.Clone(frame)))
	e.cond.Broadcast()
	e.mu.Unlock()
}

// FileURI is the file:// URI of an absolute path.
func FileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// PathOf is the path of a file:// URI.
func PathOf(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	return filepath.FromSlash(u.Path)
}

// units counts the code units of s in encoding enc.
func units(s string, enc string) int {
	switch enc {
	case "utf-8":
		return len(s)
	case "utf-32":
		return utf8.RuneCountInString(s)
	}
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// offset converts an LSP position in text to a byte offset, the way an
// editor does it: lines split at "\n" (a preceding "\r" belongs to the
// terminator), characters counted in enc.
func offset(text string, line, char int, enc string) (int, error) {
	lines := strings.SplitAfter(text, "\n")
	if line > len(lines) || (line == len(lines) && char > 0) {
		return 0, fmt.Errorf("position %d:%d is past the end", line, char)
	}
	off := 0
	for i := 0; i < line; i++ {
		off += len(lines[i])
	}
	if line == len(lines) {
		return off, nil
	}
	l := strings.TrimRight(lines[line], "\r\n")
	col := 0
	for i, r := range l {
		if col == char {
			return off + i, nil
		}
		col += units(string(r), enc)
	}
	if col == char {
		return off + len(l), nil
	}
	return 0, fmt.Errorf("character %d of line %d is not on a character boundary or past the line (%d units)", char, line, col)
}

// SyncBuffer is a bytes.Buffer safe for one writer and concurrent readers
// (a subprocess's output read while it runs).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (e *Editor) didChangeFull(ctx context.Context, path, text string, version int32) error {
	return e.Notify(ctx, "textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": FileURI(path), "version": version},
		"contentChanges": []map[string]any{{"text": text}},
	})
}

// ChangeRange sends an incremental didChange replacing the range
// (startLine:startChar)-(endLine:endChar), in the editor's encoding, with
// text, and updates the buffer the same way.
func (e *Editor) ChangeRange(ctx context.Context, path string, startLine, startChar, endLine, endChar int, text string) error {
	e.mu.Lock()
	b, ok := e.bufs[path]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("%s is not open", path)
	}
	te := textEdit{NewText: text}
	te.Range.Start = position{startLine, startChar}
	te.Range.End = position{endLine, endChar}
	next, err := applyTextEdits(b.Text, []textEdit{te}, e.Encoding)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	b.Text, b.Version = next, b.Version+1
	v := b.Version
	e.mu.Unlock()
	return e.Notify(ctx, "textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": FileURI(path), "version": v},
		"contentChanges": []any{map[string]any{"range": te.Range, "text": text}},
	})
}

// cmpOr is a when it is set, else b.
func cmpOr(a, b map[string]any) map[string]any {
	if a != nil {
		return a
	}
	return b
}
