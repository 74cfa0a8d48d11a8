package main

import "github.com/spf13/cobra"

func newChatCmd(s *IOStreams) *cobra.Command {
	return notYet("chat [MESSAGE]", "Chat with the upstream agent about this repository", "  smith chat 'rename Foo to Bar in main.go'")
}
