package main

import "github.com/spf13/cobra"

func newHistoryCmd(s *IOStreams) *cobra.Command {
	return notYet("history", "Show a dialog's history", "  smith history -d ID")
}
