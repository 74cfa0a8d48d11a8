package main

import "github.com/spf13/cobra"

func newUpstreamCmd(s *IOStreams) *cobra.Command {
	return notYet("upstream", "Run the embedded chat server (AgentSmithy-compatible) on loopback", "  smith upstream --workspace .")
}
