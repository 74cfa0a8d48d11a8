package protocol

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Default paths, relative to ClientConfig.BaseURL (docs/upstream.md).
const (
	DefaultChatPath    = "/api/chat"         // POST, answered with SSE (every dialect but lifecycle)
	DefaultSessionPath = "/api/chat/stream"  // lifecycle: GET, the long-lived session stream
	DefaultMessagePath = "/api/chat/message" // lifecycle: POST, one per message
)

// ClientConfig configures a Client. Only BaseURL is required.
type ClientConfig struct {
	// BaseURL is the upstream's root, e.g. "http://localhost:8765". A path
	// prefix is kept: "http://host/prefix" + ChatPath.
	BaseURL string
	// Dialect of the upstream. DialectAuto detects it from the stream and
	// sends AgentSmithy's request body. Lifecycle cannot be detected (its
	// transport differs: a session stream plus a POST per message), so it
	// must be configured explicitly.
	Dialect Dialect
	// HTTPClient sends the requests; nil means a new http.Client. It must not
	// set Timeout: that caps the whole stream. Streams are bounded by
	// IdleTimeout and the caller's context instead.
	HTTPClient *http.Client
	// Token, when set, is sent as "Authorization: Bearer <Token>". It never
	// appears in errors or logs.
	Token string
	// Header is added to every request.
	Header http.Header
	// MaxEventSize bounds one SSE event; 0 means DefaultMaxEventSize.
	MaxEventSize int
	// IdleTimeout ends a turn on which no byte arrived for this long, from
	// the request on (and bounds the opening of a lifecycle session); 0
	// means DefaultIdleTimeout, < 0 disables it.
	IdleTimeout time.Duration
	// ProgressTimeout ends a turn that emitted no event for this long,
	// whatever bytes kept arriving (keep-alive comments, a byte at a time);
	// the time emit blocks does not count. 0 means DefaultProgressTimeout,
	// < 0 disables it.
	ProgressTimeout time.Duration
	// TurnLimit ends a turn that runs longer than this, from the request
	// on. 0 means DefaultTurnLimit, < 0 disables it.
	TurnLimit time.Duration
	// ChatPath is the POST path of a turn; "" means DefaultChatPath.
	ChatPath string
	// SessionPath and MessagePath are the lifecycle dialect's session stream
	// (GET) and message (POST) paths; "" means the defaults above.
	SessionPath string
	MessagePath string
	// Fields renames the keys of the simple request bodies (textbook, rag,
	// oracle, lifecycle); see BodyFields.
	Fields BodyFields
	// MaxText bounds the text and reasoning a turn's Summary keeps
	// (StreamOptions.MaxText); 0 keeps everything.
	MaxText int
	// Logger receives debug lines about what the client drops (lifecycle
	// events outside a turn); nil discards them. Tokens are never logged.
	Logger *slog.Logger
	// ExtraBody is merged into every request body at the top level, after
	// the dialect's own keys; a nil value removes a key. For example
	// {"workload": "fast"} for AgentSmithy.
	ExtraBody map[string]any
	// Workspace, when set, says the upstream was not named by the user
	// (smith found it by discovery, or fell back to the default address)
	// and must prove it serves this workspace before smith sends it
	// anything: its GET /health reports this workspace (smith upstream), or
	// its pid is the server_pid of the workspace's .agentsmithy/status.json
	// (an AgentSmithy server). Until it has, every request fails with a
	// *WrongWorkspaceError: a server started for another project would
	// otherwise write into that project.
	Workspace string
}

// Client talks to one upstream: the chat stream of every dialect. It is safe
// for concurrent use. With the lifecycle dialect it holds one long-lived
// session stream per dialog; Close ends them. For the other dialects Close is
// a no-op and each Chat owns its own request.
type Client struct {
	cfg ClientConfig
	hc  *http.Client
	log *slog.Logger

	mu          sync.Mutex
	sessions    map[string]*lifecycleSession // lifecycle only, by session id
	workspaceOK bool                         // the upstream serves ClientConfig.Workspace
}

// NewClient returns a Client for cfg.
func NewClient(cfg ClientConfig) *Client {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	if cfg.ChatPath == "" {
		cfg.ChatPath = DefaultChatPath
	}
	if cfg.SessionPath == "" {
		cfg.SessionPath = DefaultSessionPath
	}
	if cfg.MessagePath == "" {
		cfg.MessagePath = DefaultMessagePath
	}
	cfg.Header = cfg.Header.Clone()
	cfg.ExtraBody = maps.Clone(cfg.ExtraBody)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, hc: hc, log: log, sessions: map[string]*lifecycleSession{}}
}

// Close ends every lifecycle session stream the client holds. Turns still
// running on them end interrupted.
func (c *Client) Close() error {
	c.mu.Lock()
	ss := make([]*lifecycleSession, 0, len(c.sessions))
	for _, s := range c.sessions {
		ss = append(ss, s)
	}
	c.mu.Unlock()
	for _, s := range ss {
		s.close(errors.New("client closed"))
	}
	return nil
}

// Chat sends one turn and streams its normalized events to emit, in order,
// on the calling goroutine. It emits exactly one KindTurnEnd event, last,
// whatever happens, and returns the turn's summary.
//
// The error is nil once the stream has started: how the turn ended is the
// summary's Outcome. Before the stream, a failure is emitted as an error
// event and turnEnd{error} and also returned, typed: *HTTPError,
// *ContentTypeError, *UnreachableError or *TLSError (errors.Is(err,
// ErrUnreachable)), ErrDialogBusy (lifecycle 409) or ErrSessionClosed.
//
// A cancelled ctx closes the request at once and ends the turn cancelled
// (before the stream Chat then returns ctx's error, or its cause). No byte
// for the idle timeout, before or during the stream, closes the request and
// ends the turn interrupted (before the stream Chat then returns an
// *IdleTimeoutError).
func (c *Client) Chat(ctx context.Context, req ChatRequest, emit func(Event)) (*Summary, error) {
	if c.cfg.Dialect == DialectLifecycle {
		return c.chatLifecycle(ctx, req, emit)
	}
	body, err := c.requestBody(req)
	if err != nil {
		return c.failTurn(ctx, req, emit, err)
	}

	// The request lives in its own context so that the idle watchdog can
	// close it with a cause the stream reader then reports. The watchdog
	// runs from the start: a server that never answers stalls too.
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := c.startWatchdog(cancel, c.cfg.ChatPath)
	defer wd.stop()
	guard := c.startGuard(wd.url, wd.fire)
	defer guard.stop()
	emit = guard.wrap(emit)
	res, err := c.openStream(reqCtx, http.MethodPost, c.cfg.ChatPath, body)
	if err != nil {
		if why := wd.why(); why != nil {
			err = why
		}
		return c.failTurn(ctx, req, emit, err)
	}
	defer res.Body.Close()
	wd.head()
	wd.r = res.Body
	sum := ReadTurn(ctx, wd, c.streamOptions(req, res.Header), emit)
	keepServerTiming(sum, res.Header)
	return sum, nil
}

// streamOptions are the reader's options for one turn. The client runs the
// idle watchdog itself (it can close the request; the reader cannot), so the
// reader's own is off.
func (c *Client) streamOptions(req ChatRequest, h http.Header) StreamOptions {
	return StreamOptions{
		Dialect:      c.cfg.Dialect,
		MaxEventSize: c.cfg.MaxEventSize,
		IdleTimeout:  -1,
		MaxText:      c.cfg.MaxText,
		DialogID:     req.DialogID,
		TurnID:       req.TurnID,
		Header:       h,
	}
}

// startGuard starts the turn's progress timeout and turn limit
// (turnGuard); fail closes the request with the cause.
func (c *Client) startGuard(url string, fail func(error)) *turnGuard {
	return newTurnGuard(url, orDefault(c.cfg.ProgressTimeout, DefaultProgressTimeout), orDefault(c.cfg.TurnLimit, DefaultTurnLimit), fail)
}

// orDefault is d, def for 0, and 0 (off) for a negative d.
func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

func (c *Client) idleTimeout() time.Duration {
	return orDefault(c.cfg.IdleTimeout, DefaultIdleTimeout)
}

// keepServerTiming keeps rag's Server-Timing header on the turn.
func keepServerTiming(sum *Summary, h http.Header) {
	if sum != nil && sum.ServerTiming == "" {
		sum.ServerTiming = strings.Join(h.Values("Server-Timing"), ", ")
	}
}

// url joins path (and query q) to the base URL.
func (c *Client) url(path string, q url.Values) (string, error) {
	u, err := url.Parse(c.cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("upstream URL %q is not an absolute http(s) URL", c.cfg.BaseURL)
	}
	u = u.JoinPath(path)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// newRequest builds a request with smith's headers. body may be nil.
func (c *Client) newRequest(ctx context.Context, method, path string, q url.Values, body []byte) (*http.Request, error) {
	u, err := c.url(path, q)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	for k, vs := range c.cfg.Header {
		req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	return req, nil
}

// do sends req and turns transport failures into typed errors. A cancelled
// context comes back as the context's own error.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	if err := c.checkWorkspace(req.Context()); err != nil {
		return nil, err
	}
	return c.send(req)
}

// send is do without the workspace check.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	res, err := c.hc.Do(req)
	if err == nil {
		return res, nil
	}
	if ctxErr := req.Context().Err(); ctxErr != nil {
		if cause := context.Cause(req.Context()); cause != nil {
			return nil, cause
		}
		return nil, ctxErr
	}
	u := req.URL.Redacted()
	if isTLSError(err) {
		return nil, &TLSError{Method: req.Method, URL: u, Err: unwrapURLError(err)}
	}
	return nil, &UnreachableError{Method: req.Method, URL: u, Err: unwrapURLError(err)}
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func isTLSError(err error) bool {
	var (
		rh   tls.RecordHeaderError
		cv   *tls.CertificateVerificationError
		ua   x509.UnknownAuthorityError
		hn   x509.HostnameError
		ci   x509.CertificateInvalidError
		alrt tls.AlertError
	)
	return errors.As(err, &rh) || errors.As(err, &cv) || errors.As(err, &ua) ||
		errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &alrt)
}

// openStream sends a request that must be answered 2xx with an event
// stream. On success the caller owns res.Body.
func (c *Client) openStream(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	req, err := c.newRequest(ctx, method, path, nil, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	res, err := c.do(req)
	if err != nil {
		return nil, err
	}
	if err := checkStatus(res); err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "text/event-stream" {
		defer res.Body.Close()
		b, trunc := readErrorBody(res.Body)
		return nil, &ContentTypeError{
			Method: req.Method, URL: req.URL.Redacted(), ContentType: res.Header.Get("Content-Type"),
			Want: "text/event-stream", Body: b, Truncated: trunc,
		}
	}
	return res, nil
}

// checkStatus returns an *HTTPError for a non-2xx answer, and then closes
// the body.
func checkStatus(res *http.Response) error {
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return nil
	}
	defer res.Body.Close()
	b, trunc := readErrorBody(res.Body)
	return &HTTPError{
		Method: res.Request.Method, URL: res.Request.URL.Redacted(),
		Status: res.StatusCode, StatusMsg: res.Status, Body: b, Truncated: trunc,
	}
}

// failTurn ends a turn that failed before its stream: an error event and
// turnEnd{error}; only turnEnd{cancelled} when ctx was cancelled, only
// turnEnd{interrupted} when the idle watchdog fired.
func (c *Client) failTurn(ctx context.Context, req ChatRequest, emit func(Event), err error) (*Summary, error) {
	sum := &Summary{
		Type: "summary", Dialect: c.cfg.Dialect, DialogID: req.DialogID, TurnID: req.TurnID,
		Citations: []Citation{}, ToolCalls: []ToolCall{}, ToolResults: []ToolResult{},
		Changes: []ChangeSummary{}, Errors: []ErrorInfo{}, Violations: []Violation{},
	}
	var seq int64
	send := func(ev Event) {
		seq++
		ev.DialogID, ev.TurnID, ev.Seq = req.DialogID, req.TurnID, seq
		if emit != nil {
			emit(ev)
		}
	}
	if ctx.Err() != nil { // whatever failed, the caller had given up first
		sum.Outcome = OutcomeCancelled
		send(Event{Type: KindTurnEnd, TurnEnd: &TurnEnd{Outcome: OutcomeCancelled, Reason: err.Error()}})
		return sum, err
	}
	if stopped(err) { // a stall, as during the stream
		sum.Outcome = OutcomeInterrupted
		send(Event{Type: KindTurnEnd, TurnEnd: &TurnEnd{Outcome: OutcomeInterrupted, Reason: err.Error()}})
		return sum, err
	}
	info := ErrorInfo{Code: errorCode(err), Message: err.Error()}
	sum.Outcome = OutcomeError
	sum.Errors = append(sum.Errors, info)
	send(Event{Type: KindError, Error: &info})
	send(Event{Type: KindTurnEnd, TurnEnd: &TurnEnd{Outcome: OutcomeError, Reason: info.Message}})
	return sum, err
}

// errorCode is the ErrorInfo.Code of a failure before the stream.
func errorCode(err error) string {
	var (
		he *HTTPError
		ct *ContentTypeError
		te *TLSError
	)
	switch {
	case errors.Is(err, ErrDialogBusy):
		return "dialog_busy"
	case errors.Is(err, ErrSessionClosed):
		return "session_closed"
	case errors.As(err, &te):
		return "tls"
	case errors.Is(err, ErrUnreachable):
		return "unreachable"
	case errors.Is(err, ErrWrongWorkspace):
		return "wrong_workspace"
	case errors.As(err, &he):
		return fmt.Sprintf("http_%d", he.Status)
	case errors.As(err, &ct):
		return "content_type"
	default:
		return "request"
	}
}

// watchdog is a request's idle watchdog: from its start, through the
// response head, to the end of the body, it counts the time spent waiting
// on the upstream (an idleClock: time the stream reader spends elsewhere,
// blocked in a slow emit, does not count); every byte starts the count
// afresh. When it fires it closes the request (cancel) with an
// *IdleTimeoutError as the cause, and the read error that follows becomes
// that error. Set r to the body (after calling head) before reading.
//
// The turn's guard (turnGuard) closes the request through it too (fire),
// with its own cause.
type watchdog struct {
	r      io.Reader
	url    string
	clock  *idleClock // nil: disabled
	cancel context.CancelCauseFunc
	fired  atomic.Pointer[error] // why the request was closed, once it was
}

// startWatchdog starts the configured idle watchdog for a request to path.
func (c *Client) startWatchdog(cancel context.CancelCauseFunc, path string) *watchdog {
	u, err := c.url(path, nil)
	if err == nil {
		if pu, perr := url.Parse(u); perr == nil {
			u = pu.Redacted()
		}
	}
	wd := &watchdog{url: u, cancel: cancel}
	if d := c.idleTimeout(); d > 0 {
		cause := &IdleTimeoutError{URL: u, Timeout: d.String()}
		wd.clock = newIdleClock(d, func() { wd.fire(cause) })
		wd.clock.wait() // for the response head
	}
	return wd
}

// fire closes the request with cause (the first cause wins).
func (wd *watchdog) fire(cause error) {
	if wd.fired.CompareAndSwap(nil, &cause) {
		wd.cancel(cause)
	}
}

// why is the cause the request was closed with, or nil.
func (wd *watchdog) why() error {
	if p := wd.fired.Load(); p != nil {
		return *p
	}
	return nil
}

// head marks the arrival of the response head.
func (wd *watchdog) head() {
	if wd.clock != nil {
		wd.clock.done(true)
	}
}

func (wd *watchdog) Read(p []byte) (int, error) {
	if wd.clock != nil {
		wd.clock.wait()
	}
	n, err := wd.r.Read(p)
	if wd.clock != nil {
		wd.clock.done(n > 0)
	}
	if err != nil && err != io.EOF {
		if why := wd.why(); why != nil {
			// The watchdog or the guard closed the request: say why.
			return n, why
		}
	}
	return n, err
}

// stop turns the watchdog off for good.
func (wd *watchdog) stop() {
	if wd.clock != nil {
		wd.clock.stop()
	}
}

// marshalBody encodes a request body.
func marshalBody(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the request body: %w", err)
	}
	return b, nil
}
