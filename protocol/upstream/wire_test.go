package upstream

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const testDialog = "0123456789abcdef0123456789abcdef"

// TestFirstEventsExactBytes pins the framing, key order, separators and
// raw UTF-8 of a v2 stream against hand-written bytes.
func TestFirstEventsExactBytes(t *testing.T) {
	_, base := newTestServer(t, Options{})
	res, body := chat(t, base, testDialog, "explain héllo € please")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	for k, want := range map[string]string{
		"Content-Type":      "text/event-stream; charset=utf-8",
		"Cache-Control":     "no-cache",
		"X-Accel-Buffering": "no",
		"X-Request-Id":      "agentsmithy",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if res.Header.Get("Content-Length") != "" {
		t.Errorf("a stream must not have a Content-Length")
	}
	events := strings.SplitAfter(string(body), "\r\n\r\n")
	user := regexp.MustCompile(`^data: \{"dialog_id": "` + testDialog + `", "type": "user", "content": "explain héllo € please", "checkpoint": "[0-9a-f]{40}", "session": "session_1"\}\r\n\r\n$`)
	if !user.MatchString(events[0]) {
		t.Errorf("user event = %q", events[0])
	}
	want := []string{
		`data: {"dialog_id": "` + testDialog + `", "type": "reasoning_start"}` + "\r\n\r\n",
		`data: {"dialog_id": "` + testDialog + `", "type": "reasoning", "content": "The request "}` + "\r\n\r\n",
	}
	if diff := cmp.Diff(want, events[1:3]); diff != "" {
		t.Errorf("events 1-2 (-want +got):\n%s", diff)
	}
	if last := events[len(events)-2]; last != `data: {"dialog_id": "`+testDialog+`", "type": "done", "done": true}`+"\r\n\r\n" {
		t.Errorf("last event = %q", last)
	}
	if events[len(events)-1] != "" {
		t.Errorf("bytes after done: %q", events[len(events)-1])
	}
}

// wireCases are the golden streams: testdata/wire/NAME.sse. The workspace
// path is replaced by $WORK and random ids by placeholders.
var wireCases = []struct {
	name    string
	opts    Options
	message string
}{
	{"v2-rename-two-hunks", Options{}, "rename total to sum in main.go"},
	{"v2-rename-everywhere", Options{}, "rename total to sum everywhere"},
	{"v2-comment", Options{}, "add a comment to helper in main.go"},
	{"v2-create", Options{}, `create notes/todo.md with "# Todo\n- ship it €"`},
	{"v2-delete", Options{}, "delete README.md"},
	{"v2-help", Options{}, "where is helper used?"},
	{"v2-missing-file", Options{}, "rename a to b in nope.go"},
	{"v1-rename", Options{Protocol: ProtocolV1}, "rename total to sum in main.go"},
	{"v0-rename", Options{Protocol: ProtocolV0}, "rename total to sum in main.go"},
	{"v0-create-ascii", Options{Protocol: ProtocolV0}, "create x.txt with héllo 🚀"},
	{"rag-rename", Options{Dialect: "rag"}, "rename total to sum in main.go"},
	{"textbook-rename", Options{Dialect: "textbook"}, "rename total to sum in main.go"},
	{"oracle-rename", Options{Dialect: "oracle"}, "rename total to sum in main.go"},
	{"oracle-long-task", Options{Dialect: "oracle"}, "this is a long task: explain helper"},
	{"v2-fail", Options{}, "fail with quota exceeded"},
	{"v0-fail", Options{Protocol: ProtocolV0}, "fail with quota exceeded"},
	{"textbook-fail", Options{Dialect: "textbook"}, "fail with quota exceeded"},
}

func TestWireGolden(t *testing.T) {
	for _, tc := range wireCases {
		t.Run(tc.name, func(t *testing.T) {
			s, base := newTestServer(t, tc.opts)
			body := map[string]any{
				"messages": []map[string]string{{"role": "user", "content": tc.message}},
				"message":  tc.message, "dialog_id": testDialog, "context_id": "ctx1",
			}
			res, got := do(t, http.MethodPost, base+"/api/chat", body)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, got)
			}
			got = bytes.ReplaceAll(got, []byte(s.Workspace()), []byte("$WORK"))
			golden := filepath.Join("testdata", "wire", tc.name+".sse")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("stream differs from %s (-want +got):\n%s", golden, diff)
			}
			checkFraming(t, tc.opts, got)
		})
	}
}

// checkFraming asserts each dialect's framing rules on a whole body.
func checkFraming(t *testing.T, opts Options, body []byte) {
	t.Helper()
	text := string(body)
	switch {
	case opts.Dialect == "" && opts.Protocol != ProtocolV0:
		for _, ev := range strings.SplitAfter(strings.TrimSuffix(text, "\r\n\r\n"), "\r\n\r\n") {
			if !strings.HasPrefix(ev, `data: {"dialog_id": "`+testDialog+`", "type": "`) {
				t.Errorf("event without dialog_id first: %q", ev)
			}
		}
	case opts.Protocol == ProtocolV0:
		if strings.ContainsFunc(text, func(r rune) bool { return r > 127 }) {
			t.Errorf("v0 body has raw non-ASCII bytes; json.dumps escapes them")
		}
		if strings.Contains(text, "dialog_id") {
			t.Errorf("v0 events carry no dialog_id")
		}
	default:
		if strings.Contains(text, "\r") {
			t.Errorf("%s framing must use LF only", opts.Dialect)
		}
		if !strings.HasSuffix(text, "}\n\n") {
			t.Errorf("%s body does not end with a complete event", opts.Dialect)
		}
	}
}

// TestV2WritesFileV0DoesNot checks who applies: v1/v2 write the workspace,
// v0 and the other dialects leave it alone.
func TestV2WritesFileV0DoesNot(t *testing.T) {
	for _, tc := range []struct {
		opts   Options
		writes bool
	}{
		{Options{}, true}, {Options{Protocol: ProtocolV1}, true}, {Options{Protocol: ProtocolV0}, false},
		{Options{Dialect: "rag"}, false}, {Options{Dialect: "textbook"}, false}, {Options{Dialect: "oracle"}, false},
	} {
		s, base := newTestServer(t, tc.opts)
		do(t, http.MethodPost, base+"/api/chat", map[string]any{"messages": []map[string]string{{"role": "user", "content": "rename total to sum in main.go"}}, "message": "rename total to sum in main.go"})
		got, _ := readFile(t, s.Workspace(), "main.go")
		if changed := got != fixture["main.go"]; changed != tc.writes {
			t.Errorf("%s/%s: main.go changed = %v, want %v", tc.opts.Dialect, tc.opts.Protocol, changed, tc.writes)
		}
		if tc.writes && strings.Contains(got, "total") {
			t.Errorf("v1/v2 left total in main.go:\n%s", got)
		}
	}
}

// TestPings checks the keep-alive comment's exact shape between events.
func TestPings(t *testing.T) {
	_, base := newTestServer(t, Options{PingInterval: 2 * time.Millisecond, DeltaDelay: 10 * time.Millisecond})
	_, body := chat(t, base, "", "rename total to sum in main.go")
	ping := regexp.MustCompile(`(?m)^: ping - \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?\+00:00\r\n\r\n`)
	if !ping.Match(body) {
		t.Fatalf("no ping comment in %d bytes", len(body))
	}
	// Pings sit between events, never inside one.
	for _, block := range strings.Split(string(body), "\r\n\r\n") {
		if strings.Contains(block, ": ping") && !strings.HasPrefix(block, ": ping - ") {
			t.Errorf("ping inside an event: %q", block)
		}
	}
}
