package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StatusFile is an AgentSmithy server's <workspace>/.agentsmithy/status.json
// (written atomically by the server). Fields the server removes on
// stop/error/crash are pointers.
type StatusFile struct {
	ServerStatus    string          `json:"server_status"` // starting|ready|stopping|stopped|error|crashed
	ServerPID       *int            `json:"server_pid"`
	Port            json.RawMessage `json:"port"` // a number; a numeric string is accepted too
	ServerStartedAt string          `json:"server_started_at,omitempty"`
	ServerUpdatedAt string          `json:"server_updated_at,omitempty"`
	ServerError     string          `json:"server_error,omitempty"`
	ScanStatus      string          `json:"scan_status,omitempty"`
}

// StatusPath is where an AgentSmithy server of workspace writes its state.
func StatusPath(workspace string) string {
	return filepath.Join(workspace, ".agentsmithy", "status.json")
}

// DiscoverError explains why no server was found. It matches ErrNoServer.
type DiscoverError struct {
	Path   string // the status file
	Reason string // what is wrong, and what to do
	Err    error  // the underlying error, if any
}

func (e *DiscoverError) Error() string { return e.Path + ": " + e.Reason }
func (e *DiscoverError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNoServer) true.
func (e *DiscoverError) Is(target error) bool { return target == ErrNoServer }

// Discover finds the AgentSmithy server of workspace from its status file
// and returns its base URL, "http://localhost:<port>". It succeeds only when
// server_status is "ready" and server_pid names a live process; anything
// else is a *DiscoverError (errors.Is(err, ErrNoServer)) saying what the
// file says. It reads one file and sends no request: call Health to check
// the server itself.
func Discover(workspace string) (string, error) {
	path := StatusPath(workspace)
	st, err := readStatus(path)
	if err != nil {
		return "", err
	}
	if st.ServerStatus != "ready" {
		return "", &DiscoverError{Path: path, Reason: notReadyReason(st)}
	}
	if st.ServerPID == nil || *st.ServerPID <= 0 {
		return "", &DiscoverError{Path: path, Reason: "the server status says ready but names no server_pid"}
	}
	if !processAlive(*st.ServerPID) {
		return "", &DiscoverError{Path: path,
			Reason: fmt.Sprintf("the server status says ready, but process %d is not running (the server crashed; start it again)", *st.ServerPID)}
	}
	port, err := parsePort(st.Port)
	if err != nil {
		return "", &DiscoverError{Path: path, Err: err, Reason: err.Error()}
	}
	return "http://localhost:" + strconv.Itoa(port), nil
}

// readStatus reads and decodes the status file at path. It is the one
// reader of that file: Discover judges what it says, and the workspace
// check of an upstream smith found by itself (servesWorkspace) compares
// its server_pid with the server's. The error is a *DiscoverError; its Err
// is an *fs.PathError when the file could not be read, the decoder's error
// when it is not JSON.
func readStatus(path string) (StatusFile, error) {
	var st StatusFile
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return st, &DiscoverError{Path: path, Err: err,
				Reason: "no AgentSmithy server has run in this workspace (start one with 'agentsmithy --workdir <workspace>', or configure the upstream URL)"}
		}
		return st, &DiscoverError{Path: path, Err: err, Reason: "cannot read the server status: " + err.Error()}
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, &DiscoverError{Path: path, Err: err, Reason: "the server status is not valid JSON: " + err.Error()}
	}
	return st, nil
}

func notReadyReason(st StatusFile) string {
	switch st.ServerStatus {
	case "":
		return "the server status has no server_status"
	case "starting":
		return "the server is still starting; try again in a moment"
	case "stopping", "stopped":
		return "the server is " + st.ServerStatus + "; start it again"
	case "error", "crashed":
		msg := "the server is in state " + st.ServerStatus
		if st.ServerError != "" {
			msg += ": " + st.ServerError
		}
		if st.ServerStatus == "error" {
			return msg + " (fix its configuration, then start it again)"
		}
		return msg + " (start it again)"
	default:
		return fmt.Sprintf("unknown server_status %q", st.ServerStatus)
	}
}

func parsePort(raw json.RawMessage) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, errors.New("the server status says ready but has no port")
	}
	s := string(raw)
	var str string
	if json.Unmarshal(raw, &str) == nil {
		s = strings.TrimSpace(str)
	}
	p, err := strconv.Atoi(s)
	if err != nil || p <= 0 || p > 65535 {
		return 0, fmt.Errorf("the server status has an invalid port %s", string(raw))
	}
	return p, nil
}
