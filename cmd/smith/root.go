package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// subcommand is one of smith's commands by the name it is invoked with.
type subcommand struct {
	name  string
	build func(*IOStreams) *cobra.Command
}

// subcommands lists smith's commands in help order (TestSubcommandNames keeps
// each name equal to the command's Use).
func subcommands() []subcommand {
	return []subcommand{
		{"version", newVersionCmd},
		{"replay", newReplayCmd},
		{"apply", newApplyCmd},
		{"upstream", newUpstreamCmd},
		{"serve", newServeCmd},
		{"acp", newACPCmd},
		{"chat", newChatCmd},
		{"dialogs", newDialogsCmd},
		{"history", newHistoryCmd},
		{"changes", newChangesCmd},
		{"undo", newUndoCmd},
		{"session", newSessionCmd},
		{"status", newStatusCmd},
		{"config", newConfigCmd},
		{"demo", newDemoCmd},
	}
}

// newRootCmdFor returns the command tree that executing args needs: when
// args start with the name of one of smith's commands, the root with only
// that command, because building all of them (their flags and help texts)
// is a fair part of a short command's run time (docs/benchmarks.md,
// "Start-up (target 4)"); otherwise (help, completion, a flag, a typo that
// deserves a suggestion) the whole tree. What the command prints is the same
// either way: a command's help and errors do not mention its siblings.
func newRootCmdFor(s *IOStreams, args []string) *cobra.Command {
	if len(args) > 0 {
		for _, c := range subcommands() {
			if c.name == args[0] {
				root := newBareRootCmd(s)
				root.AddCommand(c.build(s))
				// Nor is cobra's own completion command (five commands
				// with their flags and help texts, built when Execute
				// starts) reachable from here: it is args[0] only in
				// the whole tree.
				root.CompletionOptions.DisableDefaultCmd = true
				argsInOurWords(root)
				return root
			}
		}
	}
	return newRootCmd(s)
}

// newRootCmd returns the whole command tree, completion included.
func newRootCmd(s *IOStreams) *cobra.Command {
	root := newBareRootCmd(s)
	for _, c := range subcommands() {
		root.AddCommand(c.build(s))
	}
	// cobra adds `completion` itself; give it the example every command has.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Example = `  source <(smith completion bash)
  smith completion zsh > "${fpath[1]}/_smith"
  smith completion fish > ~/.config/fish/completions/smith.fish`
		}
	}
	argsInOurWords(root)
	return root
}

// newBareRootCmd returns the root command without subcommands.
func newBareRootCmd(s *IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "smith",
		Short: "smith connects streaming chat agents to your editor and terminal",
		Long: `smith sits between chat agents that stream answers over Server-Sent Events and
editors that speak JSON-RPC. It reads the stream, maps every supported dialect to one
event model, and turns the diffs in it into change proposals that you preview, apply
per file or per hunk, reject and undo.

Start with 'smith demo': it runs the whole thing offline on an example project.`,
		Example: `  smith demo                       # offline tour on an example project
  smith chat "rename Foo to Bar in main.go"
  smith apply --preview fix.patch
  smith serve                      # JSON-RPC daemon for editors, on stdio`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version, like smith version (cobra adds the flag). The build
	// information is parsed once for both.
	v := smithVersion()
	root.Version = v
	root.SetVersionTemplate(versionLineOf(v) + "\n")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	return root
}

// argsInOurWords makes every command below root (cobra's completion
// commands too) refuse arguments it does not take with a usage error in
// smith's words, which says what it takes and where to look, instead of
// cobra's 'unknown command "extra" for "smith history"' (cobra.NoArgs) or
// 'accepts at most 2 arg(s), received 3': one place for every command,
// which declare their arguments with cobra's validators or argsUpTo as
// usual. The root keeps cobra's "unknown command" and its suggestions: there
// the word is a command's name, mistyped.
func argsInOurWords(root *cobra.Command) {
	for _, c := range root.Commands() {
		inOurWords(c)
	}
}

func inOurWords(c *cobra.Command) {
	for _, sub := range c.Commands() {
		inOurWords(sub)
	}
	v := c.Args
	if v == nil {
		return // cobra's default for a command below the root: any arguments
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		err := v(cmd, args)
		var ee *ExitError
		if err == nil || errors.As(err, &ee) {
			return err // accepted, or refused by argsUpTo in its own words
		}
		return argCountError(cmd, v, args, err)
	}
}

// argCountError says in smith's words that cmd does not take args, which
// its validator v refused with err (cobra's words). How many arguments the
// command takes is found by asking v, so that any of cobra's validators is
// said right.
func argCountError(cmd *cobra.Command, v cobra.PositionalArgs, args []string, err error) error {
	path := cmd.CommandPath()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	got := fmt.Sprintf("got %d: %s", len(args), strings.Join(quoted, " "))
	takes := func(n int) bool { return v(cmd, make([]string, n)) == nil }
	if len(args) > 0 && takes(0) && cmd.HasAvailableSubCommands() {
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return usageErrorf("%s has no command %q (its commands: %s; %s --help)", path, args[0], strings.Join(names, ", "), path)
	}
	// The counts it takes, up to one past the count given.
	least, most := -1, -1
	for n := 0; n <= len(args)+1; n++ {
		if takes(n) {
			if least < 0 {
				least = n
			}
			most = n
		}
	}
	hint := fmt.Sprintf("%s --help says what it takes", path)
	var what string
	switch {
	case least < 0:
		return usageErrorf("%s: %v (%s)", path, err, hint)
	case most == 0:
		what = "no arguments"
		hint = fmt.Sprintf("its options are flags: %s --help lists them", path)
	case most == len(args)+1:
		what = fmt.Sprintf("at least %d %s", least, "argument"+plural(least))
	case least == 0:
		what = fmt.Sprintf("at most %d %s", most, "argument"+plural(most))
	case least == most:
		what = fmt.Sprintf("%d %s", least, "argument"+plural(least))
	default:
		what = fmt.Sprintf("%d to %d arguments", least, most)
	}
	return usageErrorf("%s takes %s, %s (%s)", path, what, got, hint)
}
