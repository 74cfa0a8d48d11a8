//go:build !floor_only || floor_cobra

package main

import "github.com/spf13/cobra"

func init() { uses = append(uses, useCobra) }

// useCobra builds and runs a command tree as smith does, version template
// included (it links text/template).
func useCobra() {
	cmd := &cobra.Command{Use: "floor", Version: "v", RunE: func(*cobra.Command, []string) error { return nil }}
	cmd.SetVersionTemplate("floor\n")
	cmd.AddCommand(&cobra.Command{Use: "sub", Short: "a subcommand"})
	_ = cmd.Execute()
}
