package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
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
the match level of each hunk. A change whose file no longer holds it (reset with
git checkout or smith session reset, or edited since) is listed stale.

A pending change can be decided here as in an editor: show prints it, apply and
reject take all its hunks or those given with --hunks.`,
		Example: `  smith changes
  smith changes --status applied
  smith changes --json
  smith changes show c3
  smith changes apply c3 --hunks 1,3
  smith changes reject c3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all := changeStatuses(); filter.Status != "" && !slices.Contains(all, filter.Status) {
				return usageErrorf("unknown status %q (use %s or %s)", filter.Status, strings.Join(all[:len(all)-1], ", "), all[len(all)-1])
			}
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
					if by := filterFlags(filter); by != "" {
						fmt.Fprintf(s.Err, "no change matches %s (smith changes lists them all)\n", by)
						return nil
					}
					fmt.Fprintln(s.Err, "no changes recorded in this workspace")
					return nil
				}
				tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSTATUS\tKIND\tPATH\tHUNKS")
				for _, c := range cs {
					hunks := hunkSummary(c.Hunks)
					if wholeWrite(c) {
						hunks = "whole file"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, c.Status, shownKind(c), c.Path, hunks)
				}
				return tw.Flush()
			})
		},
	}
	f.registerLocal(cmd)
	cmd.AddCommand(newChangesShowCmd(s), newChangesDecideCmd(s, "apply"), newChangesDecideCmd(s, "reject"))
	cmd.Flags().StringVar(&filter.Status, "status", "", "only changes with this status")
	cmd.Flags().StringVarP(&filter.DialogID, "dialog", "d", "", "only changes of this dialog")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// changeStatuses are the statuses smith changes --status takes, in the
// order a change's life goes through them.
func changeStatuses() []string {
	return []string{daemon.StatusPending, daemon.StatusApplied, daemon.StatusAppliedUpstream,
		daemon.StatusRejected, daemon.StatusConflict, daemon.StatusStale, daemon.StatusUndone}
}

// filterFlags says a listing's filter as the flags that set it.
func filterFlags(f daemon.ChangeFilter) string {
	var by []string
	if f.Status != "" {
		by = append(by, "--status "+f.Status)
	}
	if f.DialogID != "" {
		by = append(by, "-d "+f.DialogID)
	}
	return strings.Join(by, " ")
}

// wholeWrite reports whether c is a whole file written without a diff
// (AgentSmithy's write_to_file, reported by a file_edit without diff): the
// protocol calls it modify, but nothing says the file existed before, and
// smith never saw it, so there are no hunks to show.
func wholeWrite(c daemon.Change) bool {
	return c.Kind == protocol.ChangeModify && len(c.Hunks) == 0 && c.Diff == ""
}

// shownKind is the kind a person reads: "write" for a whole-file write,
// which claims no earlier version, else the protocol's kind. --json keeps
// the protocol's value.
func shownKind(c daemon.Change) string {
	if wholeWrite(c) {
		return "write"
	}
	return string(c.Kind)
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
applied change when omitted), also one written by smith apply. Works across
restarts; refuses when the file was changed since, so nothing you wrote
afterwards is lost. A file an AgentSmithy server wrote itself has no bytes
before in smith's journal: undo then says what can be done instead (smith
changes reject, smith session reset or restore).`,
		Example: `  smith undo
  smith undo c3`,
		Args: argsUpTo(0, 1, "at most one CHANGE", "smith changes lists them"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return withEngine(cmd, s, &f, func(ctx context.Context, b backend) error {
				c, err := b.Undo(ctx, id)
				if err != nil && id != "" && errors.Is(err, daemon.ErrUnsupported) {
					if c, ferr := findChange(ctx, b, id); ferr == nil {
						return fmt.Errorf("%w\n%s", err, upstreamUndoAdvice(c))
					}
				}
				if err != nil {
					return err
				}
				fmt.Fprintln(s.Err, undoneLine(c))
				return nil
			})
		},
	}
	f.registerLocal(cmd)
	return cmd
}

// undoneLine says what an undo took back: its change, or every change
// and file of the group it undid (Change.Restored).
func undoneLine(c *daemon.Change) string {
	var ids, paths []string
	for _, r := range c.Restored {
		if !slices.Contains(ids, r.ChangeID) {
			ids = append(ids, r.ChangeID)
		}
		paths = append(paths, r.Path)
	}
	if len(ids) < 2 {
		return fmt.Sprintf("undid %s: %s restored; %s is now %s", c.ID, c.Path, c.ID, c.Status)
	}
	return fmt.Sprintf("undid %d changes applied together (%s): %s restored; they are now %s",
		len(ids), listShort(ids), listShort(paths), c.Status)
}

// listShort joins items, eliding the middle of a long list.
func listShort(items []string) string {
	const most = 6
	if len(items) > most {
		return strings.Join(items[:most-2], ", ") + fmt.Sprintf(", … (%d more), ", len(items)-most+1) + items[len(items)-1]
	}
	return strings.Join(items, ", ")
}

func newStatusCmd(s *IOStreams) *cobra.Command {
	var f settingsFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the upstream, dialect, reachability and workspace",
		Long: `Print what smith would use in this workspace and whether it works: the
workspace root, the upstream (smith config tells where it came from), the
dialect, whether the upstream is reachable and what its /health says, the
current dialog, the number of pending changes, smith's state folder, and the
smith serve the command went through, if one holds the workspace.

It exits 3 when the upstream is not reachable (or serves another workspace), so
scripts can wait for it: until smith status >/dev/null; do sleep 1; done`,
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
				switch {
				case !st.Reachable && strings.Contains(st.Error, "--upstream"):
					// The error says what to do already (a server of
					// another workspace answered; smith will not use it).
					return &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("upstream %s: %s", st.Upstream, st.Error)}
				case !st.Reachable:
					return &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("upstream %s is not reachable: %s (%s)", st.Upstream, st.Error, unreachableAdvice)}
				}
				return nil
			})
		},
	}
	f.registerNoTurn(cmd)
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
		{"server", serverLine(st.Server)},
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

// findChange returns change id as the engine lists it now.
func findChange(ctx context.Context, b backend, id string) (*daemon.Change, error) {
	cs, err := b.Changes(ctx, daemon.ChangeFilter{})
	if err != nil {
		return nil, err
	}
	for i := range cs {
		if cs[i].ID == id {
			return &cs[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %s", daemon.ErrUnknownChange, id) // upstreamExit adds where to list them
}

func newChangesShowCmd(s *IOStreams) *cobra.Command {
	var f settingsFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show CHANGE",
		Short: "Print a change: its status, its hunks and where they are, and its diff",
		Long: `Print CHANGE as the engine sees it now: its status, each hunk with its status,
match level and lines in the file, and the whole change as a forward diff
(original to result, also for a change already written).`,
		Example: `  smith changes show c3
  smith changes show c3 --json`,
		Args: argsUpTo(1, 1, "one CHANGE", "smith changes lists them"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEngine(cmd, s, &f, func(ctx context.Context, b backend) error {
				c, err := findChange(ctx, b, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(s, c)
				}
				fmt.Fprintf(s.Out, "%s · %s %s · %s\n", c.ID, shownKind(*c), c.Path, c.Status)
				if c.Reason != "" {
					fmt.Fprintf(s.Out, "  %s\n", c.Reason)
				}
				if wholeWrite(*c) && c.Status == daemon.StatusAppliedUpstream {
					fmt.Fprintln(s.Out, "  the server wrote the whole file; smith never saw it before, not even whether it existed\n"+
						"  (smith session lists the server's unapproved writes, smith session reset gives them up)")
				}
				for _, h := range c.Hunks {
					match := ""
					if h.Match != "" {
						match = ", match " + h.Match + offsetNote(h.Offset)
					}
					fmt.Fprintf(s.Out, "  %s %s, %s%s\n", h.ID, h.Status, hunkLines(h), match)
					if h.Reason != "" {
						fmt.Fprintf(s.Out, "    %s\n", h.Reason)
					}
				}
				fmt.Fprint(s.Out, colorDiff(s.ColorOut(), ensureNL(c.Diff)))
				return nil
			})
		},
	}
	f.registerLocal(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// hunkLines says where a hunk is in the file now: a written one by its
// new lines, any other by its old ones.
func hunkLines(h daemon.Hunk) string {
	start, n := h.OldStart, h.OldLines
	if h.Status == daemon.StatusApplied || h.Status == daemon.StatusAppliedUpstream {
		start, n = h.NewStart, h.NewLines
	}
	switch {
	case n == 0:
		return fmt.Sprintf("after line %d", start)
	case n == 1:
		return fmt.Sprintf("line %d", start)
	}
	return fmt.Sprintf("lines %d-%d", start, start+n-1)
}

// newChangesDecideCmd is smith changes apply and smith changes reject:
// the engine calls an editor makes for the same decision.
func newChangesDecideCmd(s *IOStreams, verb string) *cobra.Command {
	var f settingsFlags
	var hunks string
	short := "Apply a pending change, or some of its hunks"
	long := `Apply CHANGE (all its pending hunks, or those given with --hunks) to the file:
atomically on disk, or through the editor that has it open when a smith serve
holds the workspace. smith undo takes it back.`
	if verb == "reject" {
		short = "Reject a change, or some of its hunks"
		long = `Reject CHANGE (all its hunks, or those given with --hunks). Pending hunks are
only marked rejected; hunks already written (applied, or written by the server
itself) are taken back out of the file, verified.`
	}
	cmd := &cobra.Command{
		Use:     verb + " CHANGE",
		Short:   short,
		Long:    long,
		Example: fmt.Sprintf("  smith changes %[1]s c3\n  smith changes %[1]s c3 --hunks 1,3\n  smith changes %[1]s c3 --hunks h2", verb),
		Args:    argsUpTo(1, 1, "one CHANGE", "smith changes lists them"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := changeHunkIDs(hunks)
			if err != nil {
				return usageErrorf("--hunks: %v", err)
			}
			return withEngine(cmd, s, &f, func(ctx context.Context, b backend) error {
				var c, before *daemon.Change
				if len(ids) == 0 {
					before, _ = findChange(ctx, b, args[0])
				}
				if verb == "reject" && before != nil && before.Status == daemon.StatusRejected {
					// Rejecting a rejected change does nothing; say so
					// rather than "rejected every hunk".
					fmt.Fprintf(s.Err, "%s (%s) is rejected already; nothing changed\n", before.ID, before.Path)
					return nil
				}
				if verb == "apply" {
					c, err = b.Apply(ctx, args[0], ids)
				} else {
					c, err = b.Reject(ctx, args[0], ids)
				}
				if err != nil {
					return err
				}
				done := map[string]string{"apply": "applied", "reject": "rejected"}[verb]
				which := "every hunk"
				var left []daemon.Hunk // not decided by this call
				if len(ids) > 0 {
					which = strings.Join(ids, ", ")
				} else if before != nil && len(before.Hunks) == len(c.Hunks) {
					var now []string
					for i, h := range c.Hunks {
						switch {
						case h.Status == done && before.Hunks[i].Status != done:
							now = append(now, h.ID)
						case h.Status == daemon.StatusPending || h.Status == daemon.StatusConflict || h.Status == daemon.StatusUndone:
							left = append(left, h)
						}
					}
					if len(left) > 0 && len(now) > 0 {
						which = strings.Join(now, ", ")
					}
				}
				fmt.Fprintf(s.Err, "%s %s of %s (%s); %s is now %s\n", done, which, c.ID, c.Path, c.ID, c.Status)
				for _, h := range left {
					// An apply of "all" takes the hunks that match; say
					// which did not and why, not "every hunk".
					why := ""
					if h.Reason != "" {
						why = ": " + h.Reason
					}
					fmt.Fprintf(s.Err, "%s was not %s: it is %s%s\n", h.ID, done, h.Status, why)
				}
				if verb == "apply" {
					fmt.Fprintf(s.Err, "undo with: smith undo %s\n", c.ID)
				}
				return nil
			})
		},
	}
	f.registerLocal(cmd)
	cmd.Flags().StringVar(&hunks, "hunks", "", "only these hunks: 1,3 or h1,h3 (smith changes show lists them)")
	return cmd
}

// changeHunkIDs reads --hunks of smith changes: "1,3,5-7" or "h1,h3".
func changeHunkIDs(spec string) ([]string, error) {
	spec = strings.ReplaceAll(strings.ReplaceAll(spec, "h", ""), "H", "")
	ns, err := parseHunkIDs(spec)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, n := range ns {
		ids = append(ids, "h"+strconv.Itoa(n))
	}
	return ids, nil
}

// upstreamUndoAdvice says what can be done with change c, which the
// upstream wrote itself, instead of an undo: reject its hunks when it has
// them, or give up or roll back the server's writes with its session.
func upstreamUndoAdvice(c *daemon.Change) string {
	var b strings.Builder
	dialog := ""
	if c.DialogID != "" {
		dialog = " --dialog " + c.DialogID
	}
	if len(c.Hunks) > 0 {
		fmt.Fprintf(&b, "  to take its hunks back out of %s:   smith changes reject %s\n", c.Path, c.ID)
	}
	fmt.Fprintf(&b, "  to give up everything the server wrote in the dialog:   smith session reset%s\n", dialog)
	fmt.Fprintf(&b, "  to go back to a checkpoint:   smith session checkpoints%s, then smith session restore CHECKPOINT%s", dialog, dialog)
	return b.String()
}

// serverLine describes the upstream's health answer in one line.
func serverLine(h *protocol.Health) string {
	if h == nil {
		return ""
	}
	b, err := json.Marshal(h)
	if err != nil {
		return ""
	}
	return string(b)
}
