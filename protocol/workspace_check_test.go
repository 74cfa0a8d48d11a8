package protocol_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// countRequests wraps h and counts the requests other than GET /health.
func countRequests(h http.Handler, n *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			n.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

func TestClientRefusesAnotherWorkspacesServer(t *testing.T) {
	other := demoWorkspace(t)
	s, err := upstream.New(upstream.Options{Workspace: other, PingInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	srv := httptest.NewServer(countRequests(s.Handler(), &n))
	t.Cleanup(func() { srv.Close(); s.Close() })

	mine := t.TempDir() // no .agentsmithy/status.json
	c := protocol.NewClient(protocol.ClientConfig{BaseURL: srv.URL, Workspace: mine})
	sum, err := c.Chat(context.Background(), protocol.ChatRequest{Message: "create a file"}, nil)
	var we *protocol.WrongWorkspaceError
	if !errors.As(err, &we) || !errors.Is(err, protocol.ErrWrongWorkspace) {
		t.Fatalf("Chat error %v; want a *WrongWorkspaceError", err)
	}
	for _, want := range []string{srv.URL, other, mine, "--upstream"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if sum == nil || sum.Outcome != protocol.OutcomeError {
		t.Errorf("summary %+v; want the turn ended in error", sum)
	}
	if _, err := c.ListDialogs(context.Background(), protocol.ListDialogsOptions{}); !errors.Is(err, protocol.ErrWrongWorkspace) {
		t.Errorf("Dialogs: %v; the REST API must be refused too", err)
	}
	if got := n.Load(); got != 0 {
		t.Fatalf("the other workspace's server got %d requests besides /health", got)
	}

	// The same server, for its own workspace: served.
	own := protocol.NewClient(protocol.ClientConfig{BaseURL: srv.URL, Workspace: other})
	if sum, err := own.Chat(context.Background(), protocol.ChatRequest{Message: "hello"}, nil); err != nil || sum.Outcome != protocol.OutcomeCompleted {
		t.Fatalf("own workspace: %v, %+v", err, sum)
	}
}

// An AgentSmithy server reports no workspace in /health: it serves this
// workspace when it is the process that wrote the workspace's status file.
func TestClientChecksStatusFilePID(t *testing.T) {
	const pid = 4242
	var n atomic.Int32
	srv := httptest.NewServer(countRequests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			json.NewEncoder(w).Encode(map[string]any{"status": "ok", "service": "agentsmithy-server", "server_status": "ready", "pid": pid})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"dialogs": []}`)
	}), &n))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)

	write := func(ws string, serverPID int) {
		if err := os.MkdirAll(filepath.Join(ws, ".agentsmithy"), 0o755); err != nil {
			t.Fatal(err)
		}
		st := fmt.Sprintf(`{"server_status":"ready","server_pid":%d,"port":%s}`, serverPID, u.Port())
		if err := os.WriteFile(protocol.StatusPath(ws), []byte(st), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ours := t.TempDir()
	write(ours, pid)
	if _, err := protocol.NewClient(protocol.ClientConfig{BaseURL: srv.URL, Workspace: ours}).ListDialogs(context.Background(), protocol.ListDialogsOptions{}); err != nil {
		t.Fatalf("the server that wrote this workspace's status file was refused: %v", err)
	}
	stale := t.TempDir()
	write(stale, pid+1) // another process wrote it; this one only took its port
	before := n.Load()
	_, err := protocol.NewClient(protocol.ClientConfig{BaseURL: srv.URL, Workspace: stale}).ListDialogs(context.Background(), protocol.ListDialogsOptions{})
	if !errors.Is(err, protocol.ErrWrongWorkspace) || !strings.Contains(err.Error(), "4242") {
		t.Fatalf("stale status file: %v; want ErrWrongWorkspace naming the server's pid", err)
	}
	if n.Load() != before {
		t.Fatal("a request was sent to a server that does not serve the workspace")
	}
}

// TestWrongWorkspaceReasons: each way a found server fails to show that it
// serves the workspace has its own reason, naming the file or the answer
// that told. (They pin the behaviour of the status file and /health
// readers that the check shares with Discover and Health.)
func TestWrongWorkspaceReasons(t *testing.T) {
	const pid = 4242
	health := func(body string, code int) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			fmt.Fprint(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	agentsmithy := health(fmt.Sprintf(`{"status":"ok","pid":%d}`, pid), http.StatusOK)
	for _, tt := range []struct {
		name   string
		srv    *httptest.Server
		status string // the workspace's status.json; "" for none
		want   string
	}{
		{"health is not JSON", health("<html>", http.StatusOK), "", "does not answer GET /health like an AgentSmithy server (200 OK)"},
		{"health fails", health(`{}`, http.StatusNotFound), "", "(404 Not Found)"},
		{"another workspace", health(`{"pid":1,"workspace":"/elsewhere"}`, http.StatusOK), "", "it serves the workspace /elsewhere (its /health says so)"},
		{"no status file", agentsmithy, "", "this workspace has no " + filepath.Join(".agentsmithy", "status.json") + " (no server was started for it)"},
		{"status file not JSON", agentsmithy, "{", "status.json names no server_pid"},
		{"status file without pid", agentsmithy, `{"server_status":"ready"}`, "status.json names no server_pid"},
		{"status file of another process", agentsmithy, `{"server_status":"ready","server_pid":7}`, "status.json was written by process 7, not by this server"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			if tt.status != "" {
				if err := os.MkdirAll(filepath.Join(ws, ".agentsmithy"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(protocol.StatusPath(ws), []byte(tt.status), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := protocol.NewClient(protocol.ClientConfig{BaseURL: tt.srv.URL, Workspace: ws}).ListDialogs(context.Background(), protocol.ListDialogsOptions{})
			var we *protocol.WrongWorkspaceError
			if !errors.As(err, &we) {
				t.Fatalf("error %v; want a *WrongWorkspaceError", err)
			}
			if !strings.Contains(we.Reason, tt.want) {
				t.Errorf("reason %q; want it to contain %q", we.Reason, tt.want)
			}
		})
	}
}
