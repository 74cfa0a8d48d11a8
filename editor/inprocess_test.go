package editor_test

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/editor/editortest"
	"github.com/smith-dev/smith/protocol"
)

// startServe is `smith serve --upstream up --state-dir stateDir [extra]`
// in this process: editor's Server on one end of a net.Pipe, the fake
// editor on the other, as gopls's tests drive their fake editor. editor's
// tests need no binary; cmd/smith tests the process itself (stdio framing,
// exit, signals, sockets, flags). extra takes the flags the tests use:
// --dialect, --idle-timeout, --progress-timeout (and --log-level, which
// only says how much to log).
func startServe(t testing.TB, up, stateDir string, extra ...string) *editortest.Editor {
	ed, _ := startServeDone(t, up, stateDir, extra...)
	return ed
}

// startServeDone is startServe, and a channel closed when the server has
// ended the connection (after exit, or when the editor went away) and
// given the workspace's engine back.
func startServeDone(t testing.TB, up, stateDir string, extra ...string) (*editortest.Editor, <-chan struct{}) {
	t.Helper()
	base := daemon.Config{Upstream: up, StateDir: stateDir}
	for i := 0; i+1 < len(extra); i += 2 {
		v := extra[i+1]
		switch extra[i] {
		case "--dialect":
			d, err := protocol.ParseDialect(v)
			if err != nil {
				t.Fatal(err)
			}
			base.Dialect = d
		case "--idle-timeout", "--progress-timeout":
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatal(err)
			}
			if extra[i] == "--idle-timeout" {
				base.IdleTimeout = d
			} else {
				base.ProgressTimeout = d
			}
		case "--log-level":
		default:
			t.Fatalf("startServe: flag %s is not supported in process", extra[i])
		}
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := editor.NewServer(editor.Options{
		Version: "test",
		Logger:  log,
		Resolve: func(_ context.Context, ws string, init editor.InitOptions) (daemon.Config, error) {
			cfg := base
			cfg.Workspace = ws
			return editor.ApplyInitOptions(cfg, init)
		},
	})
	serverEnd, clientEnd := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeConn(ctx, serverEnd)
	}()
	ed := editortest.New(t, clientEnd)
	t.Cleanup(func() {
		cancel()
		clientEnd.Close()
		<-done
		srv.Close()
	})
	return ed, done
}

// testWriter logs the server's log lines with the test, shown when it
// fails (or with -v).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}
