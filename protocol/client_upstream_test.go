package protocol_test

// The client against the embedded upstream (protocol/upstream): the real
// server's bytes for every dialect, and the REST API end to end. The
// package is external because upstream imports protocol.

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// demoWorkspace is a small project the demo agent can edit.
func demoWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	src := "package main\n\nfunc main() {\n\ttotal := 1\n\tprintln(total)\n}\n"
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

func startUpstream(t *testing.T, opts upstream.Options) (*upstream.Server, string) {
	t.Helper()
	if opts.Workspace == "" {
		opts.Workspace = demoWorkspace(t)
	}
	opts.PingInterval = -1
	s, err := upstream.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	return s, srv.URL
}

func TestClientAgainstEmbeddedUpstream(t *testing.T) {
	tests := []struct {
		name     string
		server   upstream.Options
		client   protocol.Dialect // what the client is configured with
		dialect  protocol.Dialect // what the summary must say
		protocol string           // agentsmithy only
	}{
		{"agentsmithy v2, detected", upstream.Options{}, protocol.DialectAuto, protocol.DialectAgentSmithy, "v2"},
		{"agentsmithy v1, detected", upstream.Options{Protocol: upstream.ProtocolV1}, protocol.DialectAuto, protocol.DialectAgentSmithy, "v1"},
		{"agentsmithy v0, configured", upstream.Options{Protocol: upstream.ProtocolV0}, protocol.DialectAgentSmithy, protocol.DialectAgentSmithy, "v0"},
		{"rag", upstream.Options{Dialect: protocol.DialectRAG}, protocol.DialectRAG, protocol.DialectRAG, ""},
		{"textbook", upstream.Options{Dialect: protocol.DialectTextbook}, protocol.DialectTextbook, protocol.DialectTextbook, ""},
		{"oracle", upstream.Options{Dialect: protocol.DialectOracle}, protocol.DialectOracle, protocol.DialectOracle, ""},
		{"lifecycle", upstream.Options{Dialect: protocol.DialectLifecycle}, protocol.DialectLifecycle, protocol.DialectLifecycle, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, base := startUpstream(t, tt.server)
			c := protocol.NewClient(protocol.ClientConfig{BaseURL: base, Dialect: tt.client})
			defer c.Close()
			var evs []protocol.Event
			sum, err := c.Chat(context.Background(), protocol.ChatRequest{Message: "hello", TurnID: "t1"}, func(e protocol.Event) { evs = append(evs, e) })
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if sum.Outcome != protocol.OutcomeCompleted || sum.Text == "" || len(sum.Violations) != 0 {
				t.Fatalf("summary: outcome %s, text %q, violations %+v", sum.Outcome, sum.Text, sum.Violations)
			}
			if sum.Dialect != tt.dialect {
				t.Errorf("dialect = %s, want %s", sum.Dialect, tt.dialect)
			}
			if got := ""; sum.Protocol != nil {
				got = *sum.Protocol
				if got != tt.protocol {
					t.Errorf("protocol = %s, want %s", got, tt.protocol)
				}
			} else if tt.protocol != "" {
				t.Errorf("protocol = null, want %s", tt.protocol)
			}
			if last := evs[len(evs)-1]; last.Type != protocol.KindTurnEnd || last.TurnID != "t1" {
				t.Errorf("last event = %+v", last)
			}
		})
	}
}

// TestRESTAgainstEmbeddedUpstream walks a dialog's life through the REST
// client: create, chat in it, read its history and session, approve,
// checkpoints, restore, reset, rename, delete.
func TestRESTAgainstEmbeddedUpstream(t *testing.T) {
	ctx := context.Background()
	_, base := startUpstream(t, upstream.Options{})
	c := protocol.NewClient(protocol.ClientConfig{BaseURL: base})

	h, err := c.Health(ctx)
	if err != nil || h.Status != "ok" {
		t.Fatalf("Health = %+v, %v", h, err)
	}
	id, err := c.CreateDialog(ctx, "Rename", true)
	if err != nil || id == "" {
		t.Fatalf("CreateDialog = %q, %v", id, err)
	}
	cur, err := c.CurrentDialog(ctx)
	if err != nil || cur.ID != id {
		t.Fatalf("CurrentDialog = %+v, %v; want %s", cur, err, id)
	}
	sum, err := c.Chat(ctx, protocol.ChatRequest{DialogID: id, Message: "rename total to sum in main.go"}, nil)
	if err != nil || sum.Outcome != protocol.OutcomeCompleted || sum.DialogID != id || len(sum.Changes) != 1 {
		t.Fatalf("Chat = %+v, %v", sum, err)
	}
	page, err := c.History(ctx, id, protocol.HistoryOptions{})
	if err != nil || len(page.Events) == 0 || page.Events[0].Type != "user" || page.Events[0].Checkpoint == "" {
		t.Fatalf("History = %+v, %v", page, err)
	}
	st, err := c.SessionStatus(ctx, id)
	if err != nil || !st.HasUnapproved || len(st.ChangedFiles) != 1 || st.ChangedFiles[0].Path != "main.go" {
		t.Fatalf("SessionStatus = %+v, %v", st, err)
	}
	cps, err := c.Checkpoints(ctx, id)
	if err != nil || len(cps.Checkpoints) == 0 {
		t.Fatalf("Checkpoints = %+v, %v", cps, err)
	}
	// Back to the turn's checkpoint: main.go as before the rename.
	if _, err := c.Restore(ctx, id, page.Events[0].Checkpoint); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if _, err := c.Restore(ctx, id, "0000000000000000000000000000000000000000"); !errors.Is(err, protocol.ErrNotFound) {
		t.Errorf("Restore of an unknown checkpoint: %v, want ErrNotFound", err)
	}
	ap, err := c.Approve(ctx, id, "")
	if err != nil || ap.NewSession == "" {
		t.Fatalf("Approve = %+v, %v", ap, err)
	}
	if _, err := c.Reset(ctx, id); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if err := c.RenameDialog(ctx, id, "Renamed"); err != nil {
		t.Fatalf("RenameDialog: %v", err)
	}
	if m, err := c.Dialog(ctx, id); err != nil || m.Title != "Renamed" {
		t.Fatalf("Dialog = %+v, %v", m, err)
	}
	list, err := c.ListDialogs(ctx, protocol.ListDialogsOptions{Sort: "created_at", Order: "asc", Limit: 10})
	if err != nil || len(list.Dialogs) != 1 || list.CurrentDialogID != id {
		t.Fatalf("ListDialogs = %+v, %v", list, err)
	}
	if err := c.DeleteDialog(ctx, id); err != nil {
		t.Fatalf("DeleteDialog: %v", err)
	}
	if _, err := c.Dialog(ctx, id); !errors.Is(err, protocol.ErrNotFound) {
		t.Errorf("Dialog after delete: %v, want ErrNotFound", err)
	}
}

// TestDiscoverEmbeddedUpstream finds a started server from the status.json
// it writes, and talks to it.
func TestDiscoverEmbeddedUpstream(t *testing.T) {
	ws := demoWorkspace(t)
	s, err := upstream.New(upstream.Options{Workspace: ws, PingInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	base, err := protocol.Discover(ws)
	if err != nil {
		s.Close()
		t.Fatalf("Discover: %v", err)
	}
	h, err := protocol.NewClient(protocol.ClientConfig{BaseURL: base}).Health(context.Background())
	if err != nil || h.ServerStatus == nil || *h.ServerStatus != "ready" {
		t.Errorf("Health at %s = %+v, %v", base, h, err)
	}
	s.Close()
	if _, err := protocol.Discover(ws); !errors.Is(err, protocol.ErrNoServer) {
		t.Errorf("Discover after Close = %v, want ErrNoServer", err)
	}
}
