package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise it is read from the module's build info.
var version = ""

func smithVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func newVersionCmd(s *IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print smith's version",
		Example: "  smith version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(s.Out, versionLine())
			return nil
		},
	}
}

// versionLine is what smith version and smith --version print.
func versionLine() string { return versionLineOf(smithVersion()) }

// versionLineOf is versionLine for smith's version v.
func versionLineOf(v string) string {
	return "smith " + v + " " + runtime.GOOS + "/" + runtime.GOARCH + " " + runtime.Version()
}
