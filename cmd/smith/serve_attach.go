package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
)

// attachTerminals is smith serve's editor.Options.OnEngine: while the
// server holds a workspace's engine it also accepts connections on the
// attach socket in the engine's state folder, so that smith chat, changes,
// undo, ... in a terminal use the same engine as the editor instead of
// failing on its lock (docs/protocol.md, "Terminal attach"). The socket is
// served by srv itself, like --listen: a terminal is one more connection
// sharing the engine. The returned func closes the listener, which removes
// the socket file; it does not wait for the terminal connections, which
// end with the engine.
func attachTerminals(ctx context.Context, srv *editor.Server, eng *daemon.Engine, log *slog.Logger) (stop func()) {
	path := attachSocket(eng.StateDir())
	ln, err := listenUnix(path)
	if err != nil {
		if len(path) > maxSocketPath {
			err = fmt.Errorf("the socket path is %d bytes long, too long for a Unix socket (about 100 at most): use a shorter state folder (--state-dir, or XDG_STATE_HOME) (%w)", len(path), err)
		}
		log.Warn("terminal commands cannot attach to this engine; they will fail while it runs", "socket", path, "err", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		if err := srv.Serve(ctx, ln); err != nil {
			log.Warn("terminal attach socket failed", "socket", path, "err", err)
		}
	}()
	log.Info("terminal attach", "socket", path)
	return func() {
		cancel()
		ln.Close()
	}
}
