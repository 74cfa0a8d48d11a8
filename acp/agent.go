package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/diffapply"
)

// maxResultText bounds the answer text the engine keeps per turn.
const maxResultText = 1 << 20

// Session modes (session/set_mode).
const (
	// ModeReview asks permission for every change (the default).
	ModeReview = "review"
	// ModeAuto applies every change as it arrives, without asking.
	ModeAuto = "auto"
)

// agent implements the SDK's Agent (and AgentLoader) on top of one engine.
type agent struct {
	o    Options
	log  *slog.Logger
	out  *lineWriter
	conn *sdk.AgentSideConnection
	// ctx lives as long as the connection: turns run on it, not on the
	// SDK's request context (see doc.go).
	ctx context.Context

	// initSeen: an initialize line has been read (set by the reader, so
	// that a pipelined session/new, which may run before the initialize
	// handler, is not refused).
	initSeen atomic.Bool

	// order numbers the session/prompt lines of each session as they are
	// read, and remembers how many had been read when a session/cancel
	// was (see reading).
	order sync.Mutex
	// guarded by order
	promptLines map[string]int64
	cancelMark  map[string]int64

	mu          sync.Mutex
	initialized bool
	caps        sdk.ClientCapabilities
	eng         engine
	// peer is smith acp's front on a local engine (nil when joined): the
	// engine's calls made for it use the client's fs/* (fsEditor).
	peer *daemon.Peer
	// joined: eng is a smith serve's (Options.Join).
	joined bool
	// files confines the paths smith reads or writes for the client (fs/*
	// requests, files named in a prompt) by the rules every writer of
	// smith uses.
	files     *diffapply.Workspace
	startMode string
	sessions  map[string]*session
	// fsSession is the session whose id smith's fs/* requests carry (they
	// need one; the engine asks for files without saying for which
	// session): the one of the running or latest prompt.
	fsSession string
	// turns counts running prompts, so that close waits for them.
	turns sync.WaitGroup
	// asking lets the engine's fs/* requests reach the client only while
	// smith answers one of the client's requests (see fs.go).
	asking clientWindow
}

// session is one ACP session: a smith dialog plus the choices made in it.
type session struct {
	id  string // the dialog id
	cwd string

	mu        sync.Mutex
	mode      string
	allowAll  bool // "allow always" was chosen
	rejectAll bool // "reject always" was chosen
	run       *run // the running prompt, nil when idle
	commands  bool // available_commands_update sent
}

// run is a running prompt of a session.
type run struct {
	seq       int64 // its session/prompt line's number in the session (0: unknown)
	cancel    context.CancelFunc
	cancelled bool // session/cancel arrived (guarded by session.mu)
}

func newAgent(ctx context.Context, o Options, log *slog.Logger, out *lineWriter) *agent {
	a := &agent{o: o, log: log, out: out, ctx: ctx, sessions: map[string]*session{}, startMode: ModeReview,
		promptLines: map[string]int64{}, cancelMark: map[string]int64{}}
	a.asking.idle = sync.NewCond(&a.asking.mu)
	return a
}

// close cancels the running prompts, waits for them, and closes the engine.
func (a *agent) close() error {
	a.mu.Lock()
	for _, s := range a.sessions {
		s.mu.Lock()
		if s.run != nil {
			s.run.cancel()
		}
		s.mu.Unlock()
	}
	eng := a.eng
	a.mu.Unlock()
	a.turns.Wait()
	if eng == nil {
		return nil
	}
	return errors.Join(eng.close(), a.files.Close())
}

// Errors the client sees. JSON-RPC codes: -32602 for what names something
// wrong in the params, -32600 for what is wrong at this moment.
func invalidParams(format string, args ...any) *sdk.RequestError {
	return &sdk.RequestError{Code: -32602, Message: fmt.Sprintf(format, args...)}
}

func invalidRequest(format string, args ...any) *sdk.RequestError {
	return &sdk.RequestError{Code: -32600, Message: fmt.Sprintf(format, args...)}
}

func internalError(err error) *sdk.RequestError {
	return &sdk.RequestError{Code: -32603, Message: err.Error()}
}

// Initialize negotiates the version (smith speaks 1: a client asking for
// another gets 1 and decides) and says what smith supports.
func (a *agent) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	a.mu.Lock()
	a.initialized = true
	a.caps = p.ClientCapabilities
	a.mu.Unlock()
	client := "unknown client"
	if p.ClientInfo != nil {
		client = p.ClientInfo.Name + " " + p.ClientInfo.Version
	}
	a.log.Info("initialize", "client", client, "protocolVersion", p.ProtocolVersion,
		"fs.readTextFile", p.ClientCapabilities.Fs.ReadTextFile, "fs.writeTextFile", p.ClientCapabilities.Fs.WriteTextFile)
	return sdk.InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{EmbeddedContext: true},
		},
		AgentInfo:   &sdk.Implementation{Name: "smith", Title: sdk.Ptr("smith"), Version: a.o.Version},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// Authenticate: smith advertises no auth method (the upstream's token is
// smith's configuration, not the editor's business).
func (a *agent) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, invalidParams("smith needs no authentication (it offers no auth method); the upstream's token is set with SMITH_TOKEN or .smith.toml")
}

func (a *agent) Logout(ctx context.Context, p sdk.LogoutRequest) (sdk.LogoutResponse, error) {
	return sdk.LogoutResponse{}, nil
}

// ready checks that initialize came first. (A client may pipeline
// session/new right behind initialize; requests run concurrently, so the
// check waits for an initialize already received rather than racing it.)
func (a *agent) ready() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.initialized && !a.initSeen.Load() {
		return invalidRequest("send initialize first: the connection is not initialized")
	}
	return nil
}

// engine returns the engine, starting it on the workspace that cwd
// belongs to: Options.Workspace, or cwd itself for the first session when
// none was given. A cwd outside the workspace is refused.
func (a *agent) engine(ctx context.Context, cwd string) (engine, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return nil, invalidParams("cwd %q must be an absolute path (ACP paths are absolute)", cwd)
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return nil, invalidParams("cwd %s is not a directory", cwd)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.eng != nil && a.eng.gone() {
		// The smith serve that was joined has stopped (its editor left):
		// open the engine again, here or in another holder.
		a.log.Info("the smith serve this smith acp joined has stopped; opening the workspace's engine again", "workspace", a.eng.Workspace())
		a.eng.close()
		a.files.Close()
		a.eng, a.files, a.joined = nil, nil, false
	}
	if a.eng == nil {
		ws := a.o.Workspace
		if ws == "" {
			ws = cwd
		}
		if ok, err := within(ws, cwd); err != nil || !ok {
			return nil, invalidParams("cwd %s is outside the workspace %s that smith acp was started with (--workspace); start smith acp for that folder, or give a cwd inside %s", cwd, ws, ws)
		}
		cfg, err := a.o.Resolve(ctx, ws)
		if err != nil {
			return nil, internalError(fmt.Errorf("configure smith for %s: %w", ws, err))
		}
		cfg.Workspace = ws
		if cfg.AutoApply {
			// The front decides when to apply (permission requests); the
			// setting picks the sessions' starting mode instead.
			a.startMode, cfg.AutoApply = ModeAuto, false
		}
		if cfg.Logger == nil {
			cfg.Logger = a.log
		}
		if cfg.MaxResultText == 0 {
			// The answer reaches the client as chunks; the turn's result
			// text is not needed whole (serve bounds it the same way).
			cfg.MaxResultText = maxResultText
		}
		var eng engine
		local, err := daemon.New(a.ctx, cfg)
		switch {
		case errors.Is(err, daemon.ErrStateLocked):
			// A smith serve (an editor's) holds the workspace: share its
			// engine, as a terminal command does.
			if eng, err = a.join(a.ctx, cfg, err); err != nil {
				return nil, internalError(err)
			}
		case err != nil:
			return nil, internalError(fmt.Errorf("start smith's engine on %s: %w", ws, err))
		default:
			eng = localEngine{Engine: local}
		}
		stateDir, err := daemon.StateDirOf(cfg)
		if err != nil {
			eng.close()
			return nil, internalError(err)
		}
		files, err := diffapply.OpenWorkspace(eng.Workspace(), stateDir)
		if err != nil {
			eng.close()
			return nil, internalError(fmt.Errorf("open the workspace %s: %w", ws, err))
		}
		if l, ok := eng.(localEngine); ok {
			l.peer = l.Attach(&fsEditor{a: a})
			eng, a.peer = l, l.peer
			a.log.Info("engine started", "workspace", ws, "upstream", cfg.Upstream, "state", stateDir)
		} else {
			a.joined = true
			a.log.Info("joined the smith serve that holds the workspace's engine; its settings apply, and it does the writes (not fs/write_text_file)", "workspace", ws, "state", stateDir)
		}
		a.eng, a.files = eng, files
		return eng, nil
	}
	if ok, err := within(a.eng.Workspace(), cwd); err != nil || !ok {
		return nil, invalidParams("cwd %s is outside the workspace %s of this smith acp; start another smith acp for that folder", cwd, a.eng.Workspace())
	}
	return a.eng, nil
}

// within reports whether path is root or under it, after symlinks: the
// check of a session's cwd, an existing directory (files go through
// diffapply.Workspace.Confine, which takes regular files only).
func within(root, path string) (bool, error) {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false, err
	}
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false, err
	}
	rel, err := filepath.Rel(r, p)
	if err != nil {
		return false, nil
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))), nil
}

// NewSession creates a smith dialog; its id is the session id.
func (a *agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	if err := a.ready(); err != nil {
		return sdk.NewSessionResponse{}, err
	}
	eng, err := a.engine(ctx, p.Cwd)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	d, err := eng.NewDialog(ctx, "")
	if err != nil {
		return sdk.NewSessionResponse{}, internalError(fmt.Errorf("create a dialog: %w", err))
	}
	s := a.addSession(d.ID, p.Cwd)
	// The slash commands follow the answer that names the session.
	a.out.after(func() { a.sendCommands(s) }, []byte(`"result"`), []byte(`"sessionId":"`+d.ID+`"`))
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(d.ID), Modes: a.modes(s)}, nil
}

func (a *agent) addSession(id, cwd string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[id]
	if s == nil {
		s = &session{id: id, cwd: cwd, mode: a.startMode}
		a.sessions[id] = s
	}
	if a.fsSession == "" {
		a.fsSession = id
	}
	return s
}

// session returns the session id, or an error naming it.
func (a *agent) session(id sdk.SessionId) (*session, error) {
	if err := a.ready(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	s := a.sessions[string(id)]
	a.mu.Unlock()
	if s == nil {
		return nil, invalidParams("unknown session %q: create one with session/new, or open an existing dialog with session/load", id)
	}
	return s, nil
}

var modeList = []sdk.SessionMode{
	{Id: ModeReview, Name: "Review every change", Description: sdk.Ptr("smith asks before it applies each change the agent proposes")},
	{Id: ModeAuto, Name: "Apply without asking", Description: sdk.Ptr("smith applies each change as it arrives; conflicts are still refused, and /undo takes a change back")},
}

func (a *agent) modes(s *session) *sdk.SessionModeState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(s.mode), AvailableModes: modeList}
}

// SetSessionMode switches between reviewing every change and applying
// without asking.
func (a *agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	m := string(p.ModeId)
	if m != ModeReview && m != ModeAuto {
		return sdk.SetSessionModeResponse{}, invalidParams("unknown mode %q: smith's modes are %q and %q", m, ModeReview, ModeAuto)
	}
	s.mu.Lock()
	s.mode = m
	s.mu.Unlock()
	a.update(s.id, sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: sdk.SessionModeId(m)}})
	return sdk.SetSessionModeResponse{}, nil
}

func (a *agent) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, invalidParams("smith has no session config options; use session/set_mode (%q or %q)", ModeReview, ModeAuto)
}

func (a *agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound("session/list")
}

func (a *agent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound("session/resume")
}

func (a *agent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return sdk.CloseSessionResponse{}, sdk.NewMethodNotFound("session/close")
}

// Cancel stops the session's running prompt. It must not block: the SDK
// runs notifications one after the other, and the answers to smith's own
// requests (a permission, fs/read_text_file) wait for the notifications
// received before them.
func (a *agent) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	a.mu.Unlock()
	if s == nil {
		a.log.Warn("session/cancel for an unknown session", "session", p.SessionId)
		return nil
	}
	mark := a.cancelledUpTo(string(p.SessionId))
	s.mu.Lock()
	if s.run != nil && s.run.seq <= mark {
		s.run.cancelled = true
		s.run.cancel()
	}
	s.mu.Unlock()
	return nil
}

// seqKey is where reading puts a prompt's number in its params' _meta,
// for Prompt to take out again (it never goes further).
const seqKey = "smith.dev/promptSeq"

// reading sees every message line before the SDK does, in the order the
// client sent them. The SDK runs each request in a goroutine of its own
// and notifications in another, so a session/cancel sent right behind a
// session/prompt can be handled before the prompt has even started; the
// order of the lines is the truth. A prompt is cancelled by a cancel line
// read after it, never by one read before it: reading numbers the prompt
// lines of each session (the number travels to Prompt in _meta) and
// marks, at each cancel line, how many prompts it covers.
func (a *agent) reading(method string, line []byte) []byte {
	switch method {
	case sdk.AgentMethodInitialize:
		a.initSeen.Store(true)
	case sdk.AgentMethodSessionPrompt, sdk.AgentMethodSessionCancel:
		var m struct {
			Params map[string]json.RawMessage `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil || m.Params == nil {
			return line
		}
		var sid string
		if json.Unmarshal(m.Params["sessionId"], &sid) != nil {
			return line
		}
		a.order.Lock()
		defer a.order.Unlock()
		if method == sdk.AgentMethodSessionCancel {
			a.cancelMark[sid] = a.promptLines[sid]
			return line
		}
		a.promptLines[sid]++
		return withMeta(line, m.Params, a.promptLines[sid])
	}
	return line
}

// withMeta returns the prompt line with seq added to its params' _meta.
func withMeta(line []byte, params map[string]json.RawMessage, seq int64) []byte {
	meta := map[string]any{}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return line
	}
	meta[seqKey] = seq
	var msg map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil {
		return line
	}
	mb, err1 := json.Marshal(meta)
	params["_meta"] = mb
	pb, err2 := json.Marshal(params)
	msg["params"] = pb
	out, err3 := json.Marshal(msg)
	if err1 != nil || err2 != nil || err3 != nil {
		return line
	}
	return out
}

// promptSeq takes the number reading gave a prompt out of its _meta.
func promptSeq(meta map[string]any) int64 {
	f, ok := meta[seqKey].(float64)
	delete(meta, seqKey)
	if !ok {
		return 0
	}
	return int64(f)
}

// cancelledUpTo is how many of the session's prompts a cancel covers.
func (a *agent) cancelledUpTo(sid string) int64 {
	a.order.Lock()
	defer a.order.Unlock()
	return a.cancelMark[sid]
}

// update sends one session/update; a client gone is logged, not fatal.
func (a *agent) update(sessionID string, u sdk.SessionUpdate) {
	if err := a.conn.SessionUpdate(a.ctx, sdk.SessionNotification{SessionId: sdk.SessionId(sessionID), Update: u}); err != nil {
		a.log.Debug("session/update not sent", "err", err)
	}
}

func (a *agent) clientCaps() sdk.ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.caps
}
