package protocol

import "fmt"

// lifecycleAdapter maps the lifecycle contract (PRD v4.2.3 sections 2.x):
// one turn is message_start … message_end on a long-lived session stream,
// and every event in between carries the turn's message_id.
//
// Invariants checked ("Implementation Clarifications"): one message_end per
// message_start, with the same message_id; no event with a message_id after
// message_end (the turn is over: a violation, dropped); an error is followed
// by message_end, which then ends the turn with OutcomeError. An error with
// a null message_id before any message_start ends the turn at once (the
// server emits no message_end then). The deprecated done ends it too.
type lifecycleAdapter struct {
	messageID string // of the open message_start
	started   bool
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
		a.started, a.messageID = true, id
		t.out(Event{Type: KindSegment, Segment: &Segment{Block: "message", Phase: "start", ID: id}})
	case "message_end":
		id, _ := p.optStr("message_id")
		if !a.started {
			t.violate(ViolationOrder, "message_end without message_start; dropped", p.raw)
			return
		}
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
			t.end(OutcomeError, "upstream error before message_start")
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
	if !ok || v == "null" || typ == "message_start" {
		return true
	}
	if jsonKind(v) != 's' {
		t.fieldViolation(typ, &fieldErr{key: "message_id", want: "a string or null"})
		return false
	}
	id := unquote(v)
	switch {
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
	if a.started && t.errSeen && cause == nil {
		t.index = -1
		t.violate(ViolationOrder, "error was not followed by message_end", "")
		return OutcomeError, "upstream error (no message_end followed)"
	}
	return "", ""
}
