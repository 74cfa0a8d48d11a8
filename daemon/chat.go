package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/smith-dev/smith/protocol"
)

// More errors of Chat (see api.go for the ones the fronts map to codes).
var (
	ErrEmptyMessage = errors.New("empty message")
	ErrNoUpstream   = errors.New("no upstream configured")
	ErrClosed       = errors.New("engine closed")
	// ErrStateLocked: another Engine (usually another smith process) owns
	// the workspace's state folder.
	ErrStateLocked = errors.New("workspace state in use")
)

func (e *Engine) clientConfig() protocol.ClientConfig {
	var ws string
	if e.cfg.CheckUpstreamWorkspace {
		ws = e.cfg.Workspace
	}
	return protocol.ClientConfig{
		Workspace:    ws,
		BaseURL:      e.cfg.Upstream,
		Dialect:      e.cfg.Dialect,
		HTTPClient:   e.cfg.HTTPClient,
		Token:        e.cfg.Token,
		Header:       e.cfg.Header,
		MaxEventSize: e.cfg.MaxEventSize,
		IdleTimeout:  e.cfg.IdleTimeout,
		// A turn that only receives keep-alives, or a byte now and then,
		// ends too (protocol.turnGuard).
		ProgressTimeout: e.cfg.ProgressTimeout,
		TurnLimit:       e.cfg.TurnLimit,
		MaxText:         e.cfg.MaxResultText,
	}
}

// Chat runs one turn: it checks the limits (ErrMessageTooLong,
// ErrTooManyTurns), resolves the dialog, takes the dialog's single-flight
// lock (ErrDialogBusy at once when taken), streams the upstream's events to
// emit (stamped with dialogId, turnId and a per-turn seq; emit is called
// from one goroutine, in order) and records every change as a proposal. It
// returns when the turn has ended; a cancelled ctx (or Detach, or Close)
// ends the turn "cancelled" with the partial text kept. The returned error
// is non-nil only when no turn was started (limits, busy, no dialog) or the
// upstream was unreachable/refused the request; in the latter case the turn
// still ended with an error event and turnEnd, and the result is returned
// too. The turn belongs to the front ctx carries (WithPeer), whose limit
// it counts against.
func (e *Engine) Chat(ctx context.Context, req ChatRequest, emit func(protocol.Event)) (_ *ChatResult, err error) {
	defer wrapUpstream(&err)
	p := e.peerOf(ctx)
	if emit == nil {
		emit = func(protocol.Event) {}
	}
	if strings.TrimSpace(req.Message) == "" {
		return nil, fmt.Errorf("%w: type a message to send", ErrEmptyMessage)
	}
	if n := utf8.RuneCountInString(req.Message); n > e.cfg.MaxMessage {
		return nil, fmt.Errorf("%w: %d characters, the limit is %d", ErrMessageTooLong, n, e.cfg.MaxMessage)
	}
	if e.client == nil {
		return nil, fmt.Errorf("%w: the engine has no upstream URL", ErrNoUpstream)
	}
	t, err := e.reserveTurn(ctx, p)
	if err != nil {
		return nil, err
	}
	defer e.endTurn(t)

	dialog, err := e.turnDialog(t.ctx, req.DialogID)
	if err != nil {
		return nil, err
	}
	if err := e.lockDialog(t, dialog); err != nil {
		return nil, err
	}
	return e.runTurn(t, req, emit)
}

// turn is one running Chat.
type turn struct {
	id     string
	peer   *Peer
	ctx    context.Context
	cancel context.CancelFunc
	dialog string // "" until known; then the key of its single-flight lock
	lock   string // the busy-map key this turn holds ("" = none)
	seq    int64
	result *ChatResult
}

// reserveTurn takes one of p's turn slots and a turn id.
func (e *Engine) reserveTurn(ctx context.Context, p *Peer) (*turn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if p != nil && p.detached {
		return nil, fmt.Errorf("%w: this client was detached", ErrClosed)
	}
	if p != nil && len(p.turns) >= e.cfg.MaxTurns {
		return nil, Errorf(ErrTooManyTurns, "%d turns of this client are running, the limit is %d", len(p.turns), e.cfg.MaxTurns)
	}
	// The registry's lock is taken under e.mu here and nowhere else the
	// other way round; nextTurnID takes nothing further.
	id := e.dr.nextTurnID()
	tctx, cancel := context.WithCancel(ctx)
	// Close cancels every turn: tie the turn to the engine's life as well.
	stop := context.AfterFunc(e.ctx, cancel)
	t := &turn{id: id, peer: p, ctx: tctx, cancel: func() { stop(); cancel() }}
	if p != nil {
		p.turns[id] = cancel
	}
	e.running++
	e.turns.Add(1)
	return t, nil
}

// endTurn releases the turn's slot and dialog lock.
func (e *Engine) endTurn(t *turn) {
	e.mu.Lock()
	if t.peer != nil {
		delete(t.peer.turns, t.id)
	}
	e.running--
	e.mu.Unlock()
	err := e.dr.unlockTurn(t) // and saves NextTurn and the dialog's messages
	if err != nil {
		e.log.Error("save state", "err", err)
	}
	t.cancel()
	e.turns.Done()
}

// lockDialog takes dialog's single-flight lock for t, or fails at once.
// An empty dialog (to be learnt from the stream) is locked under a key of
// the turn's own until the stream names it.
func (e *Engine) lockDialog(t *turn, dialog string) error {
	e.dr.mu.Lock()
	defer e.dr.mu.Unlock()
	key := dialog
	if key == "" {
		key = "turn:" + t.id
	}
	if other, ok := e.dr.busy[key]; ok {
		return Errorf(ErrDialogBusy, "dialog %s is running turn %s", dialog, other)
	}
	e.dr.busy[key] = t.id
	t.lock, t.dialog = key, dialog
	return nil
}

// learnDialog moves a turn that started without a dialog id onto the one
// the stream named. When that dialog is busy with another turn the turn
// keeps its own key (the upstream accepted both) and the clash is logged.
func (e *Engine) learnDialog(t *turn, dialog string) {
	e.dr.mu.Lock()
	defer e.dr.mu.Unlock()
	t.dialog = dialog
	if other, ok := e.dr.busy[dialog]; ok && other != t.id {
		e.log.Warn("upstream ran two turns in one dialog", "dialog", dialog, "turn", t.id, "other", other)
		return
	}
	delete(e.dr.busy, t.lock)
	e.dr.busy[dialog] = t.id
	t.lock = dialog
	if e.dr.st.CurrentDialog == "" {
		e.dr.st.CurrentDialog = dialog
	}
}

// runTurn streams the turn and records its changes.
func (e *Engine) runTurn(t *turn, req ChatRequest, emit func(protocol.Event)) (*ChatResult, error) {
	res := &ChatResult{DialogID: t.dialog, TurnID: t.id, Changes: []string{}}
	t.result = res
	sawEnd := false
	out := func(ev protocol.Event) {
		if sawEnd {
			return // nothing after turnEnd, whatever the source
		}
		t.seq++
		ev.Seq = t.seq
		ev.TurnID = t.id
		ev.DialogID = t.dialog
		if ev.Type == protocol.KindTurnEnd {
			sawEnd = true
		}
		emit(ev)
	}
	history, upstreamID, local := e.localTurn(t.dialog)
	handle := func(ev protocol.Event) {
		switch {
		case t.dialog == "" && ev.DialogID != "":
			e.learnDialog(t, ev.DialogID)
			res.DialogID = ev.DialogID
		case local && ev.DialogID != "" && ev.DialogID != upstreamID:
			// The server named the dialog: that name is the dialog's.
			upstreamID = ev.DialogID
			if e.adoptServerID(t, upstreamID) {
				res.DialogID = t.dialog
			}
		case local:
			if id := contextID(ev); id != "" && id != upstreamID {
				upstreamID = id
				e.learnUpstreamID(t.dialog, upstreamID)
			}
		}
		out(ev)
		if ev.Type == protocol.KindChange && ev.Change != nil {
			e.onChange(t, *ev.Change, out)
		}
	}
	e.log.Debug("turn start", "turn", t.id, "dialog", t.dialog, "chars", utf8.RuneCountInString(req.Message))
	preq := protocol.ChatRequest{DialogID: t.dialog, TurnID: t.id, Message: req.Message, Context: req.Context}
	if local {
		// A local dialog's id is smith's; the upstream knows the
		// conversation by its own id, if any, and by its history.
		preq.DialogID, preq.History = upstreamID, history
	}
	sum, err := e.client.Chat(t.ctx, preq, handle)
	if local && sum != nil {
		if sum.DialogID != "" && sum.DialogID != upstreamID {
			e.learnUpstreamID(t.dialog, sum.DialogID)
		}
		e.recordLocalTurn(t.dialog, req.Message, sum.Text)
	}
	if !sawEnd {
		// The client promises a turnEnd; keep the engine's promise even if
		// it did not.
		reason := "the turn ended without a turnEnd"
		if err != nil {
			reason = err.Error()
		}
		out(protocol.Event{Type: protocol.KindTurnEnd, TurnEnd: &protocol.TurnEnd{Outcome: protocol.OutcomeError, Reason: reason}})
	}
	if sum != nil {
		e.noteDialect(sum)
		res.Summary = sum
		res.Outcome = sum.Outcome
		res.Text, res.TextTruncated = sum.Text, sum.TextTruncated
		res.Dialect = sum.Dialect
		if sum.Protocol != nil {
			res.Protocol = *sum.Protocol
		}
		if res.DialogID == "" {
			res.DialogID = sum.DialogID
		}
	} else {
		res.Outcome = protocol.OutcomeError
	}
	e.log.Debug("turn end", "turn", t.id, "dialog", res.DialogID, "outcome", res.Outcome, "changes", len(res.Changes), "err", err)
	if err != nil && t.ctx.Err() != nil {
		// A cancelled turn is an outcome, not a failure to start.
		err = nil
	}
	if errors.Is(err, protocol.ErrDialogBusy) {
		// The upstream's own single-flight (lifecycle 409): the same
		// error the fronts know from the engine's lock.
		return res, Errorf(ErrDialogBusy, "turn %s: %w", t.id, err)
	}
	if err != nil {
		return res, fmt.Errorf("turn %s: %w", t.id, err)
	}
	return res, nil
}

// noteDialect remembers what the last stream turned out to be.
func (e *Engine) noteDialect(sum *protocol.Summary) {
	if sum.Dialect == "" {
		return
	}
	d := string(sum.Dialect)
	if sum.Protocol != nil {
		d += " " + *sum.Protocol
	}
	e.mu.Lock()
	e.detected = d
	e.mu.Unlock()
}

// contextID returns the oracle's context_id from its done chunk, which
// the protocol package passes on as the raw data of a "summary" notice
// without making it the turn's dialog id.
func contextID(ev protocol.Event) string {
	if ev.Type != protocol.KindNotice || ev.Notice == nil || ev.Notice.Kind != "summary" || len(ev.Notice.Data) == 0 {
		return ""
	}
	var v struct {
		ContextID string `json:"context_id"`
	}
	if json.Unmarshal(ev.Notice.Data, &v) != nil {
		return ""
	}
	return v.ContextID
}

// onChange records a change event of t as a proposal (or as a change the
// upstream already wrote), announces it, and applies it when AutoApply is
// set.
func (e *Engine) onChange(t *turn, src protocol.Change, out func(protocol.Event)) {
	c, violation := e.recordChange(t.peer, t.dialog, t.id, src, nil, false, nil)
	t.result.Changes = append(t.result.Changes, c.ID)
	if violation != "" {
		// Info, not a warning: the violation event below tells every
		// front (a terminal's smith chat prints it, where a warning of
		// the log would say it a second time, in log syntax).
		e.log.Info("refused a change to a path smith may not write", "change", c.ID, "path", src.Path, "turn", t.id)
		out(protocol.Event{Type: protocol.KindViolation, Violation: &protocol.Violation{
			Kind: "outsideWorkspace", Message: violation, EventIndex: -1,
		}})
	}
	view := e.view(c.ID)
	e.notifyAll(Notification{Kind: NoteChangeUpdated, Change: view})
	e.cs.mu.Lock()
	upstream := c.Status == StatusAppliedUpstream
	e.cs.mu.Unlock()
	if upstream {
		e.notifyAll(Notification{Kind: NoteFileChanged, Path: c.Abs})
	}
	if e.cfg.AutoApply && view != nil && view.Status == StatusPending {
		if _, err := e.Apply(WithPeer(t.ctx, t.peer), c.ID, nil); err != nil {
			e.log.Warn("auto-apply", "change", c.ID, "err", err)
		}
	}
}
