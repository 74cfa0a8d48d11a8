package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/daemon"
)

func newChangesCmd(s *IOStreams) *cobra.Command {
	var f settingsFlags
	var filter daemon.ChangeFilter
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "changes",
		Short: "List change proposals and their status",
		Long: `List the changes smith recorded in this workspace, oldest first, with their
status (pending, applied, appliedUpstream, rejected, conflict, stale, undone) and
the match level of each hunk.`,
		Example: `  smith changes
  smith changes --status applied
  smith changes --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEngine(cmd, s, &f, func(ctx context.Context, b backend) error {
				cs, err := b.Changes(ctx, filter)
				if err != nil {
					return err
				}
				if asJSON {
					if cs == nil {
						cs = []daemon.Change{}
					}
					return printJSON(s, cs)
				}
				if len(cs) == 0 {
					fmt.Fprintln(s.Err, "no changes recorded in this workspace")
					return nil
				}
				tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSTATUS\tKIND\tPATH\tHUNKS")
				for _, c := range cs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, c.Status, c.Kind, c.Path, hunkSummary(c.Hunks))
				}
				return tw.Flush()
			})
		},
	}
	f.registerLocal(cmd)
	cmd.Flags().StringVar(&filter.Status, "status", "", "only changes with this status")
	cmd.Flags().StringVarP(&filter.DialogID, "dialog", "d", "", "only changes of this dialog")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func hunkSummary(hs []daemon.Hunk) string {
	out := ""
	for i, h := range hs {
		if i > 0 {
			out += " "
		}
		out += h.ID + ":" + h.Status
		if h.Match != "" && h.Match != "exact" {
			out += "(" + h.Match + ")"
		}
	}
	return out
}

func newUndoCmd(s *IOStreams) *cobra.Command {
	var f settingsFlags
	cmd := &cobra.Command{
		Use:   "undo [CHANGE]",
		Short: "Undo a change that smith applied",
		Long: `Restore the exact bytes a file had before smith applied CHANGE (the most recent
applied change when omitted). Works across restarts; refuses when the file was
changed since, so nothing you wrote afterwards is lost.`,
		Example: `  smith undo
  smith undo c3`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return withEngine(cmd, s, &f, func(ctx context.Context, b backend) error {
				c, err := b.Undo(ctx, id)
				if err != nil {
					return err
				}
				fmt.Fprintf(s.Err, "undid %s: %s restored\n", c.ID, c.Path)
				return nil
			})
		},
	}
	f.registerLocal(cmd)
	return cmd
}

func newStatusCmd(s *IOStreams) *cobra.Command {
	var f settingsFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the upstream, dialect, reachability and workspace",
		Example: `  smith status
  smith status --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEngine(cmd, s, &f, func(ctx context.Context, b backend) error {
				st, err := b.Status(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					if err := printJSON(s, st); err != nil {
						return err
					}
				} else {
					printStatus(s, st, b.Attached())
				}
				if !st.Reachable {
					return &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("upstream %s is not reachable: %s (start one with 'smith upstream', or set --upstream)", st.Upstream, st.Error)}
				}
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printStatus prints st; attached is the socket of the smith serve the
// command went through ("" when it opened the engine itself).
func printStatus(s *IOStreams, st daemon.Status, attached string) {
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	reach := "yes"
	if !st.Reachable {
		reach = "no"
	}
	dialect := st.Dialect
	if dialect == "" {
		dialect = "auto"
	}
	rows := [][2]string{
		{"workspace", st.Workspace},
		{"upstream", st.Upstream},
		{"dialect", dialect},
		{"reachable", reach},
		{"server", string(st.Server)},
		{"current dialog", st.CurrentDialog},
		{"pending changes", fmt.Sprint(st.Pending)},
		{"state", st.StateDir},
		{"smith serve", attached},
	}
	for _, r := range rows {
		if r[1] == "" {
			r[1] = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	tw.Flush()
}
