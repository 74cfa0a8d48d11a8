package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

// seenRequest is what the test server received.
type seenRequest struct {
	Method, Path, Query, Body, Accept, Auth string
}

// restServer answers every request with status and body (JSON), recording
// the request.
func restServer(t *testing.T, status int, body string) (*Client, *seenRequest) {
	t.Helper()
	seen := &seenRequest{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*seen = seenRequest{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Body: string(b),
			Accept: r.Header.Get("Accept"), Auth: r.Header.Get("Authorization")}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return NewClient(ClientConfig{BaseURL: srv.URL, Token: "s3cret"}), seen
}

func TestRESTEndpoints(t *testing.T) {
	const id = "050d5ee3ea774a418b52299e054ba351"
	tests := []struct {
		name     string
		call     func(context.Context, *Client) (any, error)
		answer   string
		want     seenRequest // Accept and Auth are checked separately
		wantBody string      // JSON, compared semantically; "" = no body
		wantOut  any
	}{
		{
			name:    "health",
			call:    func(ctx context.Context, c *Client) (any, error) { return c.Health(ctx) },
			answer:  `{"status": "ok", "service": "agentsmithy-server", "server_status": "ready", "port": 8765, "pid": 4242, "server_error": null, "config_valid": false, "config_errors": ["no API key"]}`,
			want:    seenRequest{Method: "GET", Path: "/health"},
			wantOut: &Health{Status: "ok", Service: "agentsmithy-server", ServerStatus: ptr("ready"), Port: ptr(8765), PID: 4242, ConfigValid: ptr(false), ConfigErrors: []string{"no API key"}},
		},
		{
			name: "list dialogs with every option",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.ListDialogs(ctx, ListDialogsOptions{Sort: "created_at", Order: "asc", Limit: 5, Offset: 10})
			},
			answer: `{"current_dialog_id": "` + id + `", "dialogs": [{"id": "` + id + `", "title": "Slugify", "created_at": "2025-12-29T11:20:15.482913Z", "updated_at": "2025-12-29T11:21:00Z"}, {"id": "b", "created_at": "x", "updated_at": "y"}]}`,
			want:   seenRequest{Method: "GET", Path: "/api/dialogs", Query: "limit=5&offset=10&order=asc&sort=created_at"},
			wantOut: &DialogList{CurrentDialogID: id, Dialogs: []DialogMeta{
				{ID: id, Title: "Slugify", CreatedAt: "2025-12-29T11:20:15.482913Z", UpdatedAt: "2025-12-29T11:21:00Z"},
				{ID: "b", CreatedAt: "x", UpdatedAt: "y"},
			}},
		},
		{
			name:    "list dialogs with defaults and none",
			call:    func(ctx context.Context, c *Client) (any, error) { return c.ListDialogs(ctx, ListDialogsOptions{}) },
			answer:  `{"dialogs": []}`,
			want:    seenRequest{Method: "GET", Path: "/api/dialogs"},
			wantOut: &DialogList{Dialogs: []DialogMeta{}},
		},
		{
			name:     "create dialog",
			call:     func(ctx context.Context, c *Client) (any, error) { return c.CreateDialog(ctx, "Refactor", true) },
			answer:   `{"id": "` + id + `"}`,
			want:     seenRequest{Method: "POST", Path: "/api/dialogs"},
			wantBody: `{"title": "Refactor", "set_current": true}`,
			wantOut:  id,
		},
		{
			name:     "create dialog without title",
			call:     func(ctx context.Context, c *Client) (any, error) { return c.CreateDialog(ctx, "", false) },
			answer:   `{"id": "x"}`,
			want:     seenRequest{Method: "POST", Path: "/api/dialogs"},
			wantBody: `{"title": null, "set_current": false}`,
			wantOut:  "x",
		},
		{
			name:    "current dialog",
			call:    func(ctx context.Context, c *Client) (any, error) { return c.CurrentDialog(ctx) },
			answer:  `{"id": "` + id + `", "meta": {"id": "` + id + `", "created_at": "a", "updated_at": "b"}}`,
			want:    seenRequest{Method: "GET", Path: "/api/dialogs/current"},
			wantOut: &CurrentDialog{ID: id, Meta: &DialogMeta{ID: id, CreatedAt: "a", UpdatedAt: "b"}},
		},
		{
			name:    "no current dialog",
			call:    func(ctx context.Context, c *Client) (any, error) { return c.CurrentDialog(ctx) },
			answer:  `{}`,
			want:    seenRequest{Method: "GET", Path: "/api/dialogs/current"},
			wantOut: &CurrentDialog{},
		},
		{
			name:    "set current dialog",
			call:    func(ctx context.Context, c *Client) (any, error) { return nil, c.SetCurrentDialog(ctx, id) },
			answer:  `{"ok": true}`,
			want:    seenRequest{Method: "PATCH", Path: "/api/dialogs/current", Query: "id=" + id},
			wantOut: nil,
		},
		{
			name:    "get dialog",
			call:    func(ctx context.Context, c *Client) (any, error) { return c.Dialog(ctx, id) },
			answer:  `{"id": "` + id + `", "title": "T", "created_at": "a", "updated_at": "b"}`,
			want:    seenRequest{Method: "GET", Path: "/api/dialogs/" + id},
			wantOut: &DialogMeta{ID: id, Title: "T", CreatedAt: "a", UpdatedAt: "b"},
		},
		{
			name:     "rename dialog",
			call:     func(ctx context.Context, c *Client) (any, error) { return nil, c.RenameDialog(ctx, id, "New ✓") },
			answer:   `{"ok": true}`,
			want:     seenRequest{Method: "PATCH", Path: "/api/dialogs/" + id},
			wantBody: `{"title": "New ✓"}`,
		},
		{
			name:   "delete dialog",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteDialog(ctx, id) },
			answer: `{"ok": true}`,
			want:   seenRequest{Method: "DELETE", Path: "/api/dialogs/" + id},
		},
		{
			name: "history page with before cursor",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.History(ctx, id, HistoryOptions{Limit: 20, Before: ptr(30)})
			},
			answer: `{"dialog_id": "` + id + `", "events": [
				{"type": "user", "idx": 10, "content": "Add slugify", "checkpoint": "9692df86", "session": "session_1"},
				{"type": "reasoning", "content": "thinking", "model_name": "gpt"},
				{"type": "chat", "idx": 11, "content": "Done."},
				{"type": "tool_call", "id": "call_abc123", "name": "write_to_file", "args": {"path": "a.py"}},
				{"type": "file_edit", "file": "/w/a.py", "diff": "--- a\n+++ b\n"}
			], "total_events": 42, "has_more": true, "first_idx": 10, "last_idx": 11}`,
			want: seenRequest{Method: "GET", Path: "/api/dialogs/" + id + "/history", Query: "before=30&limit=20"},
			wantOut: &HistoryPage{DialogID: id, TotalEvents: 42, HasMore: true, FirstIdx: 10, LastIdx: 11, Events: []HistoryEvent{
				{Type: "user", Idx: ptr(10), Content: "Add slugify", Checkpoint: "9692df86", Session: "session_1"},
				{Type: "reasoning", Content: "thinking", ModelName: "gpt"},
				{Type: "chat", Idx: ptr(11), Content: "Done."},
				{Type: "tool_call", ID: "call_abc123", Name: "write_to_file", Args: json.RawMessage(`{"path": "a.py"}`)},
				{Type: "file_edit", File: "/w/a.py", Diff: "--- a\n+++ b\n"},
			}},
		},
		{
			name:    "latest history page of an empty dialog",
			call:    func(ctx context.Context, c *Client) (any, error) { return c.History(ctx, id, HistoryOptions{}) },
			answer:  `{"dialog_id": "` + id + `", "events": [], "total_events": 0, "has_more": false, "first_idx": 0, "last_idx": 0}`,
			want:    seenRequest{Method: "GET", Path: "/api/dialogs/" + id + "/history"},
			wantOut: &HistoryPage{DialogID: id, Events: []HistoryEvent{}},
		},
		{
			name: "session status with changes",
			call: func(ctx context.Context, c *Client) (any, error) { return c.SessionStatus(ctx, id) },
			answer: `{"active_session": "session_2", "session_ref": "refs/heads/session_2", "has_unapproved": true, "last_approved_at": null,
				"changed_files": [{"path": "a.py", "status": "modified", "additions": 3, "deletions": 1, "diff": "@@", "base_content": "x", "is_binary": false, "is_too_large": false},
				                  {"path": "big.bin", "status": "added", "additions": 0, "deletions": 0, "diff": null, "base_content": null, "is_binary": true, "is_too_large": true}]}`,
			want: seenRequest{Method: "GET", Path: "/api/dialogs/" + id + "/session"},
			wantOut: &SessionStatus{ActiveSession: ptr("session_2"), SessionRef: ptr("refs/heads/session_2"), HasUnapproved: true, ChangedFiles: []ChangedFile{
				{Path: "a.py", Status: "modified", Additions: 3, Deletions: 1, Diff: ptr("@@"), BaseContent: ptr("x")},
				{Path: "big.bin", Status: "added", IsBinary: true, IsTooLarge: true},
			}},
		},
		{
			name:    "session status with nothing unapproved",
			call:    func(ctx context.Context, c *Client) (any, error) { return c.SessionStatus(ctx, id) },
			answer:  `{"active_session": null, "session_ref": null, "has_unapproved": false, "last_approved_at": "2025-12-29T11:20:15Z", "changed_files": []}`,
			want:    seenRequest{Method: "GET", Path: "/api/dialogs/" + id + "/session"},
			wantOut: &SessionStatus{LastApprovedAt: ptr("2025-12-29T11:20:15Z"), ChangedFiles: []ChangedFile{}},
		},
		{
			name:     "approve with message",
			call:     func(ctx context.Context, c *Client) (any, error) { return c.Approve(ctx, id, "ship it") },
			answer:   `{"approved_commit": "abc", "new_session": "session_3", "commits_approved": 2}`,
			want:     seenRequest{Method: "POST", Path: "/api/dialogs/" + id + "/approve"},
			wantBody: `{"message": "ship it"}`,
			wantOut:  &ApproveResult{ApprovedCommit: "abc", NewSession: "session_3", CommitsApproved: 2},
		},
		{
			name:     "approve without message",
			call:     func(ctx context.Context, c *Client) (any, error) { return c.Approve(ctx, id, "") },
			answer:   `{"approved_commit": "abc", "new_session": "session_2", "commits_approved": 0}`,
			want:     seenRequest{Method: "POST", Path: "/api/dialogs/" + id + "/approve"},
			wantBody: `{"message": null}`,
			wantOut:  &ApproveResult{ApprovedCommit: "abc", NewSession: "session_2"},
		},
		{
			name:    "reset",
			call:    func(ctx context.Context, c *Client) (any, error) { return c.Reset(ctx, id) },
			answer:  `{"reset_to": "def", "new_session": "session_4", "pre_reset_checkpoint": null}`,
			want:    seenRequest{Method: "POST", Path: "/api/dialogs/" + id + "/reset"},
			wantOut: &ResetResult{ResetTo: "def", NewSession: "session_4"},
		},
		{
			name:     "restore checkpoint",
			call:     func(ctx context.Context, c *Client) (any, error) { return c.Restore(ctx, id, "9692df86") },
			answer:   `{"restored_to": "9692df86", "new_checkpoint": "aaaa"}`,
			want:     seenRequest{Method: "POST", Path: "/api/dialogs/" + id + "/restore"},
			wantBody: `{"checkpoint_id": "9692df86"}`,
			wantOut:  &RestoreResult{RestoredTo: "9692df86", NewCheckpoint: "aaaa"},
		},
		{
			name:   "checkpoints",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Checkpoints(ctx, id) },
			answer: `{"dialog_id": "` + id + `", "checkpoints": [{"commit_id": "c1", "message": "Initial"}, {"commit_id": "c2", "message": "turn"}], "initial_checkpoint": "c1"}`,
			want:   seenRequest{Method: "GET", Path: "/api/dialogs/" + id + "/checkpoints"},
			wantOut: &CheckpointList{DialogID: id, InitialCheckpoint: ptr("c1"), Checkpoints: []Checkpoint{
				{CommitID: "c1", Message: "Initial"}, {CommitID: "c2", Message: "turn"},
			}},
		},
		{
			name:    "tool results",
			call:    func(ctx context.Context, c *Client) (any, error) { return c.ToolResults(ctx, id) },
			answer:  `[{"tool_call_id": "call_1", "tool_name": "read_file", "timestamp": "2025-12-29T11:20:15Z", "size_bytes": 120, "summary": "main.go", "error": null}]`,
			want:    seenRequest{Method: "GET", Path: "/api/dialogs/" + id + "/tool-results"},
			wantOut: []ToolResultInfo{{ToolCallID: "call_1", ToolName: "read_file", Timestamp: "2025-12-29T11:20:15Z", SizeBytes: 120, Summary: ptr("main.go")}},
		},
		{
			name:   "one tool result",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.ToolResult(ctx, id, "call_1") },
			answer: `{"tool_call_id": "call_1", "tool_name": "read_file", "args": {"path": "main.go"}, "result": {"content": "x"}, "timestamp": "t", "metadata": {"size_bytes": 12, "summary": "main.go"}}`,
			want:   seenRequest{Method: "GET", Path: "/api/dialogs/" + id + "/tool-results/call_1"},
			wantOut: func() *StoredToolResult {
				r := &StoredToolResult{ToolCallID: "call_1", ToolName: "read_file", Args: json.RawMessage(`{"path": "main.go"}`), Result: json.RawMessage(`{"content": "x"}`), Timestamp: "t"}
				r.Metadata.SizeBytes, r.Metadata.Summary = 12, "main.go"
				return r
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, seen := restServer(t, 200, tt.answer)
			out, err := tt.call(context.Background(), c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if seen.Accept != "application/json" || seen.Auth != "Bearer s3cret" {
				t.Errorf("headers: Accept %q, Authorization %q", seen.Accept, seen.Auth)
			}
			got := seenRequest{Method: seen.Method, Path: seen.Path, Query: seen.Query}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if tt.wantBody == "" {
				if seen.Body != "" {
					t.Errorf("request body = %s, want none", seen.Body)
				}
			} else if diff := cmp.Diff(jsonValue(t, tt.wantBody), jsonValue(t, seen.Body)); diff != "" {
				t.Errorf("request body (-want +got):\n%s", diff)
			}
			if tt.wantOut != nil {
				if diff := cmp.Diff(tt.wantOut, out, cmp.Comparer(jsonEqual)); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, s)
	}
	return v
}

// jsonEqual compares raw JSON by value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
}

func TestRESTErrors(t *testing.T) {
	t.Run("404 detail is ErrNotFound", func(t *testing.T) {
		c, _ := restServer(t, 404, `{"detail": "Dialog not found"}`)
		_, err := c.Dialog(context.Background(), "nope")
		var he *HTTPError
		if !errors.As(err, &he) || he.Status != 404 || !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %#v, want *HTTPError 404 matching ErrNotFound", err)
		}
		if !strings.Contains(err.Error(), "Dialog not found") || !strings.Contains(err.Error(), "/api/dialogs/nope") {
			t.Errorf("message %q lacks the detail or the URL", err)
		}
	})
	t.Run("plain-text 500", func(t *testing.T) {
		c, _ := restServer(t, 500, `Internal Server Error`)
		err := c.SetCurrentDialog(context.Background(), "x")
		var he *HTTPError
		if !errors.As(err, &he) || he.Status != 500 || errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want *HTTPError 500", err)
		}
		if !strings.Contains(err.Error(), `"Internal Server Error"`) {
			t.Errorf("message %q does not quote the body", err)
		}
	})
	t.Run("structured 422 detail", func(t *testing.T) {
		c, _ := restServer(t, 422, `{"detail": [{"type": "missing", "loc": ["query", "id"], "msg": "Field required"}]}`)
		err := c.SetCurrentDialog(context.Background(), "x")
		if err == nil || !strings.Contains(err.Error(), "Field required") {
			t.Fatalf("err = %v, want the validation detail", err)
		}
	})
	t.Run("bad JSON", func(t *testing.T) {
		c, _ := restServer(t, 200, `{"id": `)
		_, err := c.Dialog(context.Background(), "x")
		if err == nil || !strings.Contains(err.Error(), "decoding the answer") {
			t.Fatalf("err = %v, want a decoding error", err)
		}
	})
	t.Run("path-changing dialog ids are refused before any request", func(t *testing.T) {
		c, seen := restServer(t, 200, `{}`)
		for _, id := range []string{"", "..", "a/b", "a?b"} {
			if _, err := c.History(context.Background(), id, HistoryOptions{}); err == nil {
				t.Errorf("History(%q) succeeded", id)
			}
		}
		if seen.Method != "" {
			t.Errorf("a request was sent: %+v", seen)
		}
	})
	t.Run("refused connection", func(t *testing.T) {
		c := NewClient(ClientConfig{BaseURL: closedURL(t)})
		_, err := c.Health(context.Background())
		var ue *UnreachableError
		if !errors.As(err, &ue) || !errors.Is(err, ErrUnreachable) {
			t.Fatalf("err = %v, want *UnreachableError", err)
		}
	})
}

// closedURL is the URL of a loopback port that was just closed: connecting
// is refused.
func closedURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}
