package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// openSession opens the lifecycle session stream and returns its id and a
// reader of its data payloads.
func openSession(t *testing.T, ctx context.Context, base string) (string, func() map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/chat/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("session stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(res.Body)
	next := func() map[string]any {
		t.Helper()
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("session stream ended: %v", err)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatalf("bad payload %q: %v", data, err)
				}
				return m
			}
		}
	}
	first := next()
	if first["type"] != "session_start" {
		t.Fatalf("first event %v", first)
	}
	return first["sessionId"].(string), next
}

func TestLifecycleTurn(t *testing.T) {
	_, base := newTestServer(t, Options{Dialect: "lifecycle"})
	id, next := openSession(t, t.Context(), base)
	res, body := do(t, "POST", base+"/api/chat/message", map[string]string{"sessionId": id, "message": "rename total to sum in main.go"})
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("post: %d %s", res.StatusCode, body)
	}
	var types []string
	var text strings.Builder
	var msgID string
	for {
		ev := next()
		typ := ev["type"].(string)
		types = append(types, typ)
		if typ == "message_start" {
			msgID = ev["message_id"].(string)
		} else if typ != "status" && ev["message_id"] != msgID {
			t.Errorf("%s carries message_id %v, want %s", typ, ev["message_id"], msgID)
		}
		if typ == "text" {
			text.WriteString(ev["content"].(string))
		}
		if typ == "tool_complete" && ev["tool"] == "replace_in_file" {
			r := ev["result"].(map[string]any)
			if r["path"] != "main.go" || !strings.HasPrefix(r["diff"].(string), "--- a/main.go\n+++ b/main.go\n@@ ") {
				t.Errorf("tool_complete result = %v", r)
			}
		}
		if typ == "message_end" {
			break
		}
	}
	want := "message_start status text text text text tool_start tool_complete tool_start tool_complete text text text text text message_end"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	if text.String() != "I'll rename `total` to `sum` in `main.go`.\n\nRenamed 3 occurrences of `total` to `sum` in `main.go`." {
		t.Errorf("text = %q", text.String())
	}
}

// TestLifecycleBusy409: a second message while the first turn runs is
// refused; the stall fault holds the first turn open deterministically.
func TestLifecycleBusy409(t *testing.T) {
	_, base := newTestServer(t, Options{Dialect: "lifecycle"})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	id, next := openSession(t, ctx, base)
	res, body := do(t, "POST", base+"/api/chat/message", map[string]string{"sessionId": id, "message": "hello"}, FaultHeader, "stall=60")
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("first post: %d %s", res.StatusCode, body)
	}
	if ev := next(); ev["type"] != "message_start" {
		t.Fatalf("first event of the turn: %v", ev)
	}
	res, body = do(t, "POST", base+"/api/chat/message", map[string]string{"sessionId": id, "message": "again"})
	if res.StatusCode != http.StatusConflict || string(body) != `{"error":"Session is currently processing a message"}` {
		t.Errorf("second post: %d %s", res.StatusCode, body)
	}
	res, body = do(t, "POST", base+"/api/chat/message", map[string]string{"sessionId": "nope", "message": "x"})
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: %d %s", res.StatusCode, body)
	}
	res, _ = do(t, "POST", base+"/api/chat/message", map[string]string{"sessionId": id})
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("no message: %d", res.StatusCode)
	}
	cancel() // closing the stream ends the stalled turn
}

func TestLifecyclePlotAndTable(t *testing.T) {
	_, base := newTestServer(t, Options{Dialect: "lifecycle"})
	id, next := openSession(t, t.Context(), base)
	for _, tc := range []struct{ msg, want string }{
		{"plot the file sizes", "plot_result thumbnail_update"},
		{"show a table of the files", "table_result"},
	} {
		if res, body := do(t, "POST", base+"/api/chat/message", map[string]string{"sessionId": id, "message": tc.msg}); res.StatusCode != http.StatusAccepted {
			t.Fatalf("post %q: %d %s", tc.msg, res.StatusCode, body)
		}
		var seen []string
		for {
			ev := next()
			typ := ev["type"].(string)
			if strings.HasSuffix(typ, "_result") || typ == "thumbnail_update" {
				seen = append(seen, typ)
			}
			if typ == "thumbnail_update" {
				th := ev["thumbnail"].(map[string]any)
				if th["status"] != "normal" || len(th["sparkline"].(map[string]any)["series"].([]any)) == 0 {
					t.Errorf("thumbnail = %v", th)
				}
			}
			if typ == "message_end" {
				break
			}
		}
		if got := strings.Join(seen, " "); got != tc.want {
			t.Errorf("%q: results %q, want %q", tc.msg, got, tc.want)
		}
	}
}

func TestLifecycleRoutesOnlyInLifecycle(t *testing.T) {
	_, base := newTestServer(t, Options{})
	if res, _ := do(t, "GET", base+"/api/chat/stream", nil); res.StatusCode != 404 {
		t.Errorf("session stream outside lifecycle: %d", res.StatusCode)
	}
}
