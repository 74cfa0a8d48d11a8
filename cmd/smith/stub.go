package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// notYet builds a placeholder for a command whose implementation has not
// landed yet; it fails loudly instead of pretending to work.
// TODO: remove once every command has its own file.
func notYet(use, short, example string) *cobra.Command {
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		RunE: func(cmd *cobra.Command, args []string) error {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s is not implemented yet", cmd.Name())}
		},
	}
}
