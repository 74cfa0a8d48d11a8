package main

import (
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
