package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/smith-dev/smith/protocol/upstream"
)

// TestUpstreamHelpDocumentsPhrases: every phrase of the demo agent and
// every fault name is in --help, with an example.
func TestUpstreamHelpDocumentsPhrases(t *testing.T) {
	var out bytes.Buffer
	s := &IOStreams{In: strings.NewReader(""), Out: &out, Err: &out, Getenv: func(string) string { return "" }}
	if code := run([]string{"upstream", "--help"}, s); code != ExitOK {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	help := out.String()
	for _, p := range upstream.Phrases() {
		if !strings.Contains(help, p.Pattern) || !strings.Contains(help, "e.g. "+p.Example) {
			t.Errorf("--help lacks phrase %q with its example", p.Pattern)
		}
	}
	for _, f := range upstream.FaultNames() {
		if !strings.Contains(help, f.Name) {
			t.Errorf("--help lacks fault %q", f.Name)
		}
	}
}

func TestUpstreamFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"upstream", "--protocol", "v7"},
		{"upstream", "--dialect", "nope"},
		{"upstream", "--dialect", "rag", "--protocol", "v0"},
		{"upstream", "--fault", "explode"},
		{"upstream", "--chunk-sizes", "1,2"},
		{"upstream", "--replay", "missing.sse"},
		{"upstream", "--replay", "upstream_test.go", "--chunk-sizes", "1,x"},
		{"upstream", "--replay", "upstream_test.go", "--header", "novalue"},
		{"upstream", "--addr", "localhost"},
		{"upstream", "--delay", "-5ms"},
	} {
		var out bytes.Buffer
		s := &IOStreams{In: strings.NewReader(""), Out: &out, Err: &out, Getenv: func(string) string { return "" }}
		if code := run(append(args, "--workspace", t.TempDir()), s); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitUsage, out.String())
		}
	}
}

// TestHelpCurlExamplesSendJSON: the server refuses a POST body that is
// not application/json (curl -d sends a form), so a curl example in
// --help without that header fails as written.
func TestHelpCurlExamplesSendJSON(t *testing.T) {
	for _, cmd := range []string{"upstream", "replay"} {
		var out bytes.Buffer
		s := &IOStreams{In: strings.NewReader(""), Out: &out, Err: &out, Getenv: func(string) string { return "" }}
		if code := run([]string{cmd, "--help"}, s); code != ExitOK {
			t.Fatalf("smith %s --help: exit %d: %s", cmd, code, out.String())
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.Contains(line, "curl ") && strings.Contains(line, " -d ") && !strings.Contains(line, "-H 'Content-Type: application/json'") {
				t.Errorf("smith %s --help: a curl example sends no JSON content type, which the server refuses:\n%s", cmd, line)
			}
		}
	}
}

// TestUpstreamStartErrorsSayWhatToDo: a --replay file that cannot be
// read, and an address smith cannot listen on, are named with the way
// out, without Go's "open FILE:" or "listen tcp ADDR: bind:" wording.
func TestUpstreamStartErrorsSayWhatToDo(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--replay", "missing.sse"}, ExitUsage,
			"smith: cannot read --replay missing.sse: no such file or directory (give a recorded SSE response body, as smith replay takes)\n"},
		{[]string{"--replay", "."}, ExitUsage,
			"smith: cannot read --replay .: is a directory (give a recorded SSE response body, as smith replay takes)\n"},
		{[]string{"--addr", addr}, ExitFailure,
			"smith: cannot listen on " + addr + ": address already in use; give --addr a free local address (127.0.0.1:0 picks a free port)\n"},
	} {
		var out bytes.Buffer
		s := &IOStreams{In: strings.NewReader(""), Out: &out, Err: &out, Getenv: func(string) string { return "" }}
		if code := run(append([]string{"upstream", "--workspace", t.TempDir()}, tt.args...), s); code != tt.code || out.String() != tt.want {
			t.Errorf("smith upstream %v: exit %d, said\n%s\nwant exit %d, saying\n%s", tt.args, code, out.String(), tt.code, tt.want)
		}
	}
}

// TestUpstreamProcess runs the real binary: base URL first on stdout,
// request log on stderr, status.json for discovery, clean stop on SIGTERM.
func TestUpstreamProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGTERM")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary acts as smith when called by that name (TestMain).
	bin := filepath.Join(t.TempDir(), "smith")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc total() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "upstream", "--addr", "127.0.0.1:0", "--workspace", ws, "--delay", "0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	br := bufio.NewReader(stdout)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v (stderr: %s)", err, stderr.String())
	}
	base := strings.TrimSpace(line)
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(base) {
		t.Fatalf("first line %q is not the base URL", line)
	}
	res, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(`{"messages": [{"role": "user", "content": "rename total to sum in main.go"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), `"type": "file_edit"`) {
		t.Errorf("chat answered %s", body)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "main.go")); !strings.Contains(string(got), "func sum()") {
		t.Errorf("main.go not edited: %s", got)
	}
	status := func() map[string]any {
		data, err := os.ReadFile(filepath.Join(ws, ".agentsmithy", "status.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if st := status(); st["server_status"] != "ready" || int(st["server_pid"].(float64)) != cmd.Process.Pid {
		t.Errorf("status.json while running: %v", st)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(br)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v (stderr: %s)", err, stderr.String())
	}
	if len(rest) != 0 {
		t.Errorf("more on stdout than the base URL: %q", rest)
	}
	if st := status(); st["server_status"] != "stopped" {
		t.Errorf("status.json after stop: %v", st)
	}
	if !strings.Contains(stderr.String(), "path=/api/chat status=200") {
		t.Errorf("stderr has no request log:\n%s", stderr.String())
	}
}
