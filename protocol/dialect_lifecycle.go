package protocol

import "fmt"

// lifecycleAdapter maps the lifecycle contract (PRD v4.2.3 sections 2.x):
// a message is message_start … message_end, and every event that belongs
// to it carries its message_id.
//
// The chat client drives one Turn per message on the long-lived session
// stream and stops at the message_end. A body read whole (ReadTurn, smith
// replay) may carry several messages: message_end closes its own message
// and ends the turn for now, the next message_start opens the next one
// (the turn goes on and its text accumulates in stream order), and an
// error with a null message_id between messages is a session-level error
// the turn reports and ends with.
//
// Invariants checked ("Implementation Clarifications"): one message_end per
// message_start, with the same message_id; no event naming a message after
// its message_end; every event that belongs to a message (text, tool_start,
// tool_complete, plot_result, thumbnail_update, table_result) carries a
// message_id — one without cannot be placed and is dropped; an error inside
// a message is followed by its message_end, which then ends the turn with
// OutcomeError. An error with a null message_id when no message is open
// ends the turn at once (the server emits no message_end then). The
// deprecated done ends it too.
type lifecycleAdapter struct {
	messageID string          // of the open message_start
	started   bool            // a message is open
	errInMsg  bool            // an error arrived inside the open message
	ended     map[string]bool // messages whose message_end was seen
}

// lifecycleMessageEvents are the events the contract places inside a
// message: each must carry its message_id.
var lifecycleMessageEvents = map[string]bool{
	"text": true, "tool_start": true, "tool_complete": true,
	"plot_result": true, "thumbnail_update": true, "table_result": true,
}

func (a *lifecycleAdapter) handle(t *Turn, p *payload) {
	typ, _ := p.typeName()
	if !a.checkID(t, p, typ) {
		return
	}
	switch typ {
	case "session_start":
		id, err := p.str("sessionId")
		if err != nil {
			t.fieldViolation("session_start", err)
			return
		}
		t.out(Event{Type: KindNotice, Notice: &Notice{Kind: "session", Session: id}, Raw: t.rawEvent()})
	case "message_start":
		id, err := p.str("message_id")
		if err != nil {
			t.fieldViolation("message_start", err)
			return
		}
		if a.started {
			t.violate(ViolationOrder, fmt.Sprintf("message_start %q while message %q is open", id, a.messageID), p.raw)
			return
		}
		if a.ended[id] {
			t.violate(ViolationOrder, fmt.Sprintf("message_start %q: that message already ended; dropped", id), p.raw)
			return
		}
		a.started, a.messageID, a.errInMsg = true, id, false
		t.out(Event{Type: KindSegment, Segment: &Segment{Block: "message", Phase: "start", ID: id}})
	case "message_end":
		id, _ := p.optStr("message_id")
		if !a.started {
			t.violate(ViolationOrder, "message_end without message_start; dropped", p.raw)
			return
		}
		if id == "" {
			id = a.messageID
		}
		if a.ended == nil {
			a.ended = make(map[string]bool)
		}
		a.ended[id], a.started = true, false
		t.out(Event{Type: KindSegment, Segment: &Segment{Block: "message", Phase: "end", ID: id}})
		a.terminal(t)
	case "text":
		c, err := p.str("content")
		if err != nil {
			t.fieldViolation("text", err)
			return
		}
		t.out(Event{Type: KindText, Text: c})
	case "tool_start":
		tool, err := p.str("tool")
		if err != nil {
			t.fieldViolation("tool_start", err)
			return
		}
		t.out(Event{Type: KindToolCall, ToolCall: &ToolCall{Name: tool, Args: p.rawMsg("params"), Status: "started"}, Raw: t.rawEvent()})
	case "tool_complete":
		a.toolComplete(t, p)
	case "plot_result", "table_result", "thumbnail_update":
		key := "plot_title"
		if typ == "table_result" {
			key = "table_title"
		}
		title, err := p.str(key)
		if err != nil {
			t.fieldViolation(typ, err)
			return
		}
		kind := map[string]string{"plot_result": "plot", "table_result": "table", "thumbnail_update": "thumbnail"}[typ]
		t.out(Event{Type: KindNotice, Notice: &Notice{Kind: kind, Message: title, Data: t.rawEvent()}})
	case "status":
		msg, _ := p.optStr("message")
		st, _ := p.optStr("status")
		t.out(Event{Type: KindNotice, Notice: &Notice{Kind: "status", Code: st, Message: msg}})
	case "error":
		msg, err := p.str("message")
		if err != nil {
			t.fieldViolation("error", err)
		}
		code, _ := p.optStr("code")
		if code == "" {
			code = "upstream"
		}
		t.out(Event{Type: KindError, Error: &ErrorInfo{Code: code, Message: msg}, Raw: t.rawEvent()})
		if !a.started {
			reason := "upstream error before message_start"
			if len(a.ended) > 0 {
				reason = "upstream error after message_end (a session-level error)"
			}
			t.end(OutcomeError, reason)
		} else {
			a.errInMsg = true
		}
	case "done": // deprecated by message_end, still terminal
		a.terminal(t)
	default:
		t.unknown(typ)
	}
}

// checkID enforces that message-scoped events carry the open message's id.
func (a *lifecycleAdapter) checkID(t *Turn, p *payload, typ string) bool {
	v, ok := p.get("message_id")
	if !ok || v == "null" {
		if lifecycleMessageEvents[typ] {
			// "Include message_id in all events within an assistant turn":
			// without it the event cannot be placed in a message.
			t.violate(ViolationMissingField, fmt.Sprintf("%s: required field \"message_id\" is missing; dropped", typ), p.raw)
			return false
		}
		return true
	}
	if typ == "message_start" {
		return true
	}
	if jsonKind(v) != 's' {
		t.fieldViolation(typ, &fieldErr{key: "message_id", want: "a string or null"})
		return false
	}
	id := unquote(v)
	switch {
	case a.ended[id] && (!a.started || id != a.messageID):
		t.violate(ViolationAfterTerminal, fmt.Sprintf("%s for message %q after its message_end; dropped", typ, id), p.raw)
		return false
	case !a.started:
		// An error may precede message_start (it then ends the turn); any
		// other message-scoped event without its message_start is dropped.
		t.violate(ViolationOrder, fmt.Sprintf("%s for message %q before its message_start", typ, id), p.raw)
		return typ == "error"
	case id != a.messageID:
		// The PRD's strengthened guard: an event of another message is dropped.
		t.violate(ViolationOrder, fmt.Sprintf("%s carries message_id %q, the open message is %q; dropped", typ, id, a.messageID), p.raw)
		return false
	}
	return true
}

// late takes the payloads that arrive after a message_end ended the turn:
// the next message_start and a session-level error reopen it, a status or
// session_start is mapped as it comes, an event naming an ended message is
// reported as such. Anything else is left to the generic after_terminal.
func (a *lifecycleAdapter) late(t *Turn, p *payload) bool {
	typ, _ := p.typeName()
	v, hasID := p.get("message_id")
	hasID = hasID && v != "null"
	switch {
	case typ == "message_start" && a.ended[p.strOr("message_id")]:
		t.violate(ViolationAfterTerminal, fmt.Sprintf("message_start %q: that message already ended; dropped", p.strOr("message_id")), p.raw)
		return true
	case typ == "message_start", typ == "error" && !hasID:
		t.reopen()
		a.handle(t, p)
		return true
	case (typ == "status" || typ == "session_start") && !hasID:
		a.handle(t, p)
		return true
	case hasID && jsonKind(v) == 's' && a.ended[unquote(v)]:
		t.violate(ViolationAfterTerminal, fmt.Sprintf("%s for message %q after its message_end; dropped", typ, unquote(v)), p.raw)
		return true
	}
	return false
}

func (a *lifecycleAdapter) terminal(t *Turn) {
	if t.errSeen {
		t.end(OutcomeError, "upstream error")
		return
	}
	t.end(OutcomeCompleted, "")
}

// toolComplete maps tool_complete; a result field (a smith extension, see
// docs/dialects.md) may carry a file change.
func (a *lifecycleAdapter) toolComplete(t *Turn, p *payload) {
	tool, err := p.str("tool")
	if err != nil {
		t.fieldViolation("tool_complete", err)
		return
	}
	r := &ToolResult{Name: tool, Result: p.rawMsg("result")}
	if d, ok, err := p.optNum("duration_ms"); err != nil {
		t.fieldViolation("tool_complete", err)
	} else if ok {
		r.DurationMS = d
	}
	r.Error, _ = p.optStr("error")
	t.out(Event{Type: KindToolResult, ToolResult: r, Raw: t.rawEvent()})
	if r.Result != nil && r.Error == "" {
		t.changeFromResult(tool, string(r.Result))
	}
}

// finish: an error inside a message must be followed by message_end; a
// body that ends cleanly without it still ends the turn in error.
func (a *lifecycleAdapter) finish(t *Turn, cause error) (Outcome, string) {
	if a.started && a.errInMsg && cause == nil {
		t.index = -1
		t.violate(ViolationOrder, "error was not followed by message_end", "")
		return OutcomeError, "upstream error (no message_end followed)"
	}
	return "", ""
}
