package main

import "github.com/spf13/cobra"

func newServeCmd(s *IOStreams) *cobra.Command {
	return notYet("serve", "Run the JSON-RPC daemon for editors (stdio or a Unix socket)", "  smith serve --listen unix:/tmp/smith.sock")
}
