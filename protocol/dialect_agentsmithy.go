package protocol

import (
	"encoding/json"
	"strings"
)

// agentsmithyAdapter maps AgentSmithy payloads: v2 (current), v1.x and the
// legacy v0 (shared reference agentsmithy.md sections 4, 5 and 7).
//
// v1/v2 file_edit events report edits the server has already written
// (AppliedUpstream); v0 diff events are instructions to apply. The protocol
// version is learnt from the shapes seen and recorded on the summary.
type agentsmithyAdapter struct {
	lastCall *asToolCall // the latest v1/v2 tool_call, for file_edit without diff
	errored  bool        // a v1/v2 error was seen: only done may follow
	fastSaw  bool        // fast has recorded v1 (once is enough: saw only raises)
}

type asToolCall struct {
	name string
	args map[string]json.RawMessage
}

// version ranks: a v2 sign beats v1, v1 beats v0.
func (a *agentsmithyAdapter) saw(t *Turn, v string) {
	if v > t.protocol {
		t.protocol = v
	}
}

func (a *agentsmithyAdapter) handle(t *Turn, p *payload) {
	typ, typed := p.typeName()
	if a.errored && typ != "done" && !p.has("done") && t.protocol != "v0" {
		// v1/v2: "error is immediately followed by done and nothing else".
		t.violate(ViolationOrder, "event between error and done (done must follow an error)", p.raw)
	}
	if !typed {
		if p.has("type") {
			t.fieldViolation("agentsmithy payload", &fieldErr{key: "type", want: "a string"})
			return
		}
		a.untyped(t, p)
		return
	}
	switch typ {
	case "chat", "reasoning":
		a.saw(t, "v1")
		c, err := p.str("content")
		if err != nil {
			t.fieldViolation(typ, err)
			return
		}
		k := KindText
		if typ == "reasoning" {
			k = KindReasoning
		}
		t.out(Event{Type: k, Text: c})
	case "chat_start", "chat_end", "reasoning_start", "reasoning_end", "summary_start", "summary_end":
		a.saw(t, "v1")
		block, phase, _ := strings.Cut(typ, "_")
		if block == "chat" {
			block = "text"
		}
		t.out(Event{Type: KindSegment, Segment: &Segment{Block: block, Phase: phase}})
	case "user":
		a.saw(t, "v2")
		a.user(t, p)
	case "tool_call":
		a.saw(t, "v1")
		a.toolCall(t, p)
	case "file_edit":
		a.saw(t, "v1")
		a.fileEdit(t, p)
	case "search":
		a.saw(t, "v1")
		q, _ := p.optStr("query")
		t.out(Event{Type: KindNotice, Notice: &Notice{Kind: "search", Message: q}, Raw: t.rawEvent()})
	case "error":
		a.saw(t, "v1")
		msg, err := p.str("error")
		if err != nil {
			t.fieldViolation("error", err)
			msg = ""
		}
		// v1/v2: error is terminal for the turn, and done follows it.
		t.out(Event{Type: KindError, Error: &ErrorInfo{Code: "upstream", Message: msg}, Raw: t.rawEvent()})
		a.errored = true
	case "done":
		a.saw(t, "v1")
		a.done(t)
	case "classification":
		a.saw(t, "v0")
		tt, err := p.str("task_type")
		if err != nil {
			t.fieldViolation("classification", err)
			return
		}
		t.out(Event{Type: KindNotice, Notice: &Notice{Kind: "classification", Message: tt}, Raw: t.rawEvent()})
	case "diff", "file_change", "edit", "change_applied", "file_patched":
		a.saw(t, "v0")
		a.legacyDiff(t, p, typ)
	case "tool_result":
		a.saw(t, "v0")
		a.legacyToolResult(t, p)
	default:
		t.unknown(typ)
	}
}

// The byte layout of the server's deltas (agentsmithy.md section 2: Python's
// json.dumps separators, dialog_id first), up to the dialog id and after it.
const (
	asDeltaPrefix    = `{"dialog_id": "`
	asChatInfix      = `", "type": "chat", "content": "`
	asReasoningInfix = `", "type": "reasoning", "content": "`
)

// fast maps chat and reasoning deltas laid out exactly as the server writes
// them, with the turn's known dialog id, by comparing bytes and scanning only
// the content string instead of the whole JSON: they are nearly every event
// of a turn. Everything else (other key orders or spacing, another dialog
// id, after an error) takes the general path.
func (a *agentsmithyAdapter) fast(t *Turn, data string) bool {
	id := t.sum.DialogID
	if a.errored || id == "" || len(data) < len(asDeltaPrefix)+len(id)+len(asChatInfix)+2 ||
		data[:len(asDeltaPrefix)] != asDeltaPrefix || data[len(asDeltaPrefix):len(asDeltaPrefix)+len(id)] != id {
		return false
	}
	rest := data[len(asDeltaPrefix)+len(id):]
	kind := KindText
	switch {
	case strings.HasPrefix(rest, asChatInfix):
		rest = rest[len(asChatInfix):]
	case strings.HasPrefix(rest, asReasoningInfix):
		rest, kind = rest[len(asReasoningInfix):], KindReasoning
	default:
		return false
	}
	if !strings.HasSuffix(rest, `"}`) {
		return false
	}
	// The content as a quoted JSON string: it must end exactly at the "}.
	q := data[len(data)-len(rest)-1 : len(data)-1]
	text := q[1 : len(q)-1]
	if !plainJSONString(text) {
		var ok bool
		if text, ok = unquoteShort(text); !ok {
			// \u escapes, or not a JSON string ending at the "}: the
			// scanner decides, encoding/json decodes.
			sc := scanner{s: q}
			if sc.str() != nil || sc.i != len(q) {
				return false
			}
			text = unquote(q)
		}
	}
	if !a.fastSaw {
		a.saw(t, "v1")
		a.fastSaw = true
	}
	t.out(Event{Type: kind, Text: text})
	return true
}

// untyped handles v0 payloads without "type": content, done, error.
func (a *agentsmithyAdapter) untyped(t *Turn, p *payload) {
	switch {
	case p.has("content"):
		a.saw(t, "v0")
		c, err := p.str("content")
		if err != nil {
			t.fieldViolation("content", err)
			return
		}
		t.out(Event{Type: KindText, Text: c})
	case p.has("error"):
		a.saw(t, "v0")
		msg, err := p.str("error")
		if err != nil {
			t.fieldViolation("error", err)
		}
		t.out(Event{Type: KindError, Error: &ErrorInfo{Code: "upstream", Message: msg}, Raw: t.rawEvent()})
		if t.protocol == "v0" {
			t.end(OutcomeError, "upstream error") // v0: an error ends the stream, no done follows
		}
	case p.has("done"):
		if v, _ := p.get("done"); v != "true" {
			t.fieldViolation("done", &fieldErr{key: "done", want: "true"})
			return
		}
		a.saw(t, "v0")
		a.done(t)
	default:
		t.unknown("")
	}
}

func (a *agentsmithyAdapter) done(t *Turn) {
	if t.errSeen {
		t.end(OutcomeError, "upstream error")
		return
	}
	t.end(OutcomeCompleted, "")
}

// finish: v1/v2 "error then EOF without done" is still a terminal error.
func (a *agentsmithyAdapter) finish(t *Turn, cause error) (Outcome, string) {
	if t.errSeen && cause == nil {
		return OutcomeError, "upstream error (the stream ended without done)"
	}
	return "", ""
}

func (a *agentsmithyAdapter) user(t *Turn, p *payload) {
	c, err := p.str("content")
	if err != nil {
		t.fieldViolation("user", err)
		return
	}
	cp, _ := p.optStr("checkpoint")
	sess, _ := p.optStr("session")
	t.out(Event{Type: KindNotice, Notice: &Notice{Kind: "user", Message: c, Checkpoint: cp, Session: sess}, Raw: t.rawEvent()})
}

func (a *agentsmithyAdapter) toolCall(t *Turn, p *payload) {
	name, err := p.str("name")
	if err != nil {
		t.fieldViolation("tool_call", err)
		return
	}
	args := p.rawMsg("args")
	call := &asToolCall{name: name}
	if args != nil {
		if jsonKind(string(args)) != 'o' {
			t.fieldViolation("tool_call", &fieldErr{key: "args", want: "an object"})
		} else if err := json.Unmarshal(args, &call.args); err != nil {
			t.fieldViolation("tool_call", err)
		}
	}
	a.lastCall = call
	t.out(Event{Type: KindToolCall, ToolCall: &ToolCall{Name: name, Args: args}, Raw: t.rawEvent()})
}

// fileEdit maps a v1/v2 file_edit: the server already wrote the file.
// With diff (replace_in_file) the raw difflib text is kept as is (diffapply
// repairs its quirk). Without diff, the preceding tool_call says what
// happened: write_to_file → the whole content from args.content (kind
// modify: the server overwrote or created it, and smith cannot tell which
// from the stream), delete_file → delete. Anything else is a modify
// notification without content.
func (a *agentsmithyAdapter) fileEdit(t *Turn, p *payload) {
	file, err := p.str("file")
	if err != nil {
		t.fieldViolation("file_edit", err)
		return
	}
	diff, err := p.optStr("diff")
	if err != nil {
		t.fieldViolation("file_edit", err)
		return
	}
	cp, _ := p.optStr("checkpoint")
	c := &Change{Path: file, Kind: ChangeModify, Diff: diff, AppliedUpstream: true, Checkpoint: cp, Source: "file_edit"}
	if diff != "" {
		if strings.Contains(diff, "\n@@ -0,0 ") || strings.HasPrefix(diff, "@@ -0,0 ") {
			c.Kind = ChangeCreate
		}
	} else if call := a.lastCall; call != nil && call.matches(file) {
		switch call.name {
		case "write_to_file":
			if raw, ok := call.args["content"]; ok {
				var s string
				if json.Unmarshal(raw, &s) == nil {
					c.Content, c.HasContent = s, true
				}
			}
		case "delete_file":
			c.Kind = ChangeDelete
		}
	}
	a.lastCall = nil
	t.out(Event{Type: KindChange, Change: c, Raw: t.rawEvent()})
}

// matches reports whether the tool call's args.path can be the file_edit's
// file: the server resolves a relative path against the project root, so
// the absolute file must end with it.
func (c *asToolCall) matches(file string) bool {
	raw, ok := c.args["path"]
	if !ok {
		return true // no path to compare: trust the order (tool_call, then its file_edit)
	}
	var path string
	if json.Unmarshal(raw, &path) != nil || path == "" {
		return true
	}
	path = strings.TrimPrefix(path, "./")
	return file == path || strings.HasSuffix(file, "/"+path)
}

// legacyDiff maps a v0 diff event (and the pass-through types that carry
// file+diff). file and diff are required; line_start, line_end and reason
// may be absent or null.
func (a *agentsmithyAdapter) legacyDiff(t *Turn, p *payload, typ string) {
	diff, err := p.str("diff")
	if err != nil {
		if typ != "diff" {
			t.out(Event{Type: KindNotice, Notice: &Notice{Kind: typ}, Raw: t.rawEvent()})
			return
		}
		t.fieldViolation("diff", err)
		return
	}
	file, err := p.str("file")
	if err != nil {
		t.fieldViolation(typ, err)
		return
	}
	c := &Change{Path: file, Diff: diff, Source: "diff"}
	c.Kind, _ = diffKind(diff)
	if c.Path == "" {
		_, c.Path = diffKind(diff)
	}
	c.Reason, _ = p.optStr("reason")
	var e1, e2 error
	c.LineStart, e1 = p.optInt("line_start")
	c.LineEnd, e2 = p.optInt("line_end")
	for _, e := range []error{e1, e2} {
		if e != nil {
			t.fieldViolation(typ, e)
		}
	}
	if t.proposeOnce(c) {
		t.out(Event{Type: KindChange, Change: c, Raw: t.rawEvent()})
	}
}

func (a *agentsmithyAdapter) legacyToolResult(t *Turn, p *payload) {
	name, _ := p.optStr("name")
	res := p.rawMsg("result")
	if res == nil {
		t.fieldViolation("tool_result", &fieldErr{key: "result", missing: true})
		return
	}
	t.out(Event{Type: KindToolResult, ToolResult: &ToolResult{Name: name, Result: res}, Raw: t.rawEvent()})
	t.changeFromResult(name, string(res))
}
