package main

import "github.com/spf13/cobra"

func newStatusCmd(s *IOStreams) *cobra.Command {
	return notYet("status", "Show the upstream, dialect, reachability and workspace", "  smith status")
}
