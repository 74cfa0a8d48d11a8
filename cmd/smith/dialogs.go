package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/daemon"
)

func newDialogsCmd(s *IOStreams) *cobra.Command {
	var f settingsFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "dialogs [list|new [TITLE]|rename ID TITLE|rm ID|use ID]",
		Short: "List, create, rename, delete or select dialogs",
		Long: `Manage the dialogs of the upstream (AgentSmithy keeps them on the server; for
other dialects smith keeps its own). Without a subcommand, list them; the current
dialog is marked with '*'.`,
		Example: `  smith dialogs
  smith dialogs new "refactor the store"
  smith dialogs rename 5b1f0c2e "store refactor"
  smith dialogs use 5b1f0c2e8d7a4e3f9a1b2c3d4e5f6a7b
  smith dialogs rm 5b1f0c2e8d7a4e3f9a1b2c3d4e5f6a7b`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sub := "list"
			if len(args) > 0 {
				sub, args = args[0], args[1:]
			}
			// The arguments of each subcommand: how many, and as its usage says them.
			want := map[string]struct {
				least, most int
				usage       string
			}{"list": {0, 0, ""}, "ls": {0, 0, ""}, "new": {0, 1, " [TITLE]"}, "rename": {2, 2, " ID TITLE"}, "rm": {1, 1, " ID"}, "delete": {1, 1, " ID"}, "use": {1, 1, " ID"}}
			n, ok := want[sub]
			if !ok {
				return usageErrorf("unknown dialogs subcommand %q (use list, new, rename, rm or use)", sub)
			}
			if len(args) > n.most && strings.Contains(n.usage, "TITLE") {
				// A title of several words the shell split: say how to
				// keep it one argument.
				title := strings.Join(args[n.most-1:], " ")
				cmdline := strings.TrimSpace("smith dialogs " + sub + " " + strings.Join(args[:n.most-1], " "))
				return usageErrorf("smith dialogs %s takes%s, got %d arguments: quote a title of several words, as in: %s %s", sub, n.usage, len(args), cmdline, titleQuote(title))
			}
			if len(args) < n.least || len(args) > n.most {
				return usageErrorf("smith dialogs %s takes%s, got %d argument(s) (see smith dialogs --help)", sub, orNothing(n.usage), len(args))
			}
			if strings.Contains(n.usage, "ID") && strings.TrimSpace(args[0]) == "" {
				// The server would be asked about a dialog "" and say
				// 'invalid dialog id ""', exit 1.
				return usageErrorf("smith dialogs %s: the ID is empty: give a dialog id, or a unique prefix of one (smith dialogs lists them)", sub)
			}
			return withEngine(cmd, s, &f, func(ctx context.Context, b backend) error {
				return runDialogs(ctx, s, b, sub, args, asJSON)
			})
		},
	}
	f.registerNoTurn(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func runDialogs(ctx context.Context, s *IOStreams, b backend, sub string, args []string, asJSON bool) error {
	switch sub {
	case "new":
		title := ""
		if len(args) == 1 {
			title = args[0]
		}
		d, err := b.NewDialog(ctx, title)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(s, d)
		}
		fmt.Fprintln(s.Out, d.ID)
		return nil
	case "rename":
		return b.RenameDialog(ctx, args[0], args[1])
	case "rm", "delete":
		return b.DeleteDialog(ctx, args[0])
	case "use":
		return b.SelectDialog(ctx, args[0])
	}
	ds, err := b.Dialogs(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if ds == nil {
			ds = []daemon.Dialog{}
		}
		return printJSON(s, ds)
	}
	if len(ds) == 0 {
		fmt.Fprintln(s.Err, "no dialogs yet; 'smith chat' starts one")
		return nil
	}
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tID\tTITLE\tUPDATED")
	for _, d := range ds {
		mark := ""
		if d.Current {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mark, d.ID, d.Title, d.UpdatedAt)
	}
	return tw.Flush()
}

// orNothing is " no arguments" for an empty usage, else the usage.
func orNothing(usage string) string {
	if usage == "" {
		return " no arguments"
	}
	return usage
}

// titleQuote quotes a title for the shell as a user would type it:
// in double quotes when nothing in it is special there.
func titleQuote(t string) string {
	if !strings.ContainsAny(t, "\"$`\\!") {
		return `"` + t + `"`
	}
	return shellQuote(t)
}
