package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/smith-dev/smith/config"
	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
)

// backend is the workspace's engine as the terminal commands use it: the
// engine's session API (daemon.API), in this process (*daemon.Engine) or,
// while a smith serve holds the workspace for an editor, through that
// serve's attach socket (editor.Client); both fronts then share dialogs,
// changes and the undo journal. There is one engine per workspace (it
// locks the state folder).
type backend interface {
	daemon.API
	// Attached names the smith serve the commands go through ("" when the
	// engine runs in this process).
	Attached() string
	// Close gives the engine back (closes it, or leaves the daemon).
	Close() error
}

// attachSocketName is the file, in a workspace's state folder, on which
// smith serve accepts terminal commands while it holds the engine.
const attachSocketName = "serve.sock"

// attachInitTimeout bounds the daemon's answer to initialize.
const attachInitTimeout = 10 * time.Second

func attachSocket(stateDir string) string { return filepath.Join(stateDir, attachSocketName) }

// openBackend returns the engine of set's workspace: the running daemon's
// when its attach socket answers, else a new one in this process (without
// a watcher: the command is short-lived). The socket is tried first so that
// a command beside an editor never opens (and recovers) the state itself;
// it is tried again when the state turns out to be locked, for a daemon
// that started in between.
func openBackend(ctx context.Context, s *IOStreams, set *config.Settings) (backend, error) {
	cfg := engineConfig(set)
	cfg.NoWatch = true
	// What the engine warns about (a state file that held null) reaches
	// the terminal; its debug chatter does not.
	cfg.Logger = slog.New(slog.NewTextHandler(s.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dir, err := daemon.StateDirOf(cfg)
	if err != nil {
		return nil, &ExitError{Code: ExitFailure, Err: err}
	}
	if err := usableStateDir(set, dir); err != nil {
		return nil, err
	}
	sock := attachSocket(dir)
	var none *noDaemonError
	b, dialErr := dialDaemon(ctx, sock, cfg.Workspace)
	if !errors.As(dialErr, &none) {
		return b, dialErr
	}
	eng, err := daemon.New(ctx, cfg)
	if errors.Is(err, daemon.ErrStateLocked) {
		if b, dialErr = dialDaemon(ctx, sock, cfg.Workspace); !errors.As(dialErr, &none) {
			return b, dialErr
		}
		if len(sock) > maxSocketPath {
			// A smith serve cannot listen there either: say why.
			return nil, &ExitError{Code: ExitFailure, Err: fmt.Errorf("%w\nno smith serve can answer on %s: the path is %d bytes long, too long for a Unix socket (about 100 at most), so terminal commands cannot share an engine in this state folder; use a shorter one (--state-dir, or XDG_STATE_HOME) for the editor's smith and this command, or stop the holder and run this command again", err, sock, len(sock))}
		}
		return nil, &ExitError{Code: ExitFailure, Err: fmt.Errorf("%w\n%v, so the holder is not a smith serve that accepts terminal commands (another smith command that holds it for a moment, or an older smith): finish or stop it, then run this command again", err, dialErr)}
	}
	if err != nil {
		return nil, &ExitError{Code: ExitFailure, Err: err}
	}
	return &localBackend{Engine: eng}, nil
}

// noDaemonError: nothing listens on the attach socket (no file, or a
// stale one left by a crash).
type noDaemonError struct {
	sock string
	err  error
}

func (e *noDaemonError) Error() string {
	why := e.err
	var sys *os.SyscallError
	if errors.As(why, &sys) {
		why = sys.Err // "no such file or directory", "connection refused"
	}
	return fmt.Sprintf("no smith serve answers on %s (%v)", e.sock, why)
}

func (e *noDaemonError) Unwrap() error { return e.err }

// dialDaemon connects to the smith serve listening on sock and initializes
// on workspace. A socket nobody answers is a *noDaemonError; a daemon that
// answers but refuses is an error of its own.
func dialDaemon(ctx context.Context, sock, workspace string) (backend, error) {
	var pe *fs.PathError
	if _, err := os.Lstat(sock); errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist) {
		// Nothing to dial (the common case of a terminal command): no
		// dialer, whose context would install the signal handler, and
		// no poller set up for a socket. The error says what the dial
		// would have ("no such file or directory").
		return nil, &noDaemonError{sock: sock, err: pe.Err}
	}
	c, err := editor.DialClient(ctx, sock, editor.ClientOptions{})
	if err != nil {
		return nil, &noDaemonError{sock: sock, err: err}
	}
	// The engine is already running: a daemon that does not answer at once
	// is stuck, and the command should say so rather than hang.
	initCtx, cancel := context.WithTimeout(ctx, attachInitTimeout)
	defer cancel()
	if _, err := c.Initialize(initCtx, workspace, "smith-cli", smithVersion()); err != nil {
		c.Close()
		return nil, &ExitError{Code: ExitFailure, Err: fmt.Errorf("the smith serve on %s refused this terminal: %w", sock, err)}
	}
	return &remoteBackend{Client: c, sock: sock}, nil
}

// remoteBackend is the engine of a running smith serve, through the editor
// protocol. The daemon's settings (upstream, dialect, limits) apply, not
// the command's.
type remoteBackend struct {
	*editor.Client
	sock string
}

func (r *remoteBackend) Attached() string { return r.sock }

// localBackend is an engine in this process; its calls act for the
// engine's own front (no editor).
type localBackend struct {
	*daemon.Engine
	// stopServing ends what serveOthers started and waits for its
	// connections; nil when it was not called.
	stopServing func()
}

// serveOthers shares the engine, while this command holds it, on the
// attach socket in its state folder, as smith serve does: an editor whose
// smith serve starts meanwhile joins it (its serve relays there) and other
// terminals attach, instead of failing on the lock. smith chat calls it:
// a turn, let alone an interactive session, holds the engine long enough
// for that to matter. When the command ends, joined editors are told that
// the engine went away (their next smith starts its own); terminals get
// an error. Failing to listen only costs that sharing.
func (l *localBackend) serveOthers(ctx context.Context, log *slog.Logger) {
	path := attachSocket(l.StateDir())
	ln, err := listenUnix(path)
	if err != nil {
		log.Debug("not sharing the engine", "socket", path, "err", err)
		return
	}
	srv := editor.NewServer(editor.Options{
		Engine:  l.Engine,
		Logger:  log,
		Version: smithVersion(),
		// The engine and its settings are this command's: a
		// connection only names its workspace.
		Resolve: func(_ context.Context, ws string, _ editor.InitOptions) (daemon.Config, error) {
			return daemon.Config{Workspace: ws}, nil
		},
	})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, ln); err != nil {
			log.Debug("attach socket failed", "socket", path, "err", err)
		}
	}()
	l.stopServing = func() {
		cancel()
		<-done // Serve closed the listener (and its file) and ended its connections
		srv.Close()
	}
}

func (l *localBackend) Attached() string { return "" }

func (l *localBackend) Close() error {
	if l.stopServing != nil {
		l.stopServing()
	}
	return l.Engine.Close()
}
