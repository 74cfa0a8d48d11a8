package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// testEditor is a stand-in for an editor front: it holds open buffers with
// versions, applies versioned whole-file edits the way a client applies a
// WorkspaceEdit (refusing a stale version), and records everything.
type testEditor struct {
	mu      sync.Mutex
	docs    map[string]*buffer
	applied []applyCall
	notes   []Notification
	refuse  error // when set, ApplyEdit fails with it
	// onNotify, when set, runs inside Notify (without ed.mu), as a front
	// that reacts to a notification at once would.
	onNotify func(Notification)
}

type buffer struct {
	text    []byte
	version int32
}

type applyCall struct {
	Label string
	Edits []FileEdit
}

func newTestEditor() *testEditor { return &testEditor{docs: map[string]*buffer{}} }

func (ed *testEditor) open(path string, text string, version int32) {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	ed.docs[path] = &buffer{text: []byte(text), version: version}
}

func (ed *testEditor) text(path string) (string, int32) {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	b := ed.docs[path]
	if b == nil {
		return "", -1
	}
	return string(b.text), b.version
}

func (ed *testEditor) Document(path string) ([]byte, int32, bool) {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	b, ok := ed.docs[path]
	if !ok {
		return nil, 0, false
	}
	return bytes.Clone(b.text), b.version, true
}

func (ed *testEditor) ApplyEdit(ctx context.Context, label string, edits []FileEdit) error {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	if ed.refuse != nil {
		return ed.refuse
	}
	for _, fe := range edits {
		b, ok := ed.docs[fe.Path]
		if !ok {
			return fmt.Errorf("%s is not open", fe.Path)
		}
		if b.version != fe.Version {
			return fmt.Errorf("%s: version %d, edit is for %d", fe.Path, b.version, fe.Version)
		}
	}
	for _, fe := range edits {
		b := ed.docs[fe.Path]
		b.text = bytes.Clone(fe.NewText)
		b.version++
	}
	ed.applied = append(ed.applied, applyCall{label, edits})
	return nil
}

func (ed *testEditor) Notify(n Notification) {
	ed.mu.Lock()
	ed.notes = append(ed.notes, n)
	hook := ed.onNotify
	ed.mu.Unlock()
	if hook != nil {
		hook(n)
	}
}

func (ed *testEditor) notifications() []Notification {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	return append([]Notification(nil), ed.notes...)
}

func (ed *testEditor) applyCalls() []applyCall {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	return append([]applyCall(nil), ed.applied...)
}

// faultKey carries a per-turn fault spec in the context of Chat down to the
// test transport, which sends it as the upstream's X-Smith-Fault header.
type faultKey struct{}

func withFault(ctx context.Context, spec string) context.Context {
	return context.WithValue(ctx, faultKey{}, spec)
}

// refuseKey makes the test transport dial a closed port: a real
// "connection refused".
type refuseKey struct{}

type faultTransport struct {
	base   http.RoundTripper
	closed string // host:port nobody listens on
}

func (t *faultTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if spec, ok := r.Context().Value(faultKey{}).(string); ok {
		r = r.Clone(r.Context())
		r.Header.Set(upstream.FaultHeader, spec)
	}
	if r.Context().Value(refuseKey{}) != nil {
		r = r.Clone(r.Context())
		r.URL.Host = t.closed
	}
	return t.base.RoundTrip(r)
}

// closedAddr returns a loopback address on which nothing listens.
func closedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// fixture is a workspace, an embedded upstream serving it on loopback, and
// an engine on both.
type fixture struct {
	t     testing.TB
	ws    string
	state string
	srv   *httptest.Server
	cfg   Config
	e     *Engine
}

type fixtureOpts struct {
	protocol string // upstream protocol: v0, v1, v2
	files    map[string]string
	replay   []byte
	mutate   func(*Config)
}

func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	ws := t.TempDir()
	for name, text := range o.files {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	up, err := upstream.New(upstream.Options{Workspace: ws, Protocol: o.protocol, Replay: o.replay, PingInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(up.Handler())
	t.Cleanup(srv.Close)
	f := &fixture{t: t, ws: ws, state: t.TempDir(), srv: srv}
	f.cfg = Config{
		Workspace: ws,
		Upstream:  srv.URL,
		StateDir:  f.state,
		HTTPClient: &http.Client{Transport: &faultTransport{
			base: http.DefaultTransport, closed: closedAddr(t),
		}},
		WatchDebounce: 20 * time.Millisecond,
	}
	if o.mutate != nil {
		o.mutate(&f.cfg)
	}
	f.e = f.open()
	return f
}

// open starts an engine on the fixture's configuration (a restart when
// called again after Close).
func (f *fixture) open() *Engine {
	f.t.Helper()
	e, err := New(context.Background(), f.cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { e.Close() })
	return e
}

func (f *fixture) path(rel string) string { return filepath.Join(f.ws, filepath.FromSlash(rel)) }

func (f *fixture) read(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(f.path(rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) write(rel, text string) {
	f.t.Helper()
	if err := os.WriteFile(f.path(rel), []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// chat runs a turn and collects its events.
func (f *fixture) chat(ctx context.Context, p *Peer, req ChatRequest) (*ChatResult, []protocol.Event, error) {
	var evs []protocol.Event
	res, err := f.e.Chat(WithPeer(ctx, p), req, func(ev protocol.Event) { evs = append(evs, ev) })
	return res, evs, err
}

// mustChat runs a turn that must complete.
func (f *fixture) mustChat(p *Peer, msg string) (*ChatResult, []protocol.Event) {
	f.t.Helper()
	res, evs, err := f.chat(context.Background(), p, ChatRequest{Message: msg})
	if err != nil {
		f.t.Fatalf("chat %q: %v", msg, err)
	}
	if res.Outcome != protocol.OutcomeCompleted {
		f.t.Fatalf("chat %q: outcome %s, events %+v", msg, res.Outcome, evs)
	}
	return res, evs
}

// renameProposed is a fixture on main.go with a legacy (v0) upstream,
// after a turn that proposed renaming Foo to Bar (pending, nothing
// written): a terminal's peer and the change.
func renameProposed(t testing.TB) (*fixture, *Peer, Change) {
	t.Helper()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo}})
	p := f.e.Attach(nil)
	res, _ := f.mustChat(p, "rename Foo to Bar in main.go")
	return f, p, f.change(res)
}

// renameProposedInEditor is renameProposed with main.go open in an editor
// at version, the editor attached as the peer.
func renameProposedInEditor(t testing.TB, version int32) (*fixture, *testEditor, *Peer, Change) {
	t.Helper()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo}})
	ed := newTestEditor()
	ed.open(f.path("main.go"), mainGo, version)
	p := f.e.Attach(ed)
	res, _ := f.mustChat(p, "rename Foo to Bar in main.go")
	return f, ed, p, f.change(res)
}

// textbookEngine is an engine, without a watcher, on an empty workspace
// served by an embedded upstream of the textbook dialect (which keeps no
// dialogs: smith keeps them), replaying replay when it is not nil.
func textbookEngine(t testing.TB, replay []byte) *Engine {
	t.Helper()
	ws := t.TempDir()
	up, err := upstream.New(upstream.Options{Workspace: ws, Dialect: protocol.DialectTextbook, PingInterval: -1, Replay: replay})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(up.Handler())
	t.Cleanup(srv.Close)
	e, err := New(context.Background(), Config{Workspace: ws, Upstream: srv.URL, Dialect: protocol.DialectTextbook, StateDir: t.TempDir(), NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// mustApply applies all of change id as peer p and fails the test if it
// cannot.
func (f *fixture) mustApply(p *Peer, id string) {
	f.t.Helper()
	if _, err := f.e.Apply(WithPeer(context.Background(), p), id, nil); err != nil {
		f.t.Fatal(err)
	}
}

// change returns the one change of res.
func (f *fixture) change(res *ChatResult) Change {
	f.t.Helper()
	if len(res.Changes) != 1 {
		f.t.Fatalf("turn has changes %v, want exactly one", res.Changes)
	}
	c, err := f.e.Change(res.Changes[0])
	if err != nil {
		f.t.Fatal(err)
	}
	return *c
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var errRefused = errors.New("refused by the test editor")

// list is Changes for tests that need no context and expect no error.
func (e *Engine) list(f ChangeFilter) []Change {
	cs, err := e.Changes(context.Background(), f)
	if err != nil {
		panic(err)
	}
	return cs
}

// ApplyPatchIDs is ApplyPlannedSeq over a slice of changes without
// plans, for the tests.
//
// It takes chs: each entry is cleared once its change is recorded, so
// that a large diff lives in the change's record only, which lets it go
// once the journal has it (a 50 MB patch's diffs are held once, not until
// the apply returns).
func (e *Engine) ApplyPatchIDs(ctx context.Context, dialogID string, chs []protocol.Change) ([]string, error) {
	_, ids, err := e.applyPatch(ctx, dialogID, func(yield func(PlannedChange) bool) {
		for i := range chs {
			if !yield(PlannedChange{Change: chs[i]}) {
				return
			}
			chs[i] = protocol.Change{}
		}
	}, false, nil)
	return ids, err
}

// ApplyPatchSeq is ApplyPlannedSeq for changes without plans, for the
// tests.
func (e *Engine) ApplyPatchSeq(ctx context.Context, dialogID string, chs iter.Seq2[protocol.Change, error]) ([]string, error) {
	return e.ApplyPlannedSeq(ctx, dialogID, func(yield func(PlannedChange, error) bool) {
		for ch, err := range chs {
			if !yield(PlannedChange{Change: ch}, err) {
				return
			}
		}
	})
}
