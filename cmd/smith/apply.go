package main

import "github.com/spf13/cobra"

func newApplyCmd(s *IOStreams) *cobra.Command {
	return notYet("apply [PATCH|-]", "Apply a unified diff to the working tree, tolerant but never silently wrong", "  smith apply --preview fix.patch")
}
