package main

import (
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/config"
	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// settingsFlags are the flags every command that talks to an upstream
// shares. They form the highest layer of the configuration.
type settingsFlags struct {
	workspace string
	upstream  string
	dialect   string
	stateDir  string
	idle      string
	progress  string
	turnLimit string
	autoApply bool
}

func (f *settingsFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVarP(&f.workspace, "workspace", "C", "", "workspace root (default: the git top level of the current directory, or the directory)")
	fs.StringVar(&f.upstream, "upstream", "", "base URL of the chat server (default: discovered, else "+config.DefaultUpstream+")")
	fs.StringVar(&f.dialect, "dialect", "", "payload dialect: agentsmithy, rag, textbook, lifecycle, oracle (default: detect)")
	fs.StringVar(&f.stateDir, "state-dir", "", "where smith keeps its journal (default: $XDG_STATE_HOME/smith)")
	fs.StringVar(&f.idle, "idle-timeout", "", "end a turn after this long without a byte from the upstream (default 60s)")
	fs.StringVar(&f.progress, "progress-timeout", "", "end a turn after this long without an event; keep-alives are not progress (default 5m)")
	fs.StringVar(&f.turnLimit, "turn-limit", "", "end a turn that runs longer than this (default 1h)")
}

// registerNoTurn registers the settings of a command that talks to the
// upstream but runs no turn (dialogs, history, session, status): the turn
// timeouts would do nothing, so --help does not offer them; they stay
// accepted, hidden, for scripts that pass the same flags to every command.
func (f *settingsFlags) registerNoTurn(cmd *cobra.Command) {
	f.register(cmd)
	for _, name := range []string{"idle-timeout", "progress-timeout", "turn-limit"} {
		_ = cmd.Flags().MarkHidden(name)
	}
}

// registerLocal registers the settings of a command that works on the
// workspace's own state (its changes, its journal) and runs no turn:
// --workspace and --state-dir. --upstream is accepted, hidden, for the
// scripts that pass it to every command; the turn settings (dialect,
// timeouts) would do nothing and are not offered.
func (f *settingsFlags) registerLocal(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVarP(&f.workspace, "workspace", "C", "", "workspace root (default: the git top level of the current directory, or the directory)")
	fs.StringVar(&f.stateDir, "state-dir", "", "where smith keeps its journal (default: $XDG_STATE_HOME/smith)")
	fs.StringVar(&f.upstream, "upstream", "", "base URL of the chat server (not used by this command)")
	_ = fs.MarkHidden("upstream")
}

// flagValues returns the flags the user actually set, keyed like config.
func (f *settingsFlags) flagValues(cmd *cobra.Command) map[string]string {
	m := map[string]string{}
	set := func(flag, key, val string) {
		if cmd.Flags().Changed(flag) {
			m[key] = val
		}
	}
	set("upstream", "upstream", f.upstream)
	set("dialect", "dialect", f.dialect)
	set("state-dir", "state_dir", f.stateDir)
	set("idle-timeout", "idle_timeout", f.idle)
	set("progress-timeout", "progress_timeout", f.progress)
	set("turn-limit", "turn_limit", f.turnLimit)
	if fl := cmd.Flags().Lookup("auto-apply"); fl != nil && fl.Changed {
		m["auto_apply"] = strconv.FormatBool(f.autoApply)
	}
	return m
}

// load resolves the workspace and the settings of cmd. Errors are usage
// errors: they come from flags, environment or config files.
func (f *settingsFlags) load(cmd *cobra.Command, s *IOStreams) (*config.Settings, error) {
	dir := f.workspace
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, usageErrorf("cannot read the current directory: %v", err)
		}
		dir = wd
	} else if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, usageErrorf("workspace %s is not a directory (check --workspace)", dir)
	}
	ws, err := config.FindWorkspace(dir)
	if err != nil {
		return nil, usageErrorf("workspace %s: %v", dir, err)
	}
	set, err := config.Load(config.Options{
		Workspace: ws,
		Flags:     f.flagValues(cmd),
		Getenv:    s.Getenv,
		Discover:  protocol.Discover,
	})
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return set, nil
}

// engineConfig maps resolved settings onto the engine's configuration.
func engineConfig(set *config.Settings) daemon.Config {
	return daemon.Config{
		Workspace:       set.Workspace,
		Upstream:        set.Get("upstream"),
		Dialect:         protocol.Dialect(dialectSetting(set.Get("dialect"))),
		Token:           set.Get("token"),
		StateDir:        set.Get("state_dir"),
		MaxTurns:        set.Int("max_turns"),
		MaxMessage:      set.Int("max_message"),
		IdleTimeout:     set.Duration("idle_timeout"),
		ProgressTimeout: set.Duration("progress_timeout"),
		TurnLimit:       set.Duration("turn_limit"),
		MaxEventSize:    set.Int("max_event_size"),
		AutoApply:       set.Bool("auto_apply"),

		CheckUpstreamWorkspace: upstreamFound(set),
	}
}

// upstreamFound reports whether smith found the upstream by itself
// (discovery, or the default address) rather than being told: such a
// server must show it serves the workspace before it gets anything.
func upstreamFound(set *config.Settings) bool {
	v, _ := set.Lookup("upstream")
	return v.Source == config.SourceDiscovery || v.Source == config.SourceDefault
}

func dialectSetting(d string) string {
	if d == "auto" {
		return ""
	}
	return d
}
