package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// reviewChanges shows each change of the turn and applies, rejects or
// leaves its hunks as --yes, --dry-run, --json or the user's answers say.
// It returns an ExitError(1) when a change conflicted.
func (cs *chatSession) reviewChanges(ctx context.Context, changes []daemon.Change) error {
	if len(changes) == 0 {
		return nil
	}
	s, o := cs.s, cs.o
	quiet := o.json // --json keeps stdout for JSON
	rv := &reviewer{cs: cs, all: o.yes}
	var conflicts []string
	var left []daemon.Change // left pending: the change a quit stopped at and those after it
	for i, c := range changes {
		if c.Status == daemon.StatusConflict || c.Status == daemon.StatusRejected {
			// The engine's reason often starts with the file, which
			// these lines name already.
			why := strings.TrimPrefix(c.Reason, c.Path+": ")
			conflicts = append(conflicts, fmt.Sprintf("%s (%s): %s", c.Path, c.ID, why))
			if !quiet {
				fmt.Fprintf(s.Err, "%s %s %s: %s\n", style(s.ColorErr(), ansiRed, c.Status+":"), c.ID, c.Path, why)
			}
			continue
		}
		if o.json && !o.yes {
			continue
		}
		if !quiet {
			cs.printChangeHeader(c)
		}
		if o.dryRun {
			if !quiet {
				cs.printPreview(ctx, c, nil)
			}
			continue
		}
		if err := rv.review(ctx, c, quiet); err != nil {
			conflicts = append(conflicts, err.Error())
		}
		if rv.quit {
			if rv.stopped {
				left = append(left, c)
			}
			for _, c := range changes[i+1:] {
				if c.Status != daemon.StatusConflict && c.Status != daemon.StatusRejected {
					left = append(left, c)
				}
			}
			break
		}
	}
	if len(rv.applied) > 0 && !quiet {
		fmt.Fprintf(s.Err, "applied %s; undo with: smith undo %s\n", strings.Join(rv.applied, ", "), rv.applied[len(rv.applied)-1])
	}
	if len(left) > 0 {
		cs.printPending(left, rv)
	}
	switch {
	case rv.signal == syscall.SIGTERM:
		return &ExitError{Code: ExitTerminated, Silent: true}
	case rv.signal != nil:
		return &ExitError{Code: ExitInterrupted, Silent: true}
	case len(conflicts) > 0:
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%d change(s) not applied:\n  %s", len(conflicts), strings.Join(conflicts, "\n  "))}
	case rv.eof && len(left) > 0:
		return &ExitError{Code: ExitPending, Silent: true}
	}
	return nil
}

// printPending says which changes were left pending and how to act on
// them: nothing else tells a script that no answer was given.
func (cs *chatSession) printPending(left []daemon.Change, rv *reviewer) {
	s := cs.s
	why := "you quit the review"
	switch {
	case rv.signal != nil:
		why = "the review was interrupted (" + rv.signal.String() + "); nothing more was applied"
	case rv.eof && !s.InTTY:
		why = "standard input ended before every hunk was answered (no terminal, and neither --yes nor --dry-run)"
	case rv.eof:
		why = "the input ended before every hunk was answered"
	}
	fmt.Fprintf(s.Err, "%d change(s) left pending: %s.\n", len(left), why)
	for _, c := range left {
		fmt.Fprintf(s.Err, "  %s %s: apply it with: smith changes apply %s   (reject: smith changes reject %s)\n", c.ID, c.Path, c.ID, c.ID)
	}
	fmt.Fprintln(s.Err, "  smith changes lists them; smith chat --yes applies every change without asking.")
}

func (cs *chatSession) printChangeHeader(c daemon.Change) {
	s := cs.s
	verb := "proposes"
	if c.Status == daemon.StatusAppliedUpstream {
		verb = "already wrote"
	}
	head := style(s.ColorOut(), ansiBold, "Change "+c.ID+":")
	if c.Status == daemon.StatusAppliedUpstream && len(c.Hunks) == 0 && (wholeWrite(c) || c.Kind == protocol.ChangeDelete) {
		// A whole-file write: smith cannot tell what was there before, not
		// even whether the file existed, so no kind and no hunks. A
		// deletion likewise has no text smith saw.
		if c.Kind == protocol.ChangeDelete {
			fmt.Fprintf(s.Out, "\n%s the agent already deleted %s\n", head, c.Path)
		} else {
			fmt.Fprintf(s.Out, "\n%s the agent already wrote %s (the whole file)\n", head, c.Path)
		}
		fmt.Fprintln(s.Err, "  smith never saw it before, so it cannot show or reverse it here:\n"+
			"  smith session lists the server's unapproved writes, smith session reset gives them up")
		return
	}
	fmt.Fprintf(s.Out, "\n%s the agent %s %s %s (%d hunk%s)\n", head, verb, c.Kind, c.Path, len(c.Hunks), plural(len(c.Hunks)))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// printPreview prints the diff of the given hunks (all when nil) as the
// engine gives it: forward, also for a change already written.
func (cs *chatSession) printPreview(ctx context.Context, c daemon.Change, hunks []string) {
	p, err := cs.eng.Preview(ctx, c.ID, hunks)
	if err != nil {
		fmt.Fprintf(cs.s.Err, "cannot preview %s: %v\n", c.ID, err)
		return
	}
	fmt.Fprint(cs.s.Out, colorDiff(cs.s.ColorOut(), ensureNL(p.Diff)))
}

func ensureNL(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// reviewer walks the hunks of the turn's changes with the user.
type reviewer struct {
	cs      *chatSession
	all     bool // "a" was answered, or --yes
	quit    bool
	stopped bool      // the quit left hunks of the current change unanswered
	eof     bool      // the quit came from the end of the input
	signal  os.Signal // a signal ended the review: nothing more is applied
	applied []string
}

const hunkHelp = `y - apply this hunk (keep it, if the server already wrote it)
n - reject this hunk (reverse it, if the server already wrote it)
a - apply this hunk and all remaining hunks
q - quit; leave this hunk and the remaining ones pending
v - view the whole change
? - print help
`

func (rv *reviewer) review(ctx context.Context, c daemon.Change, quiet bool) error {
	cs := rv.cs
	s := cs.s
	var yes, no []string
	upstream := c.Status == daemon.StatusAppliedUpstream
	for i, h := range c.Hunks {
		if h.Status != daemon.StatusPending && h.Status != daemon.StatusAppliedUpstream {
			continue
		}
		if !quiet {
			cs.printPreview(ctx, c, []string{h.ID})
			fmt.Fprintf(s.Err, "%s\n", style(s.ColorErr(), ansiDim, fmt.Sprintf("(hunk %d/%d, match: %s%s)", i+1, len(c.Hunks), h.Match, offsetNote(h.Offset))))
		}
		if rv.all {
			yes = append(yes, h.ID)
			continue
		}
		q := fmt.Sprintf("Apply this hunk of %s [y,n,a,q,v,?]? ", c.Path)
		if upstream {
			q = fmt.Sprintf("Keep this hunk of %s [y,n,a,q,v,?]? ", c.Path)
		}
	ask:
		ans, err := cs.readAnswer(q)
		var sig *signalError
		switch {
		case errors.As(err, &sig):
			// Like Ctrl-C: the answers so far are dropped, nothing more
			// is applied.
			rv.quit, rv.stopped, rv.signal = true, true, sig.sig
			return nil
		case errors.Is(err, io.EOF):
			rv.quit, rv.eof = true, true
		case err != nil:
			return err
		}
		switch strings.ToLower(strings.TrimSpace(ans)) {
		case "y", "yes":
			yes = append(yes, h.ID)
		case "n", "no":
			no = append(no, h.ID)
		case "a", "all":
			rv.all = true
			yes = append(yes, h.ID)
		case "q", "quit", "":
			if !rv.quit && strings.TrimSpace(ans) == "" {
				goto ask // an empty line asks again, like git add -p
			}
			rv.quit = true
			rv.stopped = true
		case "v", "view":
			cs.printPreview(ctx, c, nil)
			goto ask
		default:
			fmt.Fprint(s.Err, hunkHelp)
			goto ask
		}
		if rv.quit {
			break
		}
	}
	return rv.decide(ctx, c, yes, no, upstream)
}

// signalError: SIGINT or SIGTERM arrived while a prompt waited.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return "interrupted by " + e.sig.String() }

// readAnswer reads one answer; SIGINT or SIGTERM (sent with kill, or a
// Ctrl-C the terminal turned into a signal) ends the wait at once, with
// the terminal restored.
func (cs *chatSession) readAnswer(prompt string) (string, error) {
	line, err := cs.readLineUntil(prompt, os.Interrupt, syscall.SIGTERM)
	if errors.Is(err, errCtrlC) {
		return "", &signalError{sig: os.Interrupt}
	}
	return line, err
}

// readLineUntil reads one line; any of sigs arriving meanwhile ends the
// wait at once with a *signalError, the terminal restored. The reader is
// abandoned, still blocked on the input: callers end the command then.
func (cs *chatSession) readLineUntil(prompt string, sigs ...os.Signal) (string, error) {
	arrived := make(chan os.Signal, 1)
	signal.Notify(arrived, sigs...)
	defer signal.Stop(arrived)
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := cs.input.ReadLine(prompt)
		got <- answer{line, err}
	}()
	select {
	case a := <-got:
		return a.line, a.err
	case sig := <-arrived:
		if t, ok := cs.input.(*ttyInput); ok {
			t.restore()
		}
		fmt.Fprintln(cs.s.Err)
		return "", &signalError{sig: sig}
	}
}

// decide applies the hunks answered yes and rejects those answered no. For
// a change the server already wrote, "yes" needs nothing.
func (rv *reviewer) decide(ctx context.Context, c daemon.Change, yes, no []string, upstream bool) error {
	cs := rv.cs
	if len(yes) > 0 && !upstream {
		got, err := cs.eng.Apply(ctx, c.ID, yes)
		if err != nil {
			return fmt.Errorf("%s (%s): %v", c.Path, c.ID, err)
		}
		rv.applied = append(rv.applied, got.ID)
		fmt.Fprintf(cs.s.Err, "%s %s: %d hunk%s applied\n", style(cs.s.ColorErr(), ansiGreen, "✓"), c.Path, len(yes), plural(len(yes)))
	}
	if len(no) > 0 {
		if _, err := cs.eng.Reject(ctx, c.ID, no); err != nil {
			return fmt.Errorf("%s (%s): %v", c.Path, c.ID, err)
		}
		fmt.Fprintf(cs.s.Err, "✗ %s: %d hunk%s rejected\n", c.Path, len(no), plural(len(no)))
	}
	return nil
}

func offsetNote(off int) string {
	if off == 0 {
		return ""
	}
	return fmt.Sprintf(", offset %+d", off)
}
