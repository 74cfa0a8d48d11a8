package editor

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// initialize negotiates the position encoding, records the client's
// capabilities, resolves the configuration and starts (or joins) the
// workspace's engine: the workspace is only known now.
func (c *client) initialize(ctx context.Context, p *InitializeParams) (*InitializeResult, error) {
	cfg, err := c.srv.ConfigFor(ctx, p)
	if err != nil {
		return nil, err
	}
	eng, release, err := c.srv.engines.acquire(ctx, cfg)
	if err != nil {
		if errors.Is(err, daemon.ErrStateLocked) && c.srv.opts.Locked != nil {
			err = c.srv.opts.Locked(cfg, err)
		}
		// Said to the user as well (LSP allows showMessage while initialize
		// runs): some clients only log a failed initialize, and Neovim 0.7
		// raises it where no plugin can catch it; smith.nvim ends what
		// waits for the daemon on this message.
		if nerr := c.conn.Notify(ctx, "window/showMessage", &showMessageParams{Type: 1, Message: "smith could not start: " + err.Error()}); nerr != nil {
			c.log.Debug("telling the editor why initialize failed", "err", nerr)
		}
		return nil, err
	}
	enc := negotiateEncoding(p.Capabilities)
	c.mu.Lock()
	c.state = stateInitializing
	c.enc = enc
	c.caps = capsOf(p.Capabilities)
	c.workspace = cfg.Workspace
	c.engine, c.release = eng, release
	c.mu.Unlock()
	// Attach after the fields are set: the engine may call back at once.
	peer := eng.Attach(c)
	c.mu.Lock()
	c.peer = peer
	c.mu.Unlock()
	c.log.Info("initialized", "workspace", cfg.Workspace, "upstream", redactURL(cfg.Upstream), "positionEncoding", enc)
	return &InitializeResult{
		Capabilities: ServerCapabilities{
			PositionEncoding:       enc,
			TextDocumentSync:       TextDocumentSyncOpts{OpenClose: true, Change: SyncIncremental, Save: SaveOptions{IncludeText: false}},
			ExecuteCommandProvider: ExecuteCommandOptions{Commands: Commands()},
			CodeActionProvider:     codeActionOptions(),
			Experimental:           map[string]any{"smith": map[string]any{"protocolVersion": ProtocolVersion, "workspace": cfg.Workspace}},
		},
		ServerInfo: ClientInfo{Name: "smith", Version: c.srv.opts.Version},
	}, nil
}

// ConfigFor is the engine configuration an initialize with params p
// starts or joins: the workspace it names (see workspaceOf) through
// Options.Resolve. smith serve uses it to find the engine's state folder
// before it decides who serves a connection (Opening).
func (s *Server) ConfigFor(ctx context.Context, p *InitializeParams) (daemon.Config, error) {
	var init InitOptions
	if p.InitializationOptions != nil {
		init = *p.InitializationOptions
	}
	ws, err := workspaceOf(p, init)
	if err != nil {
		return daemon.Config{}, invalidParams("%v", err)
	}
	cfg, err := s.opts.Resolve(ctx, ws, init)
	if err != nil {
		if ws == "" {
			return daemon.Config{}, invalidParams("%v", err) // the editor named no workspace
		}
		return daemon.Config{}, fmt.Errorf("configure smith for %s: %w", ws, err)
	}
	if cfg.MaxResultText == 0 {
		cfg.MaxResultText = MaxResultText
	}
	return cfg, nil
}

// redactURL drops the password of a URL for the log (the token never
// reaches it; a password in the upstream URL must not either).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// ProtocolVersion is the version of the smith editor protocol
// (docs/protocol.md); it changes when a method or a field changes meaning.
const ProtocolVersion = 1

func (c *client) initialized(context.Context, *struct{}) (any, error) {
	c.mu.Lock()
	if c.state == stateInitializing {
		c.state = stateRunning
	}
	c.mu.Unlock()
	return nil, nil
}

// shutdown stops accepting work; the engine is released at exit or when
// the connection closes.
func (c *client) shutdown(context.Context, *struct{}) (any, error) {
	c.mu.Lock()
	c.state = stateShutDown
	c.mu.Unlock()
	return nil, nil
}

// exit ends the connection. ServeConn does the teardown: a handler must
// not close its own connection (Close waits for the handler).
func (c *client) exit(context.Context, *struct{}) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.exited:
	default:
		c.exitNoShutdn = c.state != stateShutDown
		close(c.exited)
	}
	return nil, nil
}

// workspaceOf picks the workspace: initializationOptions.workspace, then
// rootUri, then the first workspace folder, then rootPath. (serve's
// --workspace flag overrides all of them in Resolve.)
func workspaceOf(p *InitializeParams, init InitOptions) (string, error) {
	switch {
	case init.Workspace != "":
		return filepath.Abs(init.Workspace)
	case p.RootURI != nil && *p.RootURI != "":
		return uriToPath(*p.RootURI)
	case len(p.WorkspaceFolders) > 0:
		return uriToPath(p.WorkspaceFolders[0].URI)
	case p.RootPath != nil && *p.RootPath != "":
		return filepath.Abs(*p.RootPath)
	}
	// Resolve may still supply one (the --workspace flag); an empty
	// workspace is refused there.
	return "", nil
}

// negotiateEncoding picks utf-8 when the client offers it (no conversion
// at all) and LSP's mandatory utf-16 otherwise.
func negotiateEncoding(caps ClientCapabilities) PositionEncoding {
	if caps.General != nil {
		for _, e := range caps.General.PositionEncodings {
			if e == EncodingUTF8 {
				return EncodingUTF8
			}
		}
	}
	return EncodingUTF16
}

func capsOf(caps ClientCapabilities) clientCaps {
	cc := clientCaps{resourceOps: map[string]bool{}}
	if w := caps.Workspace; w != nil {
		cc.applyEdit = w.ApplyEdit
		if we := w.WorkspaceEdit; we != nil {
			cc.documentChanges = we.DocumentChanges
			for _, op := range we.ResourceOperations {
				cc.resourceOps[op] = true
			}
		}
	}
	if caps.TextDocument != nil {
		cc.diagnostics = caps.TextDocument.PublishDiagnostics != nil
	}
	if caps.Window != nil {
		cc.workDoneProgress = caps.Window.WorkDoneProgress
		cc.showDocument = caps.Window.ShowDocument != nil && caps.Window.ShowDocument.Support
	}
	return cc
}

// Validate checks the fields whose form is fixed, so that a bad value is
// reported as coming from initializationOptions.
func (o InitOptions) Validate() error {
	if o.Upstream != "" && !strings.HasPrefix(o.Upstream, "http://") && !strings.HasPrefix(o.Upstream, "https://") {
		return fmt.Errorf("initializationOptions.upstream %q is not an http:// or https:// URL", o.Upstream)
	}
	if _, err := protocol.ParseDialect(o.Dialect); err != nil {
		return fmt.Errorf("initializationOptions.dialect: %w", err)
	}
	if o.IdleTimeout != "" {
		if _, err := time.ParseDuration(o.IdleTimeout); err != nil {
			return fmt.Errorf("initializationOptions.idleTimeout %q is not a duration such as 60s", o.IdleTimeout)
		}
	}
	if o.MaxTurns < 0 || o.MaxMessage < 0 {
		return errors.New("initializationOptions.maxTurns and maxMessage must be positive")
	}
	return nil
}

// DefaultUpstream is the upstream used when nothing names one and no
// AgentSmithy server is discovered in the workspace.
const DefaultUpstream = "http://127.0.0.1:8765"

// MaxResultText bounds the text of a smith/chat result (the first bytes of
// the answer, with textTruncated set beyond it). The editor has every
// delta from smith/event already; keeping and encoding a whole long answer
// once more for the result is what made serve's memory grow with the
// answer's length.
const MaxResultText = 1 << 20

// DefaultResolve builds a configuration from initializationOptions alone
// over the engine's defaults. smith serve uses its own Resolve that adds
// flags and config files (cmd/smith/serve.go).
func DefaultResolve(_ context.Context, workspace string, init InitOptions) (daemon.Config, error) {
	return ApplyInitOptions(daemon.Config{Workspace: workspace}, init)
}

// ApplyInitOptions fills the zero fields of cfg from init: fields already
// set (from flags) win.
func ApplyInitOptions(cfg daemon.Config, init InitOptions) (daemon.Config, error) {
	if err := init.Validate(); err != nil {
		return cfg, err
	}
	if cfg.Workspace == "" {
		cfg.Workspace = init.Workspace
	}
	if cfg.Workspace == "" {
		return cfg, errors.New("no workspace: the editor sent no rootUri or workspaceFolders; pass --workspace or initializationOptions.workspace")
	}
	if fi, err := os.Stat(cfg.Workspace); err != nil || !fi.IsDir() {
		return cfg, fmt.Errorf("workspace %s is not a directory", cfg.Workspace)
	}
	if cfg.Upstream == "" {
		cfg.Upstream = init.Upstream
	}
	if cfg.Dialect == "" && init.Dialect != "auto" {
		cfg.Dialect = protocol.Dialect(init.Dialect)
	}
	if cfg.StateDir == "" {
		cfg.StateDir = init.StateDir
	}
	if cfg.IdleTimeout == 0 && init.IdleTimeout != "" {
		d, err := time.ParseDuration(init.IdleTimeout)
		if err != nil {
			return cfg, fmt.Errorf("initializationOptions.idleTimeout %q: not a duration such as 60s", init.IdleTimeout)
		}
		cfg.IdleTimeout = d
	}
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = init.MaxTurns
	}
	if cfg.MaxMessage == 0 {
		cfg.MaxMessage = init.MaxMessage
	}
	if !cfg.AutoApply && init.AutoApply != nil {
		cfg.AutoApply = *init.AutoApply
	}
	if cfg.Upstream == "" {
		// Nobody named this address: the server there must show it serves
		// this workspace before it gets anything.
		cfg.Upstream, cfg.CheckUpstreamWorkspace = DefaultUpstream, true
	}
	return cfg, nil
}
