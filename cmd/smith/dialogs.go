package main

import "github.com/spf13/cobra"

func newDialogsCmd(s *IOStreams) *cobra.Command {
	return notYet("dialogs", "List, create, rename, delete or select dialogs", "  smith dialogs list")
}
