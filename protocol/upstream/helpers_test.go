package upstream

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smith-dev/smith/protocol"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixture is the demo workspace of the tests. A rename of total in
// main.go touches lines 5-6 and 18: two hunks.
var fixture = map[string]string{
	"main.go": `package main

import "fmt"

// total adds two numbers.
func total(a, b int) int {
	return a + b
}

func helper() string {
	return "héllo €"
}

func unused1() {}
func unused2() {}
func unused3() {}

func main() {
	fmt.Println(total(1, 2), helper())
}
`,
	"calc/calc.go": `package calc

// Sum returns the total of xs.
func Sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total
}
`,
	"README.md": `# Demo project

## Usage

Call total from main.

## Notes

Nothing else.
`,
}

func writeFixture(t testing.TB, dir string) {
	t.Helper()
	for rel, text := range fixture {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newTestServer serves a fresh fixture workspace over loopback HTTP.
func newTestServer(t testing.TB, opts Options) (*Server, string) {
	t.Helper()
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
		writeFixture(t, opts.Workspace)
	}
	if opts.PingInterval == 0 {
		opts.PingInterval = -1 // pings make golden bytes time-dependent
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		_ = s.Close()
		ts.Close()
	})
	return s, ts.URL
}

func do(t testing.TB, method, url string, body any, header ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return res, data
}

// chat posts an AgentSmithy chat request and returns the whole body.
func chat(t testing.TB, base, dialogID, message string, header ...string) (*http.Response, []byte) {
	t.Helper()
	body := map[string]any{"messages": []map[string]string{{"role": "user", "content": message}}, "stream": true}
	if dialogID != "" {
		body["dialog_id"] = dialogID
	}
	return do(t, http.MethodPost, base+"/api/chat", body, header...)
}

func decode[T any](t testing.TB, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return v
}

func readFile(t testing.TB, dir, rel string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// dialect is a shorthand for tests.
func dialect(s string) protocol.Dialect { return protocol.Dialect(s) }

// httpProbe makes one request without the test helpers' fatal errors.
type httpProbe struct{}

func (httpProbe) get(url string) (*http.Response, error) {
	res, err := http.Get(url)
	if err == nil {
		res.Body.Close()
	}
	return res, err
}
