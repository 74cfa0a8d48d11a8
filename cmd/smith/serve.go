package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/config"
	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/protocol"
)

// serveOptions are the flags of smith serve.
type serveOptions struct {
	listen    string
	workspace string
	logLevel  string
	// settings holds the config keys given as flags (config.Keys names).
	settings map[string]string
}

func newServeCmd(s *IOStreams) *cobra.Command {
	o := &serveOptions{settings: map[string]string{}}
	var upstream, dialect, stateDir, idleTimeout string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the JSON-RPC daemon for editors (stdio or a Unix socket)",
		Long: `serve speaks JSON-RPC 2.0 with LSP framing (Content-Length headers) to editors:
the LSP lifecycle and buffer sync, plus smith's own methods (smith/chat,
smith/changes, smith/change/apply, ...) described in docs/protocol.md.

By default it serves one editor on stdin/stdout and exits when the editor
closes stdin or sends exit. With --listen unix:PATH it serves any number of
editors on a Unix socket (mode 0600); editors on the same workspace share one
engine: the same dialogs, changes and undo journal. Only a stale socket at PATH
is replaced; a file, symlink or live socket there is refused.

The workspace is the editor's rootUri (or first workspace folder) unless
--workspace or initializationOptions.workspace names one. Settings are taken
from flags, then initializationOptions, then SMITH_* variables, .smith.toml,
the user's config file, a running AgentSmithy server of the workspace, and
the defaults. Logs go to stderr; stdout carries only the protocol. A state
folder smith cannot use (--state-dir naming a file, a folder it may not
write in) is said at start-up, and serve exits 2 (under an editor, after
answering its initialize with the reason, which is what the editor shows).

While it holds a workspace's engine, serve also listens on serve.sock in the
engine's state folder (mode 0600): smith chat, changes, undo, dialogs,
history and status in a terminal on the same workspace connect there and
share the editor's engine (docs/cli.md, "Using the CLI beside an editor").

A second editor's stdio serve on a workspace that a smith serve already
holds joins that one: it relays its editor's connection to the holder's
serve.sock, and both editors share one engine with the holder's settings
(docs/protocol.md, "A second editor on the same workspace").`,
		Example: `  smith serve                                   # one editor on stdio
  smith serve --listen unix:/tmp/smith.sock      # many editors on a socket
  smith serve --upstream http://127.0.0.1:8765 --dialect agentsmithy`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for flag, key := range map[string]string{"upstream": "upstream", "dialect": "dialect", "state-dir": "state_dir", "idle-timeout": "idle_timeout", "progress-timeout": "progress_timeout", "turn-limit": "turn_limit"} {
				if f := cmd.Flags().Lookup(flag); f.Changed {
					o.settings[key] = f.Value.String()
				}
			}
			if os.Getenv("GOMAXPROCS") == "" {
				// A relay waits far more than it computes: with one P the
				// runtime does not wake a second thread to spin for work
				// at every event. At 1 000 events/s that was a quarter of
				// serve's CPU, at 100 000/s one core still keeps up
				// (docs/benchmarks.md, "smith serve"). GOMAXPROCS set by
				// the user wins.
				runtime.GOMAXPROCS(1)
			}
			return serveRun(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "", "serve on `unix:PATH` instead of stdio")
	f.StringVar(&upstream, "upstream", "", "base `URL` of the chat server")
	f.StringVar(&dialect, "dialect", "", "payload `dialect`: agentsmithy, rag, textbook, lifecycle, oracle (default: detect)")
	f.StringVarP(&o.workspace, "workspace", "C", "", "workspace `directory` (default: the editor's root)")
	f.StringVar(&stateDir, "state-dir", "", "`directory` for journals and dialog indexes (default $XDG_STATE_HOME/smith)")
	f.StringVar(&idleTimeout, "idle-timeout", "", "end a turn after this `duration` without a byte from the upstream (default 60s)")
	f.String("progress-timeout", "", "end a turn after this `duration` without an event; keep-alives are not progress (default 5m)")
	f.String("turn-limit", "", "end a turn that runs longer than this `duration` (default 1h)")
	f.StringVar(&o.logLevel, "log-level", "info", "log `level` on stderr: debug, info, warn, error")
	return cmd
}

func serveRun(ctx context.Context, s *IOStreams, o *serveOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usageErrorf("--log-level %q: use debug, info, warn or error", o.logLevel)
	}
	if o.workspace != "" {
		abs, err := filepath.Abs(o.workspace)
		if err != nil {
			return usageErrorf("--workspace %s: %v", o.workspace, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			// Said now, not at the editor's initialize, as smith acp does.
			return usageErrorf("--workspace %s is not a directory", o.workspace)
		}
		o.workspace = abs
	}
	// Check flags, environment and the user's config file now, rather than
	// at the editor's initialize where the error is easy to miss.
	if _, err := config.Load(config.Options{Flags: o.settings, Getenv: s.Getenv}); err != nil {
		if strings.Contains(err.Error(), "(from flag") {
			return usageErrorf("%v", err)
		}
		return &ExitError{Code: ExitFailure, Err: err}
	}
	log := slog.New(slog.NewTextHandler(s.Err, &slog.HandlerOptions{Level: level}))
	refuse, warned, err := o.checkStateDir(s, log)
	if err != nil {
		return err
	}
	// The hook needs the server it belongs to; engines start at initialize,
	// after NewServer has returned.
	var srv *editor.Server
	attach := func(eng *daemon.Engine) func() { return attachTerminals(ctx, srv, eng, log) }
	srv = editor.NewServer(editor.Options{Resolve: o.resolver(s), Logger: log, Version: smithVersion(), OnEngine: attach, Locked: explainLocked})
	defer srv.Close()

	if o.listen == "" {
		if s.InTTY {
			// Started by hand: nothing would say what it waits for.
			fmt.Fprintln(s.Err, "smith serve: waiting for an editor on stdin (LSP framing; an editor starts this, see smith serve --help and docs/protocol.md). Ctrl-D quits.")
		}
		return serveStdio(ctx, srv, o.workspace, refuse, warned, log)
	}
	path, ok := strings.CutPrefix(o.listen, "unix:")
	if !ok || path == "" {
		return usageErrorf("--listen %q: use unix:PATH", o.listen)
	}
	ln, err := listenUnix(path)
	if why, ok := listenCause(err); ok {
		fix := "give --listen a socket path in a folder that exists and that you can write"
		if errors.Is(why, syscall.EINVAL) && len(path) > maxSocketPath {
			why = fmt.Errorf("the path is %d bytes long, too long for a Unix socket (about 100 at most)", len(path))
			fix = "give --listen a shorter path"
		}
		err = fmt.Errorf("cannot listen on unix:%s: %v; %s", path, why, fix)
	}
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	log.Info("listening", "socket", path)
	if err := srv.Serve(ctx, ln); err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	return nil
}

// maxSocketPath is the longest path a Unix socket may have everywhere
// (sun_path holds 108 bytes on Linux, 104 on the BSDs and macOS, with
// its final NUL): an EINVAL beyond it is the length.
const maxSocketPath = 103

// resolver builds the engine configuration of a connection from, highest
// first: the flags, the editor's initializationOptions, and config.Load's
// layers (environment, .smith.toml, user file, a discovered AgentSmithy
// server, defaults).
func (o *serveOptions) resolver(s *IOStreams) func(context.Context, string, editor.InitOptions) (daemon.Config, error) {
	return func(_ context.Context, ws string, init editor.InitOptions) (daemon.Config, error) {
		if o.workspace != "" {
			ws = o.workspace
		}
		if ws == "" {
			return daemon.Config{}, errors.New("no workspace: the editor sent no rootUri or workspaceFolders; start smith serve with --workspace DIR")
		}
		if err := init.Validate(); err != nil {
			return daemon.Config{}, err
		}
		layered := maps.Clone(o.settings)
		for key, v := range initSettings(init) {
			if _, set := layered[key]; !set && v != "" {
				layered[key] = v
			}
		}
		st, err := config.Load(config.Options{Workspace: ws, Flags: layered, Getenv: s.Getenv, Discover: protocol.Discover})
		if err != nil {
			return daemon.Config{}, err
		}
		cfg := engineConfig(st)
		// Said now, naming where the folder came from, rather than by the
		// engine, which knows the path only.
		if dir, err := daemon.StateDirOf(cfg); err == nil {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				origin := ""
				if _, flag := o.settings["state_dir"]; !flag && init.StateDir != "" {
					origin = fromInitOptions
				}
				return daemon.Config{}, stateDirUnusable(st, err, origin)
			}
		}
		return editor.ApplyInitOptions(cfg, editor.InitOptions{})
	}
}

// checkStateDir checks the state folder at start-up (stateDirAtStart). A
// problem is final when the folder comes from --state-dir: nothing the
// editor sends can replace it. Then a server on a socket, or one started
// by hand in a terminal, exits 2 now (err); a stdio serve says it on
// stderr now and returns it as refuse, for serveStdio to answer the
// editor's initialize with it, since that answer is what the editors show
// (Opening.Refuse), and exit 2 then. A problem that the editor's
// initializationOptions.stateDir may still resolve is said once: a stdio
// serve under an editor says it when initialize fails with it (answered,
// and as its last words on stderr, which the editors' logs show as the
// error), and nothing when the editor's stateDir replaces the folder; a
// server on a socket, or one started by hand in a terminal, warns now
// (warned), and serveStdio then does not say it again as it exits.
func (o *serveOptions) checkStateDir(s *IOStreams, log *slog.Logger) (refuse, warned, err error) {
	set, err := config.Load(config.Options{Workspace: o.workspace, Flags: o.settings, Getenv: s.Getenv})
	if err != nil {
		return nil, nil, nil // a bad .smith.toml: initialize says it, with the workspace
	}
	problem := stateDirAtStart(set, o.workspace)
	if problem == nil {
		return nil, nil, nil
	}
	if _, flag := o.settings["state_dir"]; !flag {
		if o.listen == "" && !s.InTTY {
			return nil, nil, nil
		}
		log.Warn(problem.Error() + "; initialize will fail unless the editor's initializationOptions.stateDir names another directory")
		return nil, problem, nil
	}
	if o.listen != "" || s.InTTY {
		return nil, nil, problem
	}
	fmt.Fprintf(s.Err, "smith: %v\n", problem)
	return problem, nil, nil
}

// initSettings maps initializationOptions to config keys.
func initSettings(init editor.InitOptions) map[string]string {
	m := map[string]string{
		"upstream":     init.Upstream,
		"dialect":      init.Dialect,
		"state_dir":    init.StateDir,
		"idle_timeout": init.IdleTimeout,
	}
	if init.MaxTurns > 0 {
		m["max_turns"] = strconv.Itoa(init.MaxTurns)
	}
	if init.MaxMessage > 0 {
		m["max_message"] = strconv.Itoa(init.MaxMessage)
	}
	if init.AutoApply != nil {
		m["auto_apply"] = strconv.FormatBool(*init.AutoApply)
	}
	return m
}
