package main

import "github.com/spf13/cobra"

func newUndoCmd(s *IOStreams) *cobra.Command {
	return notYet("undo [CHANGE]", "Undo a change that smith applied", "  smith undo")
}
