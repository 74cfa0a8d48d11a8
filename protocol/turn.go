package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Violation kinds (Violation.Kind).
const (
	ViolationInvalidJSON   = "invalid_json"   // data is not JSON
	ViolationNotObject     = "not_object"     // JSON, but not an object
	ViolationUnknownType   = "unknown_type"   // a payload shape the dialect does not define
	ViolationMissingField  = "missing_field"  // a required field is absent
	ViolationWrongType     = "wrong_type"     // a field has the wrong JSON type
	ViolationAfterTerminal = "after_terminal" // an event after the turn's terminal event (dropped)
	ViolationOrder         = "order"          // an ordering invariant broke (lifecycle message_start/end)
	ViolationDialogID      = "dialog_id"      // dialog_id changed within the turn
	ViolationUnknownValue  = "unknown_value"  // a value outside one of the contract's closed lists (kept as received)
)

// ErrIdleTimeout is the cause ReadTurn gives a turn whose upstream sent no
// byte for StreamOptions.IdleTimeout. Finish maps it to OutcomeInterrupted.
var ErrIdleTimeout = errors.New("upstream sent nothing for too long (idle timeout)")

// cancelError is a cancelled context together with its cause (the cause
// given to context.WithCancelCause, if any), for the turnEnd reason.
type cancelError struct{ err, cause error }

func (e *cancelError) Error() string {
	if e.cause != nil && e.cause != e.err {
		return "cancelled: " + e.cause.Error()
	}
	return "cancelled"
}

func (e *cancelError) Unwrap() []error { return []error{e.err, e.cause} }

// maxDetect is how many payloads auto-detection holds back at most before
// it settles on the default dialect.
const maxDetect = 16

// Turn is the state machine of one chat turn: it maps the SSE events of the
// turn to normalized events through the dialect adapter, stamps them, checks
// the dialect's ordering invariants and keeps the summary.
//
// ReadTurn drives a Turn over a whole response body. Callers that do not own
// a body per turn (lifecycle's long-lived session stream) drive it
// themselves:
//
//	t := NewTurn(opts)
//	for !t.Done() { ev, err := r.Next(); if err != nil { break }; t.Feed(ev, emit) }
//	sum := t.Finish(err, emit) // err: nil or io.EOF, ctx.Err(), ErrIdleTimeout, a *TruncatedError, ...
//
// Feed after Done reports the event as a violation and drops it; the
// caller decides when to stop feeding (ReadTurn feeds until the body ends).
// Finish emits the one turnEnd, last. A Turn is not safe for concurrent
// use; emit is called synchronously from Feed and Finish.
type Turn struct {
	opts     StreamOptions
	ad       adapter
	fast     fastAdapter // ad, if it has a fast path (asserted once, not per event)
	dialect  Dialect
	pending  []SSEEvent // held back while auto-detecting
	pl       payload
	emit     func(Event)
	seq      int64
	index    int // SSE event index of the event being fed
	done     bool
	outcome  Outcome
	reason   string
	errSeen  bool
	finished bool
	protocol string

	noFast bool // tests: always take the general path

	text, reasoning       textBuf
	textCut, reasoningCut bool // MaxText reached
	sum                   Summary
	seen                  map[string]bool // changes proposed in this turn (path + "\x00" + diff)
}

// NewTurn returns the state machine of a new turn.
func NewTurn(opts StreamOptions) *Turn {
	t := &Turn{opts: opts}
	t.sum = Summary{
		Type: "summary", DialogID: opts.DialogID, TurnID: opts.TurnID,
		Citations: []Citation{}, ToolCalls: []ToolCall{}, ToolResults: []ToolResult{},
		Changes: []ChangeSummary{}, Errors: []ErrorInfo{}, Violations: []Violation{},
	}
	if opts.Header != nil {
		t.sum.ServerTiming = opts.Header.Get("Server-Timing")
	}
	switch opts.Dialect {
	case DialectAgentSmithy, DialectRAG, DialectTextbook, DialectLifecycle, DialectOracle:
		t.setDialect(opts.Dialect)
	} // DialectAuto, or a name smith does not know (callers validate settings): detect
	return t
}

// Done reports whether the turn's terminal event has been seen.
func (t *Turn) Done() bool { return t.done }

// Dialect returns the dialect in use, DialectAuto while still detecting.
func (t *Turn) Dialect() Dialect { return t.dialect }

// Feed maps one SSE event of the turn.
func (t *Turn) Feed(ev SSEEvent, emit func(Event)) {
	t.emit = emit
	t.feedEvent(ev)
}

// feedEvent is Feed with the emit function set before (ReadTurn sets it
// once, not once per event).
func (t *Turn) feedEvent(ev SSEEvent) {
	if t.ad == nil {
		t.pending = append(t.pending, ev)
		if err := t.pl.parse(ev.Data); err == nil {
			if d := detect(&t.pl); d != DialectAuto {
				t.setDialect(d)
			}
		}
		if t.ad == nil && len(t.pending) < maxDetect {
			return
		}
		t.flushPending()
		return
	}
	t.feed(ev)
}

func (t *Turn) flushPending() {
	if t.ad == nil {
		t.setDialect(DialectAgentSmithy)
	}
	p := t.pending
	t.pending = nil
	for _, ev := range p {
		t.feed(ev)
	}
}

func (t *Turn) setDialect(d Dialect) {
	t.dialect = d
	t.sum.Dialect = d
	t.ad = newAdapter(d)
	t.fast, _ = t.ad.(fastAdapter)
}

// feed maps one SSE event, with the dialect known, and counts it.
func (t *Turn) feed(ev SSEEvent) {
	t.mapEvent(ev)
	t.index++
}

// mapEvent maps one SSE event, whose index is t.index.
func (t *Turn) mapEvent(ev SSEEvent) {
	if t.done {
		l, ok := t.ad.(lateAdapter)
		if !ok || t.pl.parse(ev.Data) != nil || !l.late(t, &t.pl) {
			t.violate(ViolationAfterTerminal, "event after the turn's terminal event; dropped", ev.Data)
		}
		return
	}
	if t.fast != nil && !t.noFast && t.fast.fast(t, ev.Data) {
		return
	}
	if err := t.pl.parse(ev.Data); err != nil {
		if err == errNotObject {
			t.violate(ViolationNotObject, "payload is JSON but not an object", ev.Data)
		} else {
			t.violate(ViolationInvalidJSON, err.Error(), ev.Data)
		}
		return
	}
	if v, ok := t.pl.get("dialog_id"); ok && jsonKind(v) == 's' && !t.sameDialog(v) {
		id := unquote(v)
		switch {
		case t.sum.DialogID == "":
			t.sum.DialogID = id
		case id != t.sum.DialogID && t.opts.DialogID == "":
			t.violate(ViolationDialogID, fmt.Sprintf("dialog_id changed from %q to %q within the turn", t.sum.DialogID, id), ev.Data)
		}
	}
	t.ad.handle(t, &t.pl)
}

// sameDialog reports, without decoding, whether the raw JSON string v is the
// turn's dialog id (every AgentSmithy event repeats it).
func (t *Turn) sameDialog(v string) bool {
	id := t.sum.DialogID
	return id != "" && len(v) == len(id)+2 && v[1:len(v)-1] == id
}

// Finish ends the turn: it emits the turnEnd event and returns the summary.
// cause is why the stream stopped: nil (or io.EOF) for a clean end of the
// body, context.Canceled (or DeadlineExceeded) for a cancelled turn,
// ErrIdleTimeout, a *TruncatedError, an *EventTooLargeError, or a transport
// error. A turn whose terminal event was seen keeps its outcome whatever
// the cause. Finish is idempotent: later calls return the same summary and
// emit nothing.
func (t *Turn) Finish(cause error, emit func(Event)) *Summary {
	if t.finished {
		return &t.sum
	}
	if cause == io.EOF {
		cause = nil // SSEReader.Next's clean end
	}
	t.emit = emit
	if t.ad == nil {
		t.flushPending()
	}
	if !t.done {
		t.outcome, t.reason = t.ad.finish(t, cause)
		if t.outcome == "" {
			t.outcome, t.reason = t.endWithoutTerminal(cause)
		}
	}
	t.finished = true
	t.sum.Outcome = t.outcome
	t.sum.Text = t.text.String()
	t.sum.Reasoning = t.reasoning.String()
	if t.dialect == DialectAgentSmithy && t.protocol != "" {
		p := t.protocol
		t.sum.Protocol = &p
	}
	t.out(Event{Type: KindTurnEnd, TurnEnd: &TurnEnd{Outcome: t.outcome, Reason: t.reason}})
	return &t.sum
}

// endWithoutTerminal maps why a stream stopped before its terminal event.
func (t *Turn) endWithoutTerminal(cause error) (Outcome, string) {
	var tooLarge *EventTooLargeError
	switch {
	case cause == nil:
		return OutcomeInterrupted, "the stream ended without a terminal event"
	case errors.Is(cause, context.Canceled), errors.Is(cause, context.DeadlineExceeded):
		var ce *cancelError
		if errors.As(cause, &ce) {
			return OutcomeCancelled, ce.Error()
		}
		return OutcomeCancelled, "cancelled"
	case errors.Is(cause, ErrIdleTimeout):
		return OutcomeInterrupted, cause.Error()
	case errors.As(cause, &tooLarge):
		t.out(Event{Type: KindError, Error: &ErrorInfo{Code: "event_too_large", Message: cause.Error()}})
		return OutcomeError, "event too large"
	case errors.Is(cause, ErrStreamCut):
		return OutcomeInterrupted, cause.Error()
	}
	return OutcomeInterrupted, cause.Error()
}

// end records the terminal event's outcome. The turnEnd event itself is
// emitted by Finish, so that violations for late events still precede it.
func (t *Turn) end(o Outcome, reason string) {
	if t.done {
		return
	}
	t.done, t.outcome, t.reason = true, o, reason
}

// reopen undoes end: the stream goes on with another part of the same turn
// (a lifecycle body with several messages), which decides the outcome anew.
func (t *Turn) reopen() {
	t.done, t.outcome, t.reason = false, "", ""
}

// keep adds a delta to the summary's text or reasoning, up to
// StreamOptions.MaxText bytes; once cut, nothing more is kept (a later
// short delta would leave a gap).
func (t *Turn) keep(b *textBuf, cut *bool, s string) {
	if *cut {
		return
	}
	if limit := t.opts.MaxText; limit > 0 && b.Len()+len(s) > limit {
		n := max(limit-b.Len(), 0)
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
		*cut, t.sum.TextTruncated = true, true
	}
	b.WriteString(s)
}

// textBuf accumulates the deltas of a turn's text (or reasoning) in
// chunks, joined once, at the exact size, by String. Why not a
// strings.Builder: past a few KiB it grows by a quarter at a time, so a
// 1 MB answer of small deltas allocated and copied ~5 MB on its way (the
// largest allocation of `smith replay --json` after go-sse's own).
type textBuf struct {
	chunks [][]byte // full
	cur    []byte
	n      int
}

// textChunk bounds a chunk's size: chunks start small (most turns are
// short) and double up to this.
const textChunk = 64 << 10

// Len is the number of bytes written.
func (b *textBuf) Len() int { return b.n }

// WriteString appends s.
func (b *textBuf) WriteString(s string) {
	b.n += len(s)
	if len(s) <= cap(b.cur)-len(b.cur) { // nearly always: a delta is short
		b.cur = append(b.cur, s...)
		return
	}
	for len(s) > 0 {
		if len(b.cur) == cap(b.cur) {
			if b.cur != nil {
				b.chunks = append(b.chunks, b.cur)
			}
			b.cur = make([]byte, 0, min(max(2*cap(b.cur), 256), textChunk))
		}
		k := copy(b.cur[len(b.cur):cap(b.cur)], s)
		b.cur, s = b.cur[:len(b.cur)+k], s[k:]
	}
}

// String returns the text: one allocation of its size.
func (b *textBuf) String() string {
	var sb strings.Builder
	sb.Grow(b.n)
	for _, c := range b.chunks {
		sb.Write(c)
	}
	sb.Write(b.cur)
	return sb.String()
}

// out stamps an event, records it in the summary and emits it.
func (t *Turn) out(e Event) {
	t.seq++
	e.Seq, e.DialogID, e.TurnID = t.seq, t.sum.DialogID, t.opts.TurnID
	switch e.Type {
	case KindText:
		t.keep(&t.text, &t.textCut, e.Text)
	case KindReasoning:
		t.keep(&t.reasoning, &t.reasoningCut, e.Text)
	case KindCitation:
		t.sum.Citations = append(t.sum.Citations, *e.Citation)
	case KindToolCall:
		t.sum.ToolCalls = MergeToolCall(t.sum.ToolCalls, *e.ToolCall)
	case KindToolResult:
		t.sum.ToolResults = append(t.sum.ToolResults, *e.ToolResult)
	case KindChange:
		st := "proposed"
		if e.Change.AppliedUpstream {
			st = "appliedUpstream"
		}
		t.sum.Changes = append(t.sum.Changes, ChangeSummary{
			ID: "c" + strconv.Itoa(len(t.sum.Changes)+1), Path: e.Change.Path, Kind: e.Change.Kind, Status: st,
		})
	case KindError:
		t.errSeen = true
		t.sum.Errors = append(t.sum.Errors, *e.Error)
	case KindViolation:
		t.sum.Violations = append(t.sum.Violations, *e.Violation)
	}
	if t.emit != nil {
		t.emit(e)
	}
}

// violate reports a broken contract tied to the event being fed.
func (t *Turn) violate(kind, msg, data string) {
	v := &Violation{Kind: kind, Message: msg, EventIndex: t.index}
	if data != "" {
		if json.Valid([]byte(data)) {
			v.Payload = json.RawMessage(data)
		} else {
			v.Payload, _ = json.Marshal(data) // keep invalid JSON as a JSON string
		}
	}
	t.out(Event{Type: KindViolation, Violation: v})
}

// fieldViolation reports a missing or mistyped field of the current payload.
func (t *Turn) fieldViolation(what string, err error) {
	kind := ViolationWrongType
	var fe *fieldErr
	if errors.As(err, &fe) && fe.missing {
		kind = ViolationMissingField
	}
	t.violate(kind, what+": "+err.Error(), t.pl.raw)
}

// closedList reports a value outside one of the contract's closed lists.
// The value is kept as received (the caller has already mapped it); the
// violation says which field and what the contract allows.
func (t *Turn) closedList(what, field, v string, allowed []string) {
	if slices.Contains(allowed, v) {
		return
	}
	t.violate(ViolationUnknownValue, fmt.Sprintf("%s: %s %q is not one of the contract's values (%s); kept as received",
		what, field, v, strings.Join(allowed, ", ")), t.pl.raw)
}

// unknown reports a payload the dialect does not define.
func (t *Turn) unknown(typ string) {
	msg := "payload without a known \"type\""
	if typ != "" {
		msg = fmt.Sprintf("unknown event type %q for dialect %s", typ, t.dialect)
	}
	t.violate(ViolationUnknownType, msg, t.pl.raw)
}

// rawEvent returns the current payload for Event.Raw (a copy).
func (t *Turn) rawEvent() json.RawMessage { return json.RawMessage(t.pl.raw) }

// adapter maps the payloads of one dialect. handle is called once per
// parsed payload (a JSON object); finish is called when the stream stops
// before the terminal event and may decide the outcome ("" leaves it to the
// generic rules: interrupted, cancelled, ...).
type adapter interface {
	handle(t *Turn, p *payload)
	finish(t *Turn, cause error) (Outcome, string)
}

// lateAdapter is an adapter whose stream may legitimately go on after a
// terminal event. late is called with each payload that arrives once the
// turn is done; it returns false to leave it to the generic after_terminal
// violation, true when it took care of it (mapped it, possibly after
// reopen, or reported a more precise violation).
type lateAdapter interface {
	late(t *Turn, p *payload) bool
}

// fastAdapter is an adapter with a shortcut for its most frequent payloads.
// fast returns false, having done nothing, for anything it does not
// recognise byte for byte; the payload then takes the general path. Its
// result must be exactly the general path's (TestFastPathMatches and
// FuzzFastPath check it).
type fastAdapter interface {
	fast(t *Turn, data string) bool
}

func newAdapter(d Dialect) adapter {
	switch d {
	case DialectRAG:
		return &ragAdapter{}
	case DialectTextbook:
		return &textbookAdapter{}
	case DialectLifecycle:
		return &lifecycleAdapter{}
	case DialectOracle:
		return &oracleAdapter{}
	}
	return &agentsmithyAdapter{}
}
