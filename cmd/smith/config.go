package main

import "github.com/spf13/cobra"

func newConfigCmd(s *IOStreams) *cobra.Command {
	return notYet("config", "Print the effective configuration and where each value came from", "  smith config")
}
