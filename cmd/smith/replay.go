package main

import "github.com/spf13/cobra"

func newReplayCmd(s *IOStreams) *cobra.Command {
	return notYet("replay FILE.sse", "Show what smith makes of a recorded SSE response body", "  smith replay --json turn.sse")
}
