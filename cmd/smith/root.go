package main

import (
	"github.com/spf13/cobra"
)

func newRootCmd(s *IOStreams) *cobra.Command {
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
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(
		newVersionCmd(s),
		newReplayCmd(s),
		newApplyCmd(s),
		newUpstreamCmd(s),
		newServeCmd(s),
		newChatCmd(s),
		newDialogsCmd(s),
		newHistoryCmd(s),
		newChangesCmd(s),
		newUndoCmd(s),
		newStatusCmd(s),
		newConfigCmd(s),
		newDemoCmd(s),
	)
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
