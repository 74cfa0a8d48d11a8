package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func readStatus(t *testing.T, ws string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, ".agentsmithy", "status.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "{\n  \"server_status\": ") {
		t.Errorf("status.json is not indented like json.dump(indent=2): %s", data)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStartWritesStatusAndStops covers the listener life cycle and the
// discovery file the clients read.
func TestStartWritesStatusAndStops(t *testing.T) {
	ws := t.TempDir()
	writeFixture(t, ws)
	s, err := New(Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	base, err := s.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^http://127\.0\.0\.1:(\d+)$`).FindStringSubmatch(base)
	if m == nil {
		t.Fatalf("base URL %q", base)
	}
	st := readStatus(t, ws)
	if st["server_status"] != "ready" || st["port"].(float64) == 0 || int(st["server_pid"].(float64)) != os.Getpid() || st["scan_status"] != "idle" {
		t.Errorf("status.json while running = %v", st)
	}
	_, body := do(t, "GET", base+"/health", nil)
	if h := decode[map[string]any](t, body); h["server_status"] != "ready" || h["port"].(float64) != st["port"].(float64) {
		t.Errorf("health = %s", body)
	}
	if _, body := chat(t, base, "", "hello"); !strings.Contains(string(body), `"type": "done"`) {
		t.Errorf("chat over Start: %s", body)
	}

	// A second server on the same workspace from another live process is
	// refused: simulate it by claiming the parent's pid.
	other, err := New(Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	other.pid = os.Getppid()
	if _, err := other.Start(ctx, "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "already runs") {
		t.Errorf("second server on the workspace: %v", err)
	}

	cancel() // ctx ends the server like Close does
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st = readStatus(t, ws)
	if st["server_status"] != "stopped" || st["port"] != nil || st["server_pid"] != nil {
		t.Errorf("status.json after stop = %v", st)
	}
	if _, err := (&httpProbe{}).get(base + "/health"); err == nil {
		t.Errorf("server still answers after Close")
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Workspace: t.TempDir(), Protocol: "v9"},
		{Workspace: t.TempDir(), Dialect: "klingon"},
		{Workspace: t.TempDir(), ChunkSizes: []int{0}},
		{Workspace: filepath.Join(t.TempDir(), "missing")},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// TestCloseEndsStreamsWithShutdownError: a v2 stream in flight gets the
// real server's shutdown error and done when the server closes.
func TestCloseEndsStreamsWithShutdownError(t *testing.T) {
	s, base := newTestServer(t, Options{})
	req, err := http.NewRequest("POST", base+"/api/chat", strings.NewReader(`{"messages": [{"role": "user", "content": "hello"}], "dialog_id": "`+testDialog+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(FaultHeader, "stall=60")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if first, err := br.ReadString('\n'); err != nil || !strings.Contains(first, `"type": "user"`) {
		t.Fatalf("first line %q, %v", first, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	rest, _ := io.ReadAll(br)
	want := "\r\ndata: {\"dialog_id\": \"" + testDialog + "\", \"type\": \"error\", \"error\": \"Server is shutting down\"}\r\n\r\n" +
		"data: {\"dialog_id\": \"" + testDialog + "\", \"type\": \"done\", \"done\": true}\r\n\r\n"
	if string(rest) != want {
		t.Errorf("after close:\n got %q\nwant %q", rest, want)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if res, _ := do(t, "POST", base+"/api/chat", `{"messages": [{"role": "user", "content": "x"}]}`); res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("chat after Close: %d, want 503", res.StatusCode)
	}
}
