package main

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/daemon"
)

// withEngine loads the settings of cmd, opens the workspace's engine
// (without a watcher: the command is short-lived), runs fn and closes it.
func withEngine(cmd *cobra.Command, s *IOStreams, f *settingsFlags, fn func(ctx context.Context, eng *daemon.Engine, p *daemon.Peer) error) error {
	set, err := f.load(cmd, s)
	if err != nil {
		return err
	}
	cfg := engineConfig(set)
	cfg.NoWatch = true
	ctx := cmd.Context()
	eng, err := daemon.New(ctx, cfg)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	defer eng.Close()
	p := eng.Attach(nil)
	defer eng.Detach(p)
	if err := fn(ctx, eng, p); err != nil {
		return upstreamExit(err)
	}
	return nil
}

func printJSON(s *IOStreams, v any) error {
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
