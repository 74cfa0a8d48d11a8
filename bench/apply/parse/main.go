// Command parse is a floor of bench/apply.sh: a whole Go process that only
// reads a diff and parses it with go-diff's ParseMultiFileDiff, the parser
// smith apply uses (a required dependency), then exits. smith apply parses
// the diff the same way before it plans, journals and writes anything, so
// no smith apply can cost less CPU than this on the same diff.
//
//	parse PATCH
package main

import (
	"fmt"
	"os"

	"github.com/sourcegraph/go-diff/diff"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: parse PATCH")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fds, err := diff.ParseMultiFileDiff(b)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hunks := 0
	for _, fd := range fds {
		hunks += len(fd.Hunks)
	}
	fmt.Printf("%d files, %d hunks\n", len(fds), hunks)
}
