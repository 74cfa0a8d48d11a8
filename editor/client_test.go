package editor_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/editor/editortest"
	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// clientFixture is a Server for one workspace with a real upstream; the
// Server's OnEngine hook counts engine starts and stops.
type clientFixture struct {
	srv           *editor.Server
	ws            string
	chats         atomic.Int64
	starts, stops atomic.Int64
}

func newClientFixture(t *testing.T, faults string) *clientFixture {
	t.Helper()
	f := &clientFixture{ws: workspace(t, map[string]string{"calc.go": calcGo})}
	opts := upstream.Options{Workspace: f.ws, Protocol: upstream.ProtocolV0, PingInterval: -1}
	if faults != "" {
		fs, err := upstream.ParseFaults(faults)
		if err != nil {
			t.Fatal(err)
		}
		opts.Faults = fs
	}
	up, err := upstream.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := up.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/chat") {
			f.chats.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		up.Close()
		hs.CloseClientConnections()
		hs.Close()
	})
	state := t.TempDir()
	f.srv = editor.NewServer(editor.Options{
		Resolve: func(_ context.Context, ws string, init editor.InitOptions) (daemon.Config, error) {
			return editor.ApplyInitOptions(daemon.Config{Workspace: ws, Upstream: hs.URL, StateDir: state, NoWatch: true}, init)
		},
		OnEngine: func(*daemon.Engine) func() {
			f.starts.Add(1)
			return func() { f.stops.Add(1) }
		},
	})
	t.Cleanup(func() { f.srv.Close() })
	return f
}

// connect serves one more connection and returns its client end.
func (f *clientFixture) connect(t *testing.T) net.Conn {
	serverEnd, clientEnd := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go f.srv.ServeConn(ctx, serverEnd)
	return clientEnd
}

// TestClient drives every typed method of editor.Client against a Server
// that an editor shares: results decode into the engine's types, errors
// map back to the engine's, and the editor hears about what the client
// did.
func TestClient(t *testing.T) {
	f := newClientFixture(t, "")
	ctx := testCtx(t)
	ed := editortest.New(t, f.connect(t))
	if _, err := ed.Initialize(ctx, f.ws, nil); err != nil {
		t.Fatal(err)
	}
	var notes []string
	var mu sync.Mutex
	c := editor.NewClient(f.connect(t), editor.ClientOptions{Notify: func(method string, _ json.RawMessage) {
		mu.Lock()
		notes = append(notes, method)
		mu.Unlock()
	}})
	res, err := c.Initialize(ctx, f.ws, "client-test", "0")
	if err != nil {
		t.Fatal(err)
	}
	if res.ServerInfo.Name != "smith" || f.starts.Load() != 1 {
		t.Errorf("initialize: server %q, engines started %d; want smith and one engine shared with the editor", res.ServerInfo.Name, f.starts.Load())
	}

	var events []protocol.Event
	turn, err := c.Chat(ctx, daemon.ChatRequest{Message: "rename total to sum in calc.go"}, func(ev protocol.Event) { events = append(events, ev) })
	if err != nil {
		t.Fatal(err)
	}
	if turn.Outcome != protocol.OutcomeCompleted || len(turn.Changes) != 1 || turn.Summary == nil || turn.Summary.Text != turn.Text {
		t.Fatalf("chat result %+v", turn)
	}
	if n := len(events); n == 0 || events[n-1].Type != protocol.KindTurnEnd {
		t.Errorf("events do not end with turnEnd before Chat returns: %d events", n)
	}
	id := turn.Changes[0]

	mine, err := c.Changes(ctx, daemon.ChangeFilter{TurnID: turn.TurnID})
	if err != nil || len(mine) != 1 || mine[0].ID != id {
		t.Errorf("changes of the turn: %+v, %v", mine, err)
	}
	if none, err := c.Changes(ctx, daemon.ChangeFilter{TurnID: "no-such-turn"}); err != nil || len(none) != 0 {
		t.Errorf("changes of another turn: %+v, %v", none, err)
	}
	pv, err := c.Preview(ctx, id, nil)
	if err != nil || !strings.Contains(pv.Diff, "+\tsum := 0") {
		t.Errorf("preview: %+v, %v", pv, err)
	}
	applied, err := c.Apply(ctx, id, nil)
	if err != nil || applied.Status != daemon.StatusApplied {
		t.Fatalf("apply: %+v, %v", applied, err)
	}
	if _, err := ed.WaitNotification(ctx, editor.MethodChangeUpdated, func(p json.RawMessage) bool {
		return strings.Contains(string(p), `"status":"applied"`)
	}); err != nil {
		t.Errorf("the editor did not hear of the client's apply: %v", err)
	}
	undone, err := c.Undo(ctx, "")
	if err != nil || undone.ID != id || undone.Status != daemon.StatusUndone {
		t.Errorf("undo: %+v, %v", undone, err)
	}

	_, err = c.Apply(ctx, "c999", nil)
	var re *editor.RemoteError
	if !errors.Is(err, daemon.ErrUnknownChange) || !errors.As(err, &re) || re.Code != editor.CodeUnknownChange || re.Method != editor.MethodChangeApply {
		t.Errorf("apply of an unknown change: %v (%#v), want daemon.ErrUnknownChange as a RemoteError", err, re)
	}
	if errors.Is(err, daemon.ErrConflict) {
		t.Errorf("an unknown change also reads as a conflict: %v", err)
	}

	d, err := c.NewDialog(ctx, "first")
	if err != nil || d.ID == "" {
		t.Fatalf("new dialog: %+v, %v", d, err)
	}
	if err := c.RenameDialog(ctx, d.ID, "renamed"); err != nil {
		t.Error(err)
	}
	if err := c.SelectDialog(ctx, d.ID); err != nil {
		t.Error(err)
	}
	ds, err := c.Dialogs(ctx)
	found := false
	for _, x := range ds {
		found = found || (x.ID == d.ID && x.Title == "renamed" && x.Current)
	}
	if err != nil || !found {
		t.Errorf("dialogs: %+v, %v; want %s renamed and current", ds, err, d.ID)
	}
	if _, err := c.History(ctx, turn.DialogID, 10, -1); err != nil {
		t.Errorf("history: %v", err)
	}
	if err := c.DeleteDialog(ctx, d.ID); err != nil {
		t.Error(err)
	}
	st, err := c.Status(ctx)
	if err != nil || st.Workspace != f.ws || st.RunningTurns != 0 {
		t.Errorf("status: %+v, %v", st, err)
	}

	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if f.stops.Load() != 0 {
		t.Errorf("OnEngine's stop ran while the editor still uses the engine")
	}
	f.srv.Close()
	if f.starts.Load() != 1 || f.stops.Load() != 1 {
		t.Errorf("OnEngine: %d starts, %d stops after Close; want 1 and 1", f.starts.Load(), f.stops.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) == 0 {
		t.Errorf("the client's Notify saw none of the server's notifications")
	}
}

// TestClientChatCancel: cancelling Chat's context sends $/cancelRequest
// and still returns the turn, ended "cancelled", rather than dropping it.
func TestClientChatCancel(t *testing.T) {
	f := newClientFixture(t, "stall=30")
	ctx := testCtx(t)
	c := editor.NewClient(f.connect(t), editor.ClientOptions{})
	defer c.Close()
	if _, err := c.Initialize(ctx, f.ws, "client-test", "0"); err != nil {
		t.Fatal(err)
	}
	turnCtx, cancel := context.WithCancel(ctx)
	go func() {
		for f.chats.Load() == 0 && turnCtx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	res, err := c.Chat(turnCtx, daemon.ChatRequest{Message: "rename total to sum in calc.go"}, nil)
	if err != nil || res.Outcome != protocol.OutcomeCancelled {
		t.Fatalf("cancelled chat: %+v, %v; want the turn ended cancelled", res, err)
	}
	if got := readFile(t, f.ws+"/calc.go"); got != calcGo {
		t.Errorf("a cancelled turn changed calc.go")
	}
}
