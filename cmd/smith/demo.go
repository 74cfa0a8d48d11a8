package main

import "github.com/spf13/cobra"

func newDemoCmd(s *IOStreams) *cobra.Command {
	return notYet("demo", "Run smith offline on an example project, start to finish", "  smith demo")
}
