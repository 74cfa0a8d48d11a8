package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
)

// TestSubcommandNames keeps the table that newRootCmdFor matches args
// against in step with the commands themselves.
func TestSubcommandNames(t *testing.T) {
	s := &IOStreams{Getenv: func(string) string { return "" }}
	for _, c := range subcommands() {
		if got := c.build(s).Name(); got != c.name {
			t.Errorf("subcommand %q builds a command named %q", c.name, got)
		}
	}
}

// TestRootForOneCommand checks that the tree of only the invoked command
// prints what the whole tree prints: help, and the errors of bad flags and
// arguments, each run in a fresh directory (none of them reads or writes
// it).
func TestRootForOneCommand(t *testing.T) {
	var cases [][]string
	for _, c := range subcommands() {
		cases = append(cases,
			[]string{c.name, "--help"},
			[]string{c.name, "-h"},
			[]string{c.name, "--no-such-flag"},
		)
	}
	cases = append(cases, []string{"apply", "-p", "x"}, []string{"version", "extra"}, []string{"upstream", "arg"})
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Chdir(t.TempDir())
			want := execTree(newRootCmd, args)
			got := execTree(func(s *IOStreams) *cobra.Command { return newRootCmdFor(s, args) }, args)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("smith %s: one-command tree differs from the whole tree (-whole +one):\n%s", strings.Join(args, " "), diff)
			}
			if want == (execResult{}) {
				t.Errorf("smith %s printed nothing; the comparison proves nothing", strings.Join(args, " "))
			}
		})
	}
}

type execResult struct{ Out, Err, ExecErr string }

func execTree(build func(*IOStreams) *cobra.Command, args []string) execResult {
	var out, errb bytes.Buffer
	s := &IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(string) string { return "" }}
	root := build(s)
	root.SetArgs(args)
	r := execResult{}
	if err := root.Execute(); err != nil {
		r.ExecErr = err.Error()
	}
	r.Out, r.Err = out.String(), errb.String()
	return r
}
