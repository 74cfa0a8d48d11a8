package protocol

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatalf("running a short-lived process: %v", err)
	}
	return cmd.Process.Pid
}

func writeStatus(t *testing.T, content string) string {
	t.Helper()
	ws := t.TempDir()
	if content != "" {
		if err := os.MkdirAll(filepath.Join(ws, ".agentsmithy"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(StatusPath(ws), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func TestDiscover(t *testing.T) {
	live := strconv.Itoa(os.Getpid())
	dead := strconv.Itoa(deadPID(t))
	tests := []struct {
		name    string
		status  string // "" = no status file at all
		want    string
		wantErr string // substring of the error
	}{
		{name: "ready and alive", want: "http://localhost:8766",
			status: `{"server_status": "ready", "server_pid": ` + live + `, "port": 8766, "scan_status": "idle"}`},
		{name: "port as a string", want: "http://localhost:9000",
			status: `{"server_status": "ready", "server_pid": ` + live + `, "port": "9000"}`},
		{name: "no status file", wantErr: "no AgentSmithy server has run in this workspace"},
		{name: "malformed", status: `{"server_status": "ready",`, wantErr: "not valid JSON"},
		{name: "starting", status: `{"server_status": "starting", "server_pid": ` + live + `, "port": 8765}`, wantErr: "still starting"},
		{name: "stopped", status: `{"server_status": "stopped"}`, wantErr: "the server is stopped"},
		{name: "error state quotes server_error", status: `{"server_status": "error", "server_error": "Workload 'x' not found"}`, wantErr: "Workload 'x' not found"},
		{name: "crashed", status: `{"server_status": "crashed", "server_error": "Server process (pid 1) terminated unexpectedly"}`, wantErr: "crashed"},
		{name: "ready but pid dead", status: `{"server_status": "ready", "server_pid": ` + dead + `, "port": 8765}`, wantErr: "process " + dead + " is not running"},
		{name: "ready without pid", status: `{"server_status": "ready", "port": 8765}`, wantErr: "no server_pid"},
		{name: "ready without port", status: `{"server_status": "ready", "server_pid": ` + live + `}`, wantErr: "no port"},
		{name: "bad port", status: `{"server_status": "ready", "server_pid": ` + live + `, "port": 70000}`, wantErr: "invalid port 70000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := writeStatus(t, tt.status)
			got, err := Discover(ws)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("Discover = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Discover = %q, want an error containing %q", got, tt.wantErr)
			}
			if !errors.Is(err, ErrNoServer) {
				t.Errorf("error %v does not match ErrNoServer", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), StatusPath(ws)) {
				t.Errorf("error %q should name %s and say %q", err, StatusPath(ws), tt.wantErr)
			}
		})
	}
}
