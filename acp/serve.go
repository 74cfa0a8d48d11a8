package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/smith-dev/smith/daemon"
)

// ProtocolVersion is the ACP version smith speaks: v1, the stable one. (v2
// is a draft that drops session/load and fs/*, both of which smith uses.)
const ProtocolVersion = sdk.ProtocolVersionNumber

// maxLine bounds one inbound message, as the SDK's own reader does (10 MiB):
// a longer line is answered with an error and skipped, not buffered.
const maxLine = 10 << 20

// Options configure Serve.
type Options struct {
	// Workspace is the folder smith works on. Empty: the cwd of the first
	// session/new (or session/load) becomes it. Either way every later
	// session's cwd must be inside it.
	Workspace string
	// Resolve builds the engine's configuration for a workspace (upstream,
	// dialect, state folder, limits: the command's flags over the config
	// layers). Workspace in the result is overwritten.
	Resolve func(ctx context.Context, workspace string) (daemon.Config, error)
	// Logger gets smith's logs; nothing is ever written to stdout but
	// protocol messages. Default: discard.
	Logger *slog.Logger
	// Version is smith's version, sent as agentInfo.version.
	Version string
	// Join, when not nil, reaches the smith serve that holds a
	// workspace's engine (its state is locked), so that smith acp shares
	// that engine instead of failing: the same dialogs, changes and undo
	// journal as the serve's editor. smith acp then writes nothing through
	// the client's fs/* methods: the holder writes (docs/acp.md).
	Join func(ctx context.Context, cfg daemon.Config) (Joined, error)
	// Refuse, when not nil, is why smith cannot serve at all (a state
	// folder it cannot use, found at start-up): initialize is answered
	// with it as an error, since that answer is what an editor shows,
	// and Serve returns it once that answer is out (or in has ended). No
	// engine is started.
	Refuse error
}

// Serve speaks ACP on in/out (one JSON-RPC message per line) until in ends
// or ctx is cancelled, then cancels the running turns and closes the engine.
func Serve(ctx context.Context, in io.Reader, out io.Writer, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Resolve == nil {
		return errors.New("acp: Options.Resolve is required")
	}
	w := &lineWriter{w: out}
	if o.Refuse != nil {
		return refuse(in, w, log, o.Refuse)
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := newAgent(ctx, o, log, w)
	conn := sdk.NewAgentSideConnection(a, w, pr)
	conn.SetLogger(log.With("component", "acp-sdk"))
	a.conn = conn
	go func() {
		err := filterLines(in, pw, w, log, a.reading)
		pw.CloseWithError(err)
	}()
	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	cancel()
	return a.close()
}

// refuseGrace bounds how long refuse waits, after answering initialize,
// for the client to close its end: long enough for it to read the answer,
// short enough that a process nobody stops still ends.
const refuseGrace = 5 * time.Second

// refuse answers every request of in with err (an internal error), and
// returns err once initialize has been answered and the client has closed
// its end (or refuseGrace has passed), or in has ended: smith serves
// nothing, but the client shows the answer to its initialize, where a
// process that just exits is "server shut down" with the reason in a log.
// Exiting right after the answer would race the client, which may see the
// exit first. The lines are answered here rather than by the SDK, which
// drops the answers still being made when the input ends (a client that
// writes initialize and closes stdin would get nothing).
func refuse(in io.Reader, w *lineWriter, log *slog.Logger, err error) error {
	answered, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		r := bufio.NewReaderSize(in, 64<<10)
		initialized := false
		for n := 1; ; n++ {
			line, rerr := readLine(r)
			if len(line) > 0 {
				var m struct {
					ID     *json.RawMessage `json:"id"`
					Method string           `json:"method"`
				}
				bad := &rpcError{JSONRPC: "2.0", Error: sdk.RequestError{Code: -32603, Message: err.Error()}}
				if method, msg := checkLine(line, n); msg != nil {
					bad = msg
				} else if json.Unmarshal(line, &m) == nil && m.ID != nil && method != "" {
					bad.ID = m.ID
				} else {
					bad = nil // a notification or a response: nothing to answer
				}
				if bad != nil {
					if werr := w.writeJSON(bad); werr != nil {
						log.Debug("answering the client", "err", werr)
						return
					}
				}
				if bad != nil && m.Method == "initialize" && !initialized {
					initialized = true
					close(answered)
				}
			}
			if rerr != nil {
				if !errors.Is(rerr, io.EOF) {
					log.Debug("reading the client", "err", rerr)
				}
				return
			}
		}
	}()
	select {
	case <-ended:
		return err
	case <-answered:
	}
	t := time.NewTimer(refuseGrace)
	defer t.Stop()
	select {
	case <-ended:
	case <-t.C:
	}
	return err
}

// filterLines passes the well-formed messages of in to the SDK and answers
// the rest itself: the SDK only logs a line that is not JSON, but JSON-RPC
// wants a Parse error (-32700) sent back, and a client that sent garbage
// should learn it at once rather than wait for an answer that never comes.
// The connection stays up either way.
func filterLines(in io.Reader, sdkIn io.Writer, w *lineWriter, log *slog.Logger, onMessage func(method string, line []byte) []byte) error {
	r := bufio.NewReaderSize(in, 64<<10)
	n := 0
	for {
		line, err := readLine(r)
		if len(line) > 0 {
			n++
			if method, msg := checkLine(line, n); msg != nil {
				log.Warn("bad input line", "line", n, "err", msg.Error.Message)
				if werr := w.writeJSON(msg); werr != nil {
					return werr
				}
			} else {
				line = onMessage(method, line)
				if _, werr := sdkIn.Write(append(line, '\n')); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// readLine returns the next line without its end; a line longer than
// maxLine is consumed and returned truncated to maxLine+1 bytes so that
// checkLine reports it.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf) <= maxLine {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSpace(buf), err
	}
}

// rpcError is a JSON-RPC error response with a null id (the request's id
// could not be read).
type rpcError struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id"`
	Error   sdk.RequestError `json:"error"`
}

// checkLine returns the error response for a line the SDK cannot handle,
// or nil and the message's method to pass the line on.
func checkLine(line []byte, n int) (string, *rpcError) {
	bad := func(code int, msg string) *rpcError {
		return &rpcError{JSONRPC: "2.0", Error: sdk.RequestError{Code: code, Message: msg}}
	}
	if len(line) > maxLine {
		return "", bad(-32700, fmt.Sprintf("Parse error: input line %d is longer than %d bytes; it was skipped", n, maxLine))
	}
	if !json.Valid(line) {
		return "", bad(-32700, fmt.Sprintf("Parse error: input line %d is not valid JSON (ACP over stdio is one JSON-RPC message per line, without Content-Length headers); it was skipped", n))
	}
	var m struct {
		JSONRPC string           `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Method  string           `json:"method"`
		Result  json.RawMessage  `json:"result"`
		Error   json.RawMessage  `json:"error"`
	}
	if line[0] != '{' || json.Unmarshal(line, &m) != nil {
		return "", bad(-32600, fmt.Sprintf("Invalid request: input line %d is not a JSON-RPC message object (batches are not supported); it was skipped", n))
	}
	if m.Method == "" && m.ID == nil {
		return "", bad(-32600, fmt.Sprintf("Invalid request: input line %d has neither a method nor an id; it was skipped", n))
	}
	if m.JSONRPC != "2.0" {
		e := bad(-32600, fmt.Sprintf("Invalid request: input line %d lacks \"jsonrpc\": \"2.0\"; it was skipped", n))
		if m.Method != "" {
			e.ID = m.ID
		}
		return "", e
	}
	return m.Method, nil
}

// lineWriter serialises whole lines to the client: the SDK writes each
// message with one Write, and smith's own error lines must not land in the
// middle of one. It also runs the hooks that wait for a line to be out
// (see after).
type lineWriter struct {
	mu    sync.Mutex
	w     io.Writer
	hooks []lineHook
}

type lineHook struct {
	match [][]byte
	fn    func()
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	n, err := l.w.Write(p)
	var run []func()
	if len(l.hooks) > 0 {
		keep := l.hooks[:0]
		for _, h := range l.hooks {
			if containsAll(p, h.match) {
				run = append(run, h.fn)
			} else {
				keep = append(keep, h)
			}
		}
		l.hooks = keep
	}
	l.mu.Unlock()
	for _, fn := range run {
		go fn()
	}
	return n, err
}

func (l *lineWriter) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = l.Write(append(b, '\n'))
	return err
}

// after runs fn (in a goroutine of its own) once a line holding every one
// of match has been written. A session's first updates (its slash
// commands) must follow the session/new answer that names the session, or
// the client drops them; the SDK writes that answer after the handler
// returns, so the handler cannot send them itself.
func (l *lineWriter) after(fn func(), match ...[]byte) {
	l.mu.Lock()
	l.hooks = append(l.hooks, lineHook{match: match, fn: fn})
	l.mu.Unlock()
}

func containsAll(p []byte, subs [][]byte) bool {
	for _, s := range subs {
		if !bytes.Contains(p, s) {
			return false
		}
	}
	return true
}
