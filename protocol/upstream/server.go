package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/smith-dev/smith/protocol"
)

// Protocol versions of the AgentSmithy dialect (agentsmithy.md section 7).
const (
	ProtocolV2 = "v2" // current: user event with checkpoint, file_edit with the difflib diff
	ProtocolV1 = "v1" // v1.1: no user event, file_edit carries diff and checkpoint
	ProtocolV0 = "v0" // legacy: classification, untyped content, tool_result, diff; writes nothing
)

// Default ping intervals of the real servers.
const (
	DefaultPingInterval          = 15 * time.Second // sse-starlette
	DefaultLifecyclePingInterval = 30 * time.Second // the lifecycle seed's keepalive
)

// Options configure a Server. The zero value serves the current
// directory as AgentSmithy v2.
type Options struct {
	// Workspace is the project the demo agent works on ("" = current
	// directory). The server keeps its state in Workspace/.agentsmithy/.
	Workspace string
	// Protocol is the AgentSmithy version: ProtocolV2 (default), V1 or V0.
	Protocol string
	// Dialect picks the payload contract; "" and DialectAgentSmithy serve
	// AgentSmithy in Protocol's version.
	Dialect protocol.Dialect
	// PingInterval is the keep-alive comment interval of AgentSmithy and
	// lifecycle streams: 0 means the real server's default, < 0 disables.
	PingInterval time.Duration
	// DeltaDelay pauses before each text or reasoning delta, so a human
	// sees the answer stream; 0 sends as fast as possible.
	DeltaDelay time.Duration

	// Replay, when set, is a recorded response body (a .sse file's bytes)
	// served byte for byte to every chat request instead of the agent.
	Replay []byte
	// ChunkSizes are the write sizes of the replay, cycled; each write is
	// flushed. Empty means one write.
	ChunkSizes []int
	// ReplayHeader replaces or adds response headers of a replay
	// (Content-Type defaults to text/event-stream; charset=utf-8).
	ReplayHeader http.Header

	// Faults are injected into every chat request (FaultNames); a request
	// adds its own with the X-Smith-Fault header.
	Faults []Fault

	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
}

// Server is the embedded upstream. It is safe for concurrent use. Use
// Handler to mount it (httptest.NewServer(s.Handler())) or Start/Close to
// run it on its own listener; Close also ends streams in flight.
type Server struct {
	opts  Options
	ws    *workspace
	store *checkpointStore
	log   *slog.Logger
	pid   int

	mu       sync.Mutex // guards everything below and serialises workspace edits
	dialogs  map[string]*dialog
	current  string
	sessions map[string]*lcSession
	port     int

	closeOnce sync.Once
	closeErr  error

	shutdown    context.Context // cancelled by Close: streams end
	stopStreams context.CancelFunc
	closing     bool           // set by Close (under mu): no new stream starts
	streams     sync.WaitGroup // streams in flight; Close waits for them
	srv         *http.Server
	startedAt   time.Time
}

// New checks the options and prepares a server; it serves nothing until
// Handler is mounted or Start is called.
func New(opts Options) (*Server, error) {
	if opts.Workspace == "" {
		opts.Workspace = "."
	}
	switch opts.Protocol {
	case "":
		opts.Protocol = ProtocolV2
	case ProtocolV2, ProtocolV1, ProtocolV0:
	default:
		return nil, fmt.Errorf("unknown protocol %q: use v2, v1 or v0", opts.Protocol)
	}
	d, err := protocol.ParseDialect(string(opts.Dialect))
	if err != nil {
		return nil, err
	}
	if d == protocol.DialectAuto {
		d = protocol.DialectAgentSmithy
	}
	opts.Dialect = d
	for _, n := range opts.ChunkSizes {
		if n <= 0 {
			return nil, fmt.Errorf("chunk sizes must be positive, got %d", n)
		}
	}
	for _, f := range opts.Faults {
		if err := f.validate(); err != nil {
			return nil, err
		}
	}
	ws, err := newWorkspace(opts.Workspace)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		opts: opts, ws: ws, store: &checkpointStore{ws: ws}, log: log, pid: os.Getpid(),
		dialogs: map[string]*dialog{}, sessions: map[string]*lcSession{},
		shutdown: ctx, stopStreams: cancel, startedAt: time.Now(),
	}, nil
}

// Workspace is the absolute workspace directory.
func (s *Server) Workspace() string { return s.ws.root }

// Handler serves the whole API to local clients only (localOnly: no
// request a web page could make). Streams end when the request's context
// does or when Close is called.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("POST /api/chat", s.handleChat)
	mux.HandleFunc("GET /api/chat/stream", s.handleSessionStream)
	mux.HandleFunc("POST /api/chat/message", s.handleSessionMessage)
	if s.opts.Dialect == protocol.DialectAgentSmithy {
		s.handleREST(mux)
	}
	// FastAPI answers unknown paths and wrong methods with JSON details;
	// the catch-all tells the two apart by asking the mux about the other
	// methods.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "/" && m != r.Method {
				writeJSON(w, http.StatusMethodNotAllowed, detail("Method Not Allowed"))
				return
			}
		}
		writeJSON(w, http.StatusNotFound, detail("Not Found"))
	})
	return s.logRequests(localOnly(mux))
}

// handleREST mounts AgentSmithy's REST API (dialogs, history, sessions and
// checkpoints). Only the AgentSmithy dialect has it: the servers of the
// other contracts (rag, textbook, oracle, lifecycle) have no such
// endpoints, so a client must find none here either (smith then keeps its
// own dialogs and says that the upstream has no session API).
func (s *Server) handleREST(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/dialogs", s.handleListDialogs)
	mux.HandleFunc("POST /api/dialogs", s.handleCreateDialog)
	mux.HandleFunc("GET /api/dialogs/current", s.handleGetCurrent)
	mux.HandleFunc("PATCH /api/dialogs/current", s.handleSetCurrent)
	mux.HandleFunc("GET /api/dialogs/{id}", s.handleGetDialog)
	mux.HandleFunc("PATCH /api/dialogs/{id}", s.handleRenameDialog)
	mux.HandleFunc("DELETE /api/dialogs/{id}", s.handleDeleteDialog)
	mux.HandleFunc("GET /api/dialogs/{id}/history", s.handleHistory)
	mux.HandleFunc("GET /api/dialogs/{id}/session", s.handleSession)
	mux.HandleFunc("GET /api/dialogs/{id}/checkpoints", s.handleCheckpoints)
	mux.HandleFunc("POST /api/dialogs/{id}/restore", s.handleRestore)
	mux.HandleFunc("POST /api/dialogs/{id}/approve", s.handleApprove)
	mux.HandleFunc("POST /api/dialogs/{id}/reset", s.handleReset)
}

// Start listens on addr (host:port; port 0 picks a free one), writes
// .agentsmithy/status.json as "ready" and serves until ctx ends or Close
// is called. It returns the base URL, e.g. http://127.0.0.1:8765.
func (s *Server) Start(ctx context.Context, addr string) (string, error) {
	if err := s.checkSingleton(); err != nil {
		return "", err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	tcp := ln.Addr().(*net.TCPAddr)
	s.mu.Lock()
	s.port = tcp.Port
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	srv := s.srv
	s.mu.Unlock()
	if err := s.writeStatus("ready"); err != nil {
		ln.Close()
		return "", err
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", "err", err)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.shutdown.Done():
		}
	}()
	host := tcp.IP.String()
	if tcp.IP.To4() == nil {
		host = "[" + host + "]"
	}
	return "http://" + host + ":" + strconv.Itoa(tcp.Port), nil
}

// Close ends streams in flight (AgentSmithy streams get the real server's
// "Server is shutting down" error and done), stops the listener and marks
// status.json "stopped". It is safe to call more than once and from
// several goroutines: every call returns once the server has stopped (Start
// also closes it when its context ends, racing with the caller's Close).
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Server) close() error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.stopStreams()
	s.streams.Wait()
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	if serr := s.writeStatus("stopped"); err == nil {
		err = serr
	}
	return err
}

// beginStream registers a stream so that Close waits for it; it answers
// 503 and reports false once Close has begun.
func (s *Server) beginStream(w http.ResponseWriter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		writeJSON(w, http.StatusServiceUnavailable, detail("Server is shutting down"))
		return false
	}
	s.streams.Add(1)
	return true
}

// serverStatus is .agentsmithy/status.json (agentsmithy.md section 1).
type serverStatus struct {
	ServerStatus    string `json:"server_status"`
	ServerPID       int    `json:"server_pid,omitempty"`
	Port            int    `json:"port,omitempty"`
	ServerStartedAt string `json:"server_started_at"`
	ServerUpdatedAt string `json:"server_updated_at"`
	ScanStatus      string `json:"scan_status"`
}

func (s *Server) statusPath() string { return s.store.dir("status.json") }

func (s *Server) writeStatus(state string) error {
	st := serverStatus{
		ServerStatus:    state,
		ServerStartedAt: isoTime(s.startedAt),
		ServerUpdatedAt: isoTime(time.Now()),
		ScanStatus:      "idle",
	}
	if state == "ready" || state == "starting" {
		s.mu.Lock()
		st.ServerPID, st.Port = s.pid, s.port
		s.mu.Unlock()
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.statusPath(), data); err != nil {
		return fmt.Errorf("write %s: %w", s.statusPath(), err)
	}
	return nil
}

// checkSingleton refuses to start when another live process serves the
// workspace, like the real server's singleton rule.
func (s *Server) checkSingleton() error {
	data, err := os.ReadFile(s.statusPath())
	if err != nil {
		return nil
	}
	var st serverStatus
	if json.Unmarshal(data, &st) != nil || st.ServerPID == 0 || st.ServerPID == s.pid {
		return nil
	}
	switch st.ServerStatus {
	case "starting", "ready", "stopping":
	default:
		return nil
	}
	if processAlive(st.ServerPID) {
		return fmt.Errorf("a server already runs for %s at port %d (pid %d, status %s): stop it or use another --workspace", s.ws.root, st.Port, st.ServerPID, st.ServerStatus)
	}
	return nil
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}

// isoTime is the real server's timestamp: ISO-8601 UTC, microseconds, "Z".
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// health is GET /health (nulls present).
type health struct {
	Status       string    `json:"status"`
	Service      string    `json:"service"`
	ServerStatus *string   `json:"server_status"`
	Port         *int      `json:"port"`
	PID          int       `json:"pid"`
	ServerError  *string   `json:"server_error"`
	ConfigValid  *bool     `json:"config_valid"`
	ConfigErrors *[]string `json:"config_errors"`
	// Workspace is a smith extension (the real server does not report
	// it): a client that found this server by itself checks it serves its
	// workspace before it sends anything (protocol.ClientConfig.Workspace).
	Workspace string `json:"workspace"`
	// Protocol is a smith extension too: the AgentSmithy protocol served
	// (v2, v1: the server writes files itself; v0: it only proposes), or
	// the dialect for the other contracts. smith chat --dry-run reads it.
	Protocol string `json:"protocol"`
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	h := health{Status: "ok", Service: "agentsmithy-server", PID: s.pid, Workspace: s.ws.root, Protocol: s.opts.Protocol}
	if s.opts.Dialect != protocol.DialectAgentSmithy {
		h.Protocol = string(s.opts.Dialect)
	}
	valid := true
	h.ConfigValid = &valid
	if data, err := os.ReadFile(s.statusPath()); err == nil {
		var st serverStatus
		if err := json.Unmarshal(data, &st); err != nil {
			unknown, msg := "unknown", "Failed to read status: "+err.Error()
			h.ServerStatus, h.ServerError = &unknown, &msg
		} else {
			h.ServerStatus = &st.ServerStatus
			if st.Port != 0 {
				h.Port = &st.Port
			}
		}
	}
	writeJSON(w, http.StatusOK, h)
}

// writeJSON answers with a JSON body in the real server's style
// (FastAPI's compact JSONResponse).
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := marshal(styleNode, v)
	if err != nil {
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

type detailBody struct {
	Detail any `json:"detail"`
}

func detail(msg string) detailBody { return detailBody{msg} }

// internalError is FastAPI's answer to an uncaught exception.
func internalError(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write([]byte("Internal Server Error"))
}

// statusRecorder remembers the status code for the request log.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.code, "duration", time.Since(start).Round(time.Microsecond))
	})
}
