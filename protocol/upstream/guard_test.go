package upstream

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefusesWhatABrowserPageCouldSend: a cross-origin "simple" POST
// (text/plain), a DNS-rebinding Host, a foreign Origin with a JSON body
// and a form post are all refused before the agent runs: the file the
// message asks for is not written. The same message from a local client
// writes it, so the refusals are what kept it out.
func TestRefusesWhatABrowserPageCouldSend(t *testing.T) {
	s, base := newTestServer(t, Options{})
	ws := s.Workspace()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"messages": [{"role": "user", "content": "create pwned.txt with hi"}], "stream": true}`
	post := func(header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", base+"/api/chat", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	_, port, _ := strings.Cut(u.Host, ":")
	for _, tc := range []struct {
		name   string
		header map[string]string
		code   int
		says   string
	}{
		{"cross-origin simple request", map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403, "Origin"},
		{"text/plain without Origin", map[string]string{"Content-Type": "text/plain"}, 415, "application/json"},
		{"form post", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "application/json"},
		{"no Content-Type with a body", map[string]string{}, 415, "application/json"},
		{"rebinding Host", map[string]string{"Content-Type": "application/json", "Host": "evil.example:" + port}, 403, "Host"},
		{"rebinding Host and Origin", map[string]string{"Content-Type": "application/json", "Host": "evil.example:" + port, "Origin": "http://evil.example:" + port}, 403, "Host"},
		{"foreign Origin, JSON", map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 403, "Origin"},
		{"null Origin", map[string]string{"Content-Type": "application/json", "Origin": "null"}, 403, "Origin"},
		{"loopback on another port", map[string]string{"Content-Type": "application/json", "Host": "127.0.0.1:1"}, 403, "port"},
	} {
		code, got := post(tc.header)
		if code != tc.code || !strings.Contains(got, tc.says) {
			t.Errorf("%s: %d %s, want %d naming %s", tc.name, code, got, tc.code, tc.says)
		}
		if _, err := os.Stat(filepath.Join(ws, "pwned.txt")); err == nil {
			t.Fatalf("%s: the file was written", tc.name)
		}
	}

	// Preflight of a cross-origin JSON POST: never allowed.
	req, _ := http.NewRequest("OPTIONS", base+"/api/chat", nil)
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight allowed: %v", res.Header)
	}

	// Local clients: localhost, a loopback Origin, JSON.
	for _, h := range []map[string]string{
		{"Content-Type": "application/json; charset=utf-8", "Host": "localhost:" + port},
		{"Content-Type": "application/json", "Origin": "http://127.0.0.1:5173"},
	} {
		if code, got := post(h); code != 200 {
			t.Errorf("local request %v: %d %s", h, code, got)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "pwned.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("the local request did not write the file: %q, %v", b, err)
	}
	// A POST without a body and without Content-Type (the VS Code
	// client's reset and approve) still works.
	req, _ = http.NewRequest("POST", base+"/api/dialogs/nope/approve", nil)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == 403 || res.StatusCode == 415 {
		t.Errorf("bodiless POST refused: %d", res.StatusCode)
	}
}
