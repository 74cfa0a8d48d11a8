package main

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"
)

// withEngine loads the settings of cmd, opens the workspace's engine (the
// running smith serve's, or one in this process: see openBackend), runs fn
// and gives the engine back.
func withEngine(cmd *cobra.Command, s *IOStreams, f *settingsFlags, fn func(ctx context.Context, b backend) error) error {
	set, err := f.load(cmd, s)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	b, err := openBackend(ctx, s, set)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := fn(ctx, b); err != nil {
		return upstreamExit(err)
	}
	return nil
}

func printJSON(s *IOStreams, v any) error {
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
