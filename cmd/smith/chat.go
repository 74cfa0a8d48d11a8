package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/smith-dev/smith/config"
	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

type chatOptions struct {
	settings    settingsFlags
	dialog      string
	newDialog   bool
	noReasoning bool
	yes         bool
	dryRun      bool
	json        bool
}

func newChatCmd(s *IOStreams) *cobra.Command {
	o := &chatOptions{}
	cmd := &cobra.Command{
		Use:   "chat [MESSAGE]",
		Short: "Chat with the upstream agent about this repository",
		Long: `Send a message to the chat agent and stream its answer.

The workspace is the git top level of the current directory (or the directory).
Without MESSAGE, smith opens an interactive prompt with history; Ctrl-D leaves.

At the end of each turn every change the agent proposed is shown as a colored diff
with its match level, and you decide per hunk, like 'git add -p':
  y  apply this hunk (keep it, when the server already wrote it)
  n  reject this hunk (reverse it, when the server already wrote it)
  a  apply this hunk and every remaining one
  q  leave this and the remaining hunks pending (see 'smith changes')
  v  view the whole change
  ?  help

Ctrl-C during a turn cancels it (the partial answer is kept, nothing is half
written); a second Ctrl-C exits.

Beside an editor: when a smith serve holds the workspace, chat runs through it
(the same dialogs, changes and undo). Otherwise chat opens the workspace itself
and, while it runs, lets an editor's smith serve and other terminals join it.`,
		Example: `  smith chat "rename greet to welcome in hello.go"
  smith chat --yes "add a comment to main in main.go"
  smith chat --json --dry-run "create notes.txt with hello" > turn.ndjson
  smith chat -d 5b1f0c2e8d7a4e3f9a1b2c3d4e5f6a7b
  smith chat --new`,
		Args: argsUpTo(0, 1, "the MESSAGE as one argument", `quote it: smith chat "rename total to sum in calc.go"`),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.yes && o.dryRun {
				return usageErrorf("--yes and --dry-run contradict each other: pick one")
			}
			if o.newDialog && o.dialog != "" {
				return usageErrorf("--new and -d contradict each other: pick one")
			}
			if len(args) == 1 && strings.TrimSpace(args[0]) == "" {
				return usageErrorf("the message is empty: say what the agent should do, e.g. smith chat \"rename Foo to Bar in main.go\" (or run smith chat without a message for a prompt)")
			}
			set, err := o.settings.load(cmd, s)
			if err != nil {
				return err
			}
			return runChat(cmd.Context(), s, o, set, args)
		},
	}
	o.settings.register(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.dialog, "dialog", "d", "", "continue the dialog with this id")
	f.BoolVar(&o.newDialog, "new", false, "start a new dialog")
	f.BoolVar(&o.noReasoning, "no-reasoning", false, "hide the agent's reasoning")
	f.BoolVarP(&o.yes, "yes", "y", false, "apply every proposed change without asking")
	f.BoolVar(&o.dryRun, "dry-run", false, "apply nothing; show the proposed changes")
	f.BoolVar(&o.json, "json", false, "print newline-delimited JSON events and a summary (docs/cli.md); applies nothing without --yes")
	f.BoolVar(&o.settings.autoApply, "auto-apply", false, "apply proposals as they arrive")
	return cmd
}

// chatSession is one `smith chat` run: the workspace's engine (in this
// process or the running smith serve's) and the dialog the turns go to.
type chatSession struct {
	s      *IOStreams
	o      *chatOptions
	eng    backend
	input  lineInput
	dialog string
	width  int
	root   string
	// forced is the dialect the settings force, with where it was set
	// ("rag, set by --dialect"); "" when smith detects it.
	forced string
}

func runChat(ctx context.Context, s *IOStreams, o *chatOptions, set *config.Settings, args []string) error {
	// Asking smith's context whether it has ended installs its SIGINT and
	// SIGTERM handler (signalctx.go), as every start did before that was
	// lazy; the context is detached below, so nothing else would.
	_ = ctx.Err()
	// SIGINT is handled per turn (cancel, then exit); outside a turn it
	// keeps its default meaning.
	signal.Reset(os.Interrupt)
	ctx = context.WithoutCancel(ctx)
	eng, err := openBackend(ctx, s, set)
	if err != nil {
		return err
	}
	defer eng.Close()
	if o.dryRun {
		if err := refuseDryRun(ctx, eng); err != nil {
			return err
		}
	}
	if note := ignoredFlags(ctx, eng, set); note != "" {
		fmt.Fprintln(s.Err, "smith: note:", note)
	}
	if lb, ok := eng.(*localBackend); ok {
		// Nothing of it belongs in the user's terminal.
		lb.serveOthers(ctx, slog.New(slog.DiscardHandler))
	}
	cs := &chatSession{s: s, o: o, eng: eng, dialog: o.dialog, width: termWidth(s), root: set.Workspace}
	if v, _ := set.Lookup("dialect"); v.Value != "" && v.Value != "auto" && v.Origin != "" {
		cs.forced = v.Value + ", set by " + v.Origin
	}
	cs.input = newLineInput(s)
	if o.newDialog {
		d, err := eng.NewDialog(ctx, "")
		if err != nil {
			return upstreamExit(err)
		}
		cs.dialog = d.ID
	}
	if len(args) == 1 {
		return cs.turn(ctx, args[0])
	}
	if o.json {
		return usageErrorf("--json needs a MESSAGE argument")
	}
	via := "upstream " + protocol.RedactURL(set.Get("upstream"))
	if sock := eng.Attached(); sock != "" {
		via = "through the running smith serve (" + sock + ")"
	}
	fmt.Fprintln(s.Err, "smith chat — workspace "+set.Workspace+", "+via+". Ctrl-D leaves.")
	var last error
	for {
		// SIGTERM would otherwise only cancel smith's context, which this
		// loop detached from: at the prompt it ends the session (143).
		// SIGINT keeps its default meaning here, and a typed Ctrl-C is EOF.
		line, err := cs.readLineUntil("smith> ", syscall.SIGTERM)
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(s.Err)
			return last
		}
		if _, ok := err.(*signalError); ok {
			return &ExitError{Code: ExitTerminated, Silent: true}
		}
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		last = cs.turn(ctx, line)
		var ee *ExitError
		if errors.As(last, &ee) && (ee.Code == ExitUnreachable || ee.Code == ExitInterrupted || ee.Code == ExitTerminated) {
			return last // nothing more to do here; a signal ends the session too
		}
		if last != nil {
			if ee == nil || !ee.Silent {
				fmt.Fprintln(s.Err, "smith:", last)
			}
			last = &ExitError{Code: exitCodeOf(last), Err: last, Silent: true}
		}
	}
}

// turn runs one chat turn and the review of its changes.
func (cs *chatSession) turn(ctx context.Context, message string) error {
	s, o := cs.s, cs.o
	turnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopSignals := cs.watchInterrupts(cancel)
	defer stopSignals()

	var mu sync.Mutex // serializes the renderer and the spinner
	var emit func(protocol.Event)
	var shownError string // the message of the last error event printed
	var endReason string  // why the turn ended, from its turnEnd event
	var spin *spinner
	var r *turnRenderer
	if o.json {
		enc := json.NewEncoder(s.Out)
		emit = func(ev protocol.Event) {
			if ev.Type == protocol.KindTurnEnd && ev.TurnEnd != nil {
				endReason = ev.TurnEnd.Reason
			}
			_ = enc.Encode(ev)
		}
	} else {
		r = &turnRenderer{out: s.Out, errw: s.Err, color: s.ColorOut(), errCol: s.ColorErr(), hideReasoning: o.noReasoning, width: cs.width, root: cs.root, sameTerm: s.OutTTY && s.ErrTTY}
		if s.ErrTTY {
			spin = startSpinner(s.Err, &mu, func() bool { return r.col == 0 || !s.OutTTY })
			r.beforeStatus = spin.clear
		}
		emit = func(ev protocol.Event) {
			mu.Lock()
			defer mu.Unlock()
			if spin != nil && (ev.Type == protocol.KindText || ev.Type == protocol.KindReasoning) {
				spin.clear()
			}
			if ev.Type == protocol.KindError && ev.Error != nil {
				shownError = ev.Error.Message
			}
			if ev.Type == protocol.KindTurnEnd && ev.TurnEnd != nil {
				endReason = ev.TurnEnd.Reason
			}
			r.Event(ev)
		}
	}
	res, err := cs.eng.Chat(turnCtx, daemon.ChatRequest{DialogID: cs.dialog, Message: message}, emit)
	if spin != nil {
		spin.stop()
	}
	if r != nil {
		mu.Lock()
		r.flushRepeats() // a turn that ended without its turnEnd
		broke := r.violationCount
		mu.Unlock()
		if broke > 0 && cs.forced != "" {
			fmt.Fprintf(s.Err, "smith: the stream, read in the dialect %s, broke it %d time(s): check that the server speaks it ('smith status' shows what its /health says), or leave the dialect out and smith detects it\n", cs.forced, broke)
		}
	}
	if res != nil && res.DialogID != "" {
		cs.dialog = res.DialogID
	}
	if res == nil {
		return upstreamExit(err)
	}
	changes, listErr := cs.changesOf(ctx, res)
	review := cs.reviewChanges(ctx, changes)
	if o.json {
		// The statuses after the review.
		if changes, err := cs.changesOf(ctx, res); err == nil {
			cs.printSummary(res, changes)
		} else {
			listErr = err
		}
	}
	if listErr != nil && err == nil {
		err = fmt.Errorf("list the changes of the turn: %w", listErr)
	}
	mu.Lock()
	shown := shownError
	mu.Unlock()
	switch {
	case err != nil && shown != "" && strings.Contains(err.Error(), shown):
		// The turn's error line already said it; the exit status still
		// does, and what to do about it is said once.
		if hint := advice(err); hint != "" {
			fmt.Fprintln(s.Err, "smith:", hint)
		} else if hint := cs.attachedAdvice(err); hint != "" {
			fmt.Fprintln(s.Err, "smith:", hint)
		} else if hint := cs.dialectAdvice(err); hint != "" {
			fmt.Fprintln(s.Err, "smith:", hint)
		}
		return &ExitError{Code: exitCodeOf(err), Err: err, Silent: true}
	case err != nil:
		return upstreamExit(err)
	case res.Outcome == protocol.OutcomeCancelled:
		fmt.Fprintln(s.Err, "turn cancelled; the partial answer is kept")
		return &ExitError{Code: ExitInterrupted, Silent: true}
	case res.Outcome != protocol.OutcomeCompleted:
		mu.Lock()
		why := endReason
		mu.Unlock()
		return &ExitError{Code: ExitFailure, Err: errors.New(outcomeSentence(res.Outcome, why))}
	}
	return review
}

// watchInterrupts cancels the turn at the first SIGINT and exits at the
// second. The returned func stops watching.
func (cs *chatSession) watchInterrupts(cancel context.CancelFunc) func() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-sigs:
				n++
				if n == 1 {
					fmt.Fprintln(cs.s.Err, "\ncancelling the turn… (Ctrl-C again to quit)")
					cancel()
					continue
				}
				os.Exit(ExitInterrupted)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		signal.Reset(os.Interrupt)
	}
}

// printSummary writes the --json summary object, with the engine's change
// ids and statuses.
func (cs *chatSession) printSummary(res *daemon.ChatResult, changes []daemon.Change) {
	sum := protocol.Summary{Type: "summary"}
	if res.Summary != nil {
		sum = *res.Summary
	}
	sum.Type = "summary"
	sum.DialogID = res.DialogID
	sum.TurnID = res.TurnID
	sum.Outcome = res.Outcome
	sum.Changes = []protocol.ChangeSummary{}
	for _, c := range changes {
		sum.Changes = append(sum.Changes, protocol.ChangeSummary{ID: c.ID, Path: c.Path, Kind: c.Kind, Status: c.Status})
	}
	_ = json.NewEncoder(cs.s.Out).Encode(sum)
}

// changesOf returns the changes the turn proposed, as they stand now.
func (cs *chatSession) changesOf(ctx context.Context, res *daemon.ChatResult) ([]daemon.Change, error) {
	if len(res.Changes) == 0 {
		return nil, nil
	}
	want := map[string]bool{}
	for _, id := range res.Changes {
		want[id] = true
	}
	all, err := cs.eng.Changes(ctx, daemon.ChangeFilter{})
	if err != nil {
		return nil, err
	}
	var out []daemon.Change
	for _, c := range all {
		if want[c.ID] {
			out = append(out, c)
		}
	}
	return out, nil
}

// outcomeSentence says how a turn that did not complete ended; reason is
// its turnEnd's ("" when it gave none), which says why a stream stopped
// (a stall, no progress, the turn limit) where that is known.
func outcomeSentence(o protocol.Outcome, reason string) string {
	switch o {
	case protocol.OutcomeError:
		return "the turn ended with an error (see the error above)"
	case protocol.OutcomeInterrupted:
		if reason != "" {
			// The limits the reasons name are settings: say which.
			switch {
			case strings.HasSuffix(reason, "; the upstream stalled"):
				reason += "; if the server is only slow, raise --idle-timeout (idle_timeout)"
			case strings.HasSuffix(reason, "; the upstream made no progress"):
				reason += "; if the server is only slow, raise --progress-timeout (progress_timeout)"
			case strings.HasSuffix(reason, "the turn limit (turn_limit)"):
				reason += "; raise --turn-limit for longer turns"
			}
			return "the turn was interrupted: " + reason + " (the partial answer is kept)"
		}
		return "the turn was interrupted: the stream stopped before its end (the partial answer is kept)"
	case protocol.OutcomeCancelled:
		return "the turn was cancelled (the partial answer is kept)"
	}
	return fmt.Sprintf("the turn ended with outcome %q", o)
}

// refuseDryRun refuses --dry-run, before anything is sent, when the
// upstream is an AgentSmithy v1/v2 server: it writes files itself while it
// answers, so "apply nothing" would be a promise smith cannot keep. Its
// /health says "agentsmithy-server"; smith upstream also says which
// protocol it serves, and its v0 only proposes changes. A server that does
// not answer /health (another dialect's) is left to the turn.
func refuseDryRun(ctx context.Context, eng backend) error {
	st, err := eng.Status(ctx)
	if err != nil || st.Server == nil {
		return nil
	}
	switch st.Dialect {
	case "", "auto", string(protocol.DialectAgentSmithy):
	default:
		return nil
	}
	if h := st.Server; h.Service != "agentsmithy-server" || h.Protocol == "v0" {
		return nil
	}
	return usageErrorf("--dry-run cannot keep %s from writing: it is an AgentSmithy server, which writes files itself while it answers, "+
		"so smith cannot promise to apply nothing; nothing was sent. Run without --dry-run: smith shows what the server wrote, "+
		"smith session lists its writes and smith session reset gives them up", st.Upstream)
}

// upstreamExit maps an engine error to the documented exit codes.
func upstreamExit(err error) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if !errors.As(err, &ee) {
		if hint := advice(err); hint != "" {
			err = fmt.Errorf("%w (%s)", err, hint)
		}
	}
	return &ExitError{Code: exitCodeOf(err), Err: err}
}

// attachedAdvice is what to do when the smith serve this chat runs
// through cannot reach its upstream: the serve's settings apply, not this
// command's, so the way out is on the serve's side. (A server of another
// workspace says what to do itself.)
func (cs *chatSession) attachedAdvice(err error) string {
	sock := cs.eng.Attached()
	if sock == "" || !errors.Is(err, daemon.ErrUpstreamUnreachable) || strings.Contains(err.Error(), "--upstream") {
		return ""
	}
	return "the smith serve that holds this workspace (" + sock + ") cannot reach its upstream: start that chat server, or restart smith serve with the right --upstream (its editor's smith settings, or upstream in .smith.toml)"
}

// ignoredFlags says which of --upstream and --dialect a chat through a
// running smith serve does not use (the serve's settings apply) when they
// differ from the serve's; "" when none does, or the chat is not attached.
func ignoredFlags(ctx context.Context, eng backend, set *config.Settings) string {
	sock := eng.Attached()
	if sock == "" {
		return ""
	}
	var ignored []string
	var st *daemon.Status
	for _, key := range []string{"upstream", "dialect"} {
		v, _ := set.Lookup(key)
		if v.Source != config.SourceFlag {
			continue
		}
		if st == nil {
			got, err := eng.Status(ctx)
			if err != nil {
				return ""
			}
			st = &got
		}
		ours, theirs := protocol.RedactURL(v.Value), st.Upstream // Status redacts it
		if key == "dialect" {
			ours, theirs = v.Value, st.Dialect
		}
		if strings.TrimSuffix(ours, "/") != strings.TrimSuffix(theirs, "/") {
			ignored = append(ignored, fmt.Sprintf("%s %s (it uses %s)", v.Origin, ours, theirs))
		}
	}
	if len(ignored) == 0 {
		return ""
	}
	return "not used: " + strings.Join(ignored, ", ") + ": this chat runs through the smith serve that holds this workspace (" + sock + "), with its settings; stop it to chat with yours"
}

// dialectAdvice is what to do when the upstream refused the request of a
// dialect the settings force: a server of another dialect answers it
// with a client error (an AgentSmithy server: 422, "messages" missing),
// which says nothing of the dialect.
func (cs *chatSession) dialectAdvice(err error) string {
	var he *protocol.HTTPError
	if cs.forced == "" || !errors.As(err, &he) || he.Status < 400 || he.Status >= 500 || he.Status == 401 || he.Status == 403 || he.Status == 429 {
		return ""
	}
	return fmt.Sprintf("the server refused the request smith made in the dialect %s: check that the server speaks it ('smith status' shows what its /health says), or leave the dialect out and smith detects it", cs.forced)
}

// httpStatus is the HTTP status of the upstream's answer err carries, 0
// when it carries none.
func httpStatus(err error) int {
	var he *protocol.HTTPError
	if errors.As(err, &he) {
		return he.Status
	}
	return 0
}

// unreachableAdvice is what to do when no server answers at the upstream
// address: the first thing a new user meets before any server runs.
const unreachableAdvice = "start a chat server for this workspace ('smith upstream --workspace .' runs the embedded one) or name a running one with --upstream URL; 'smith config' shows where the address came from"

// advice is what a terminal user can do about an engine error: the engine
// says what happened, the front what to do next with its own commands.
func advice(err error) string {
	switch {
	case errors.Is(err, daemon.ErrUnknownChange):
		return "smith changes lists them"
	case errors.Is(err, daemon.ErrUnknownDialog):
		return "smith dialogs lists them"
	case errors.Is(err, daemon.ErrDialogBusy) && !errors.Is(err, protocol.ErrDialogBusy):
		// A turn of smith's runs in the dialog. (The upstream's busy
		// dialog, a lifecycle server still answering an earlier
		// message, says what to do itself.)
		return "wait for it to end, cancel it, or use another dialog with -d"
	case errors.Is(err, daemon.ErrMessageTooLong):
		return "shorten or split the message, or raise max_message"
	case errors.Is(err, daemon.ErrTooManyTurns):
		return "wait for one to end or cancel it"
	case errors.Is(err, daemon.ErrNoUpstream):
		return "set the upstream URL: --upstream, SMITH_UPSTREAM or upstream in .smith.toml"
	case httpStatus(err) == http.StatusTooManyRequests:
		return "the chat server is limiting requests: try again in a moment"
	case httpStatus(err) >= 500:
		return "the chat server failed on its side (its log says why): try again, or look at the server"
	case errors.As(err, new(*protocol.ContentTypeError)):
		return "something answers at that address, but not as a chat server: check the upstream URL ('smith config' shows where it came from)"
	case errors.Is(err, protocol.ErrUnreachable) && !errors.Is(err, protocol.ErrWrongWorkspace) && !errors.As(err, new(*protocol.TLSError)):
		// Nothing answered at all. (A server of another workspace, and
		// a TLS failure, say what to do themselves.)
		return unreachableAdvice
	}
	return ""
}

func exitCodeOf(err error) int {
	var ee *ExitError
	switch {
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, daemon.ErrUpstreamUnreachable), errors.Is(err, protocol.ErrUnreachable), errors.Is(err, protocol.ErrWrongWorkspace):
		return ExitUnreachable
	case errors.Is(err, daemon.ErrTooManyTurns), errors.Is(err, daemon.ErrMessageTooLong), errors.Is(err, daemon.ErrEmptyMessage):
		return ExitUsage
	}
	return ExitFailure
}

func termWidth(s *IOStreams) int {
	if f, ok := s.Out.(*os.File); ok && s.OutTTY {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			return w - 1
		}
	}
	return 0
}

// spinner shows activity on a terminal's stderr while a turn runs.
type spinner struct {
	w     io.Writer
	mu    *sync.Mutex
	done  chan struct{}
	shown bool
}

// canDraw reports whether the terminal's cursor is at the start of a line
// (the answer text is not in the middle of one); it is called under mu.
func startSpinner(w io.Writer, mu *sync.Mutex, canDraw func() bool) *spinner {
	sp := &spinner{w: w, mu: mu, done: make(chan struct{})}
	go func() {
		frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-sp.done:
				return
			case <-t.C:
				mu.Lock()
				if canDraw() {
					fmt.Fprintf(w, "\r%s working…", frames[i%len(frames)])
					sp.shown = true
				}
				mu.Unlock()
			}
		}
	}()
	return sp
}

// clear erases the spinner line; the caller holds mu.
func (sp *spinner) clear() {
	if sp.shown {
		fmt.Fprint(sp.w, "\r\x1b[K")
		sp.shown = false
	}
}

func (sp *spinner) stop() {
	close(sp.done)
	sp.mu.Lock()
	sp.clear()
	sp.mu.Unlock()
}
