package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
)

// A workspace has one engine, locked to one process. When a second editor
// starts its own stdio smith serve on a workspace whose engine another
// smith serve holds (two Neovims on one repository, Neovim beside VS
// Code), that serve does not fail on the lock: it joins the holder through
// the holder's serve.sock and relays the editor's connection there, so the
// holder sees one more editor sharing dialogs, changes and the undo
// journal (docs/protocol.md, "A second editor on the same workspace").
//
// The decision is taken on the editor's first message, before any engine
// is opened here: editor.ReadOpening reads it with the protocol's framer
// and keeps every byte, serveStdio resolves its workspace and state folder
// exactly as initialize would (Server.ConfigFor, the same resolver), and
// either relays to a holder that answers, or replays the bytes into the
// Server, which opens the engine itself. The holder is looked for by
// dialling its socket rather than by probing the lock: taking the lock to
// test it would open (and recover) the state behind the holder's back.

// refuseGrace bounds how long a serve that cannot serve waits, after
// answering initialize with the reason, for the editor to close its end
// (Opening.Refuse): long enough for an editor to read the answer, short
// enough that a process nobody stops still ends.
const refuseGrace = 5 * time.Second

// serveStdio serves the editor on stdin/stdout: itself, or through the
// smith serve that already holds the workspace's engine.
// pinned is serve's --workspace ("" when not given). refuse, when not
// nil, is a state folder problem found at start-up and already said on
// stderr: the editor's initialize is answered with it, and serve exits 2.
// warned is a state folder problem that start-up only warned of (the
// editor's initializationOptions may replace the folder): when initialize
// fails with the same, serve exits 2 without saying it again.
func serveStdio(ctx context.Context, srv *editor.Server, pinned string, refuse, warned error, log *slog.Logger) error {
	stdio, err := editor.NewStdio()
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	op := editor.ReadOpening(ctx, stdio)
	said := refuse != nil
	var cfg daemon.Config
	cfgErr := errors.New("the editor's first message is not initialize")
	if refuse == nil && op.Initialize != nil {
		cfg, cfgErr = srv.ConfigFor(ctx, op.Initialize)
		// A state folder that the editor's own settings did not fix
		// either: this serve can serve nothing, so it ends, as it would
		// have at start-up had nothing been left to the editor.
		var usage *ExitError
		if errors.As(cfgErr, &usage) && usage.Code == ExitUsage {
			refuse = usage.Err
			// The start-up warning said this already: once is enough.
			said = warned != nil && refuse.Error() == warned.Error()
		}
	}
	if refuse != nil {
		// The editor lets go at once; one that does not is not waited
		// for long.
		rctx, cancel := context.WithTimeout(ctx, refuseGrace)
		defer cancel()
		if err := op.Refuse(rctx, refuse); err != nil {
			log.Debug("answering initialize", "err", err)
		}
		return &ExitError{Code: ExitUsage, Err: refuse, Silent: said}
	}
	if holder, ws := joinHolder(ctx, cfg, cfgErr, op, pinned, log); holder != nil {
		err = op.Relay(ctx, holder, editor.RelayOptions{
			Logger: log,
			Vanished: fmt.Sprintf("smith: the smith serve this editor was joined to (it held the engine of %s) has stopped; "+
				"restart smith in this editor to go on (it then starts its own engine)", ws),
		})
	} else {
		err = srv.ServeConn(ctx, op.Replay())
	}
	if errors.Is(err, editor.ErrExitWithoutShutdown) {
		return &ExitError{Code: ExitFailure, Err: err, Silent: true}
	}
	if err != nil && ctx.Err() == nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	return nil
}

// joinHolder connects to the attach socket of the engine that the
// editor's initialize asks for (cfg: Server.ConfigFor of it, or cfgErr),
// and returns the connection and the workspace; nil when the first
// message is not initialize, its configuration fails (initialize will
// say why, here), or no smith serve answers on that socket (the engine is
// then opened here). With pinned (--workspace) the initialize passed on
// names that workspace, since the holder would otherwise take the
// editor's root.
func joinHolder(ctx context.Context, cfg daemon.Config, cfgErr error, op *editor.Opening, pinned string, log *slog.Logger) (net.Conn, string) {
	if op.Initialize == nil || cfgErr != nil {
		return nil, ""
	}
	dir, err := daemon.StateDirOf(cfg)
	if err != nil {
		return nil, ""
	}
	sock := attachSocket(dir)
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		log.Debug("no smith serve holds the workspace; serving it here", "workspace", cfg.Workspace, "socket", sock, "err", err)
		return nil, ""
	}
	if pinned != "" {
		if err := op.SetWorkspace(cfg.Workspace); err != nil {
			c.Close()
			log.Warn("cannot pass --workspace on to the smith serve holding the workspace; serving it here", "err", err)
			return nil, ""
		}
	}
	log.Info("another smith serve holds the workspace; relaying this editor to it", "workspace", cfg.Workspace, "socket", sock)
	return c, cfg.Workspace
}

// explainLocked is smith serve's editor.Options.Locked: the engine is held
// by a process that this serve could not join at the editor's first
// message. Say who that can be and what to do.
func explainLocked(cfg daemon.Config, err error) error {
	dir, derr := daemon.StateDirOf(cfg)
	if derr != nil {
		return err
	}
	sock := attachSocket(dir)
	c, derr := net.DialTimeout("unix", sock, time.Second)
	if derr == nil {
		// It started after this serve looked (or this is a --listen serve,
		// which does not relay).
		c.Close()
		return fmt.Errorf("%w\na smith serve holds it and answers on %s; restart smith in this editor to join that one", err, sock)
	}
	return fmt.Errorf("%w\n%v, so the holder is not a smith serve an editor can join (a smith command in a terminal that holds it for a moment, or an older smith): finish or stop it, then restart smith in this editor",
		err, &noDaemonError{sock: sock, err: derr})
}
