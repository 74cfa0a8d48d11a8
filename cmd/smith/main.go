// Command smith is the daemon between chat agents that stream Server-Sent
// Events and editors that speak JSON-RPC, and a terminal front on the same
// engine. See README.md and docs/.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], stdStreams()))
}

// run executes the command line args with the given streams and returns the
// process exit code (docs/cli.md lists them).
func run(args []string, s *IOStreams) int {
	ctx, stop := newSignalContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := newRootCmdFor(s, args)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil && !ee.Silent {
			fmt.Fprintf(s.Err, "smith: %v\n", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintf(s.Err, "smith: %v\n", err)
	if isUsageError(err) {
		// Point at the help of the command that was run, whose flags
		// these are, not at the root's.
		path := "smith"
		if c, _, ferr := cmd.Find(args); ferr == nil {
			path = c.CommandPath()
		}
		fmt.Fprintf(s.Err, "Run '%s --help' for usage.\n", path)
		return ExitUsage
	}
	return ExitFailure
}
