package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/smith-dev/smith/protocol"
)

// TestServerNamedDialogIsTheDialog: an AgentSmithy-style server without a
// dialog API (GET /api/dialogs/current is 404) names the dialog in its
// stream. The turn's result, its events, the dialog list and the next
// turn's request use that id, and the local dialog that learnt it stays
// one dialog.
func TestServerNamedDialogIsTheDialog(t *testing.T) {
	const server = "srv-dialog-7"
	var mu sync.Mutex
	var sent []string // dialog_id of each chat request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/chat" {
			http.NotFound(w, r)
			return
		}
		var body struct {
			DialogID string `json:"dialog_id"`
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		mu.Lock()
		sent = append(sent, body.DialogID)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, p := range []string{
			`{"type": "chat", "content": "hello", "dialog_id": "` + server + `"}`,
			`{"type": "done", "done": true, "dialog_id": "` + server + `"}`,
		} {
			io.WriteString(w, "data: "+p+"\r\n\r\n")
		}
	}))
	defer srv.Close()
	e, err := New(context.Background(), Config{Workspace: t.TempDir(), Upstream: srv.URL, StateDir: t.TempDir(), NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p := e.Attach(nil)

	for turn := 1; turn <= 2; turn++ {
		var evs []protocol.Event
		res, err := e.Chat(WithPeer(context.Background(), p), ChatRequest{Message: "hi"}, func(ev protocol.Event) { evs = append(evs, ev) })
		if err != nil || res.Outcome != protocol.OutcomeCompleted {
			t.Fatalf("turn %d: %v, %+v", turn, err, res)
		}
		if res.DialogID != server {
			t.Errorf("turn %d: result dialog %q, want the server's %q", turn, res.DialogID, server)
		}
		if res.Summary != nil && res.Summary.DialogID != server {
			t.Errorf("turn %d: summary dialog %q, want %q", turn, res.Summary.DialogID, server)
		}
		for _, ev := range evs {
			if ev.DialogID != server {
				t.Errorf("turn %d: %s event with dialog %q, want %q", turn, ev.Type, ev.DialogID, server)
				break
			}
		}
	}
	ds, err := e.Dialogs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].ID != server || !ds[0].Current {
		t.Fatalf("dialogs %+v; want one, the server's %q, current", ds, server)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 2 || sent[1] != server {
		t.Fatalf("the requests named dialogs %q; the second must name the server's %q", sent, server)
	}
}
