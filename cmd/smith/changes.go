package main

import "github.com/spf13/cobra"

func newChangesCmd(s *IOStreams) *cobra.Command {
	return notYet("changes", "List change proposals and their status", "  smith changes")
}
