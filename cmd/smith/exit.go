package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command (documented in docs/cli.md).
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // the turn failed, or a change conflicted
	ExitUsage       = 2   // bad flags or arguments, unreadable input
	ExitUnreachable = 3   // the upstream could not be reached
	ExitPending     = 4   // smith chat: input ended before every change was answered; they stay pending
	ExitInterrupted = 130 // interrupted by SIGINT
	ExitTerminated  = 143 // ended by SIGTERM
)

// ExitError carries a specific exit code out of a command's RunE. When
// Silent is set the error has already been reported to the user.
type ExitError struct {
	Code   int
	Err    error
	Silent bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// usageErrorf returns an error that exits with ExitUsage.
func usageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// isUsageError recognizes cobra's own flag and argument errors, which are
// plain errors and would otherwise exit 1.
func isUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand flag", "unknown command", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "requires at most", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// argsUpTo accepts least to most positional arguments; otherwise it is a
// usage error that says what the command takes (what) and how to get it
// right (hint), instead of cobra's "accepts at most 1 arg(s)".
func argsUpTo(least, most int, what, hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < least || len(args) > most {
			return usageErrorf("%s takes %s, got %d (%s)", cmd.CommandPath(), what, len(args), hint)
		}
		for _, a := range args {
			if strings.TrimSpace(a) == "" {
				// An empty CHANGE or FILE was looked up as "" and
				// reported as unknown with nothing to read.
				return usageErrorf("%s got an empty %s (%s)", cmd.CommandPath(), strings.TrimPrefix(strings.TrimPrefix(what, "at most "), "one "), hint)
			}
		}
		return nil
	}
}
