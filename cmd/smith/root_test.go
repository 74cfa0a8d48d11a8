package main

import (
	"bytes"
	"errors"
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

// TestArgErrorsInSmithsWords runs every command of the whole tree (cobra's
// completion commands included) with more arguments than any of them takes:
// each refusal is a usage error (exit 2) that names the command and says what
// it takes, never cobra's 'unknown command "x" for "smith history"' or
// 'accepts at most 2 arg(s)'.
func TestArgErrorsInSmithsWords(t *testing.T) {
	s := &IOStreams{Getenv: func(string) string { return "" }}
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Args == nil || !c.HasParent() {
			return // cobra's default: any arguments (the root: its commands)
		}
		args := []string{"extra", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
		err := c.Args(c, args)
		if err == nil {
			return // takes any number
		}
		checked++
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitUsage {
			t.Errorf("%s %s: %v is not a usage error said by smith", c.CommandPath(), strings.Join(args, " "), err)
			return
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, c.CommandPath()+" ") || strings.Contains(msg, "unknown command") || strings.Contains(msg, "arg(s)") {
			t.Errorf("%s %s: %q is not in smith's words", c.CommandPath(), strings.Join(args, " "), msg)
		}
	}
	root := newRootCmd(s)
	walk(root)
	if checked < 10 {
		t.Errorf("only %d commands refused ten arguments; the walk proves little", checked)
	}
}
