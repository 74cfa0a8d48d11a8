package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/acp"
	"github.com/smith-dev/smith/config"
	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

func newACPCmd(s *IOStreams) *cobra.Command {
	var f settingsFlags
	var logLevel string
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Be the agent of an ACP editor (Zed, JetBrains, Emacs, Neovim) on stdio",
		Long: `acp speaks the Agent Client Protocol (ACP v1: one JSON-RPC message per line) on
stdin/stdout, so that editors with an agent panel use smith as their agent:
Zed (agent_servers), JetBrains IDEs (acp.json), Emacs (agent-shell) and
Neovim (codecompanion.nvim, avante.nvim). The editor starts it; you do not
type into it. Logs go to stderr; stdout carries only the protocol.

An ACP session is a smith dialog. Each prompt is one turn of the upstream
(the chat server, as for smith chat). Every change the upstream proposes
becomes an "edit" tool call with the whole-file diff, and the editor asks you:
Apply, Apply all in this session, Reject, Reject all. An applied change goes
through the editor (fs/write_text_file) when it offers that, so its own review
and undo see it, and atomically on disk otherwise. A change that no longer
matches the file is a failed tool call, never a wrong write. The session mode
"Apply without asking" skips the question. Slash commands: /changes, /apply,
/reject, /undo, /approve, /reset, /dialogs.

The workspace is --workspace, else the cwd of the editor's first session.
When an editor's smith serve (or a smith chat) already holds the workspace,
smith acp joins it and shares its engine: same dialogs, changes and undo,
with the holder's settings, and the holder does the writes (docs/acp.md).
Settings come from the flags, then SMITH_* variables, .smith.toml, the user's
config file, a running AgentSmithy server of the workspace, and the defaults
(see smith config). Set-up for each editor: docs/acp.md.`,
		Example: `  # Zed, settings.json:
  #   "agent_servers": { "smith": { "type": "custom", "command": "smith", "args": ["acp"] } }
  # JetBrains, ~/.jetbrains/acp.json:
  #   { "agent_servers": { "smith": { "command": "/usr/local/bin/smith", "args": ["acp"] } } }
  smith acp --workspace ~/src/project
  smith acp --upstream http://127.0.0.1:8765 --log-level debug 2>smith-acp.log`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usageErrorf("--log-level %q: use debug, info, warn or error", logLevel)
			}
			ws := ""
			if f.workspace != "" {
				abs, err := filepath.Abs(f.workspace)
				if err != nil {
					return usageErrorf("--workspace %s: %v", f.workspace, err)
				}
				if st, err := os.Stat(abs); err != nil || !st.IsDir() {
					return usageErrorf("--workspace %s is not a directory", f.workspace)
				}
				ws = abs
			}
			flags := f.flagValues(cmd)
			// Check flags, environment and the user's config now rather
			// than at the first session, where the error is easy to miss.
			if _, err := config.Load(config.Options{Flags: flags, Getenv: s.Getenv}); err != nil {
				return usageErrorf("%v", err)
			}
			log := slog.New(slog.NewTextHandler(s.Err, &slog.HandlerOptions{Level: level}))
			refuse, err := acpStateDir(s, log, ws, flags)
			if err != nil {
				return err
			}
			if s.InTTY {
				fmt.Fprintln(s.Err, "smith acp: waiting for an ACP client on stdin (an editor starts this; see smith acp --help). Ctrl-D quits.")
			}
			resolve := func(_ context.Context, workspace string) (daemon.Config, error) {
				set, err := config.Load(config.Options{Workspace: workspace, Flags: flags, Getenv: s.Getenv, Discover: protocol.Discover})
				if err != nil {
					return daemon.Config{}, err
				}
				cfg := engineConfig(set)
				// Said here, naming where the folder came from, rather
				// than by the engine, which knows the path only.
				if dir, err := daemon.StateDirOf(cfg); err == nil {
					if err := usableStateDir(set, dir); err != nil {
						return daemon.Config{}, err
					}
				}
				return cfg, nil
			}
			// A workspace whose engine an editor's smith serve holds is
			// joined through its serve.sock, as terminal commands do.
			join := func(ctx context.Context, cfg daemon.Config) (acp.Joined, error) {
				dir, err := daemon.StateDirOf(cfg)
				if err != nil {
					return nil, err
				}
				b, err := dialDaemon(ctx, attachSocket(dir), cfg.Workspace)
				if err != nil {
					return nil, err
				}
				j, ok := b.(acp.Joined)
				if !ok { // dialDaemon answers a remote engine or an error
					b.Close()
					return nil, fmt.Errorf("the engine on %s cannot be joined", attachSocket(dir))
				}
				return j, nil
			}
			err = acp.Serve(cmd.Context(), s.In, s.Out, acp.Options{Workspace: ws, Resolve: resolve, Join: join, Logger: log, Version: smithVersion(), Refuse: refuse})
			if refuse != nil {
				return &ExitError{Code: ExitUsage, Err: refuse, Silent: true}
			}
			if err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().Lookup("workspace").Usage = "workspace `directory` (default: the cwd of the editor's first session; later sessions must be inside it)"
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log `level` on stderr: debug, info, warn, error")
	return cmd
}

// acpStateDir checks the state folder at start-up (stateDirAtStart). The
// problem is final unless the workspace is not known yet (no --workspace)
// and the folder comes from a layer below the workspace's .smith.toml
// (the user's config file, the default): the first session's workspace
// may still name another. A final problem in a terminal is the error
// (exit 2 now); under an editor it is said on stderr now and returned as
// refuse: acp.Serve answers initialize with it, which is what the editor
// shows (its log alone gets stderr), and smith acp exits 2.
func acpStateDir(s *IOStreams, log *slog.Logger, ws string, flags map[string]string) (refuse, err error) {
	set, err := config.Load(config.Options{Workspace: ws, Flags: flags, Getenv: s.Getenv})
	if err != nil {
		return nil, nil // a bad .smith.toml: the first session says it
	}
	problem := stateDirAtStart(set, ws)
	if problem == nil {
		return nil, nil
	}
	if v, _ := set.Lookup("state_dir"); ws == "" && v.Source != config.SourceFlag && v.Source != config.SourceEnv {
		log.Warn(problem.Error() + "; sessions will fail unless the workspace's .smith.toml names another state_dir")
		return nil, nil
	}
	if s.InTTY {
		return nil, problem
	}
	fmt.Fprintf(s.Err, "smith: %v\n", problem)
	return problem, nil
}
