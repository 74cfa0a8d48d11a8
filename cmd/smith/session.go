package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/protocol"
)

// sessionOptions are smith session's flags.
type sessionOptions struct {
	dialog string
	json   bool
	yes    bool
}

func newSessionCmd(s *IOStreams) *cobra.Command {
	var f settingsFlags
	o := &sessionOptions{}
	cmd := &cobra.Command{
		Use:   "session [status|checkpoints|approve|reset|restore CHECKPOINT]",
		Short: "Review, approve or undo what an AgentSmithy server wrote itself",
		Long: `An AgentSmithy server writes files itself and keeps every turn's writes in a
session, per dialog, until they are approved. smith shows what the server wrote
and lets you reject hunks of a diff it sent, but a whole file the server wrote
(write_to_file) can only be taken back this way:

  status       the unapproved files of the dialog, with their line counts (default)
  checkpoints  the dialog's checkpoints, oldest first: one before each turn
  approve      accept them: a new session starts from here
  reset        give them all up: the server restores the approved state (it
               keeps a checkpoint of what it discards first)
  restore      roll the workspace back to a checkpoint of the dialog (smith
               session checkpoints lists them)

reset and restore rewrite files: they ask first on a terminal, and need --yes
otherwise. The dialog is the current one unless --dialog names another. Other
upstreams have no sessions: the command exits 1 saying so.`,
		Example: `  smith session
  smith session approve
  smith session checkpoints
  smith session reset --yes
  smith session restore 9692df864aa109f4fbac5354619c13dd612b84ae
  smith session --json -d 5b1f0c2e8d7a4e3f9a1b2c3d4e5f6a7b`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sub := "status"
			if len(args) > 0 {
				sub, args = args[0], args[1:]
			}
			switch {
			case sub != "status" && sub != "checkpoints" && sub != "approve" && sub != "reset" && sub != "restore":
				return usageErrorf("unknown session subcommand %q (use status, checkpoints, approve, reset or restore)", sub)
			case sub == "restore" && (len(args) != 1 || strings.TrimSpace(args[0]) == ""):
				return usageErrorf("smith session restore needs the CHECKPOINT to go back to (smith session checkpoints lists them)")
			case sub != "restore" && len(args) != 0:
				return usageErrorf("smith session %s takes no argument, got %q", sub, args[0])
			}
			return withEngine(cmd, s, &f, func(ctx context.Context, b backend) error {
				return runSession(ctx, s, b, o, sub, args)
			})
		},
	}
	f.registerNoTurn(cmd)
	cmd.Flags().StringVarP(&o.dialog, "dialog", "d", "", "the dialog `ID` (default: the current one)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the server's answer as JSON")
	cmd.Flags().BoolVarP(&o.yes, "yes", "y", false, "reset or restore without asking")
	return cmd
}

func runSession(ctx context.Context, s *IOStreams, b backend, o *sessionOptions, sub string, args []string) error {
	// The engine resolves "" to the current dialog itself; asking for its
	// id here only to print it would cost a round trip to the upstream.
	dialog := o.dialog
	name := "the current dialog"
	if dialog != "" {
		name = "dialog " + dialog
	}
	var res any
	var err error
	switch sub {
	case "status":
		res, err = b.Session(ctx, dialog)
	case "checkpoints":
		res, err = b.Checkpoints(ctx, dialog)
	case "approve":
		res, err = b.Approve(ctx, dialog)
	case "reset", "restore":
		what := "the server restores the files of " + name + " to their approved state; their unapproved edits are discarded (the server keeps a checkpoint of them)"
		if sub == "restore" {
			what = "the server rolls the workspace back to checkpoint " + args[0] + " of " + name
		}
		if err := confirm(s, o.yes, sub, what); err != nil {
			return err
		}
		if sub == "reset" {
			res, err = b.Reset(ctx, dialog)
		} else {
			res, err = b.Restore(ctx, dialog, args[0])
			if errors.Is(err, protocol.ErrNotFound) {
				err = fmt.Errorf("%w (smith session checkpoints lists the ones %s has)", err, name)
			}
		}
	}
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(s, res)
	}
	return printSession(s, name, res)
}

// confirm asks before a command that rewrites files: on a terminal it
// waits for a yes; elsewhere it wants --yes, so that a script never blocks
// and never rewrites files by accident.
func confirm(s *IOStreams, yes bool, sub, what string) error {
	if yes {
		return nil
	}
	if !s.InTTY {
		return usageErrorf("smith session %s: %s; run it again with --yes to go ahead", sub, what)
	}
	fmt.Fprintf(s.Err, "%s. Go ahead? [y/N] ", what)
	line, _ := bufio.NewReader(s.In).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("smith session %s: nothing done", sub)}
	}
	return nil
}

// printSession renders the server's answer for a person.
func printSession(s *IOStreams, name string, res any) error {
	switch r := res.(type) {
	case *protocol.SessionStatus:
		st := r
		if !st.HasUnapproved || len(st.ChangedFiles) == 0 {
			fmt.Fprintf(s.Out, "%s: nothing unapproved\n", name)
			return nil
		}
		since := "the dialog's start"
		if st.LastApprovedAt != nil {
			since = "the approval of " + *st.LastApprovedAt
		}
		fmt.Fprintf(s.Out, "%s: %d unapproved file(s) since %s\n", name, len(st.ChangedFiles), since)
		for _, f := range st.ChangedFiles {
			mark := map[string]string{"added": "A", "modified": "M", "deleted": "D"}[f.Status]
			if mark == "" {
				mark = "?"
			}
			fmt.Fprintf(s.Out, "  %s %s (+%d -%d)\n", mark, f.Path, f.Additions, f.Deletions)
		}
		fmt.Fprintln(s.Err, "approve with: smith session approve; give them up with: smith session reset")
	case *protocol.CheckpointList:
		l := r
		if len(l.Checkpoints) == 0 {
			fmt.Fprintf(s.Out, "%s: no checkpoints\n", name)
			return nil
		}
		for _, c := range l.Checkpoints {
			fmt.Fprintf(s.Out, "%s  %s\n", c.CommitID, c.Message)
		}
		fmt.Fprintln(s.Err, "go back to one with: smith session restore CHECKPOINT")
	case *protocol.ApproveResult:
		if r.CommitsApproved == 0 {
			fmt.Fprintf(s.Out, "%s: nothing to approve\n", name)
			return nil
		}
		fmt.Fprintf(s.Out, "%s: approved %d checkpoint(s) (%s); new session %s\n", name, r.CommitsApproved, r.ApprovedCommit, r.NewSession)
	case *protocol.ResetResult:
		fmt.Fprintf(s.Out, "%s: reset to %s; new session %s\n", name, r.ResetTo, r.NewSession)
		if r.PreResetCheckpoint != nil {
			fmt.Fprintf(s.Err, "what was discarded is kept as checkpoint %s: smith session restore %s\n", *r.PreResetCheckpoint, *r.PreResetCheckpoint)
		}
	case *protocol.RestoreResult:
		fmt.Fprintf(s.Out, "%s: restored to %s (the restore itself is checkpoint %s)\n", name, r.RestoredTo, r.NewCheckpoint)
	}
	return nil
}
