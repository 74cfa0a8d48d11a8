package protocol

import (
	"encoding/json"
)

// oracleAdapter maps the oracle contract: thinking, content, source,
// tool_call, tool_result, system (limit notices), done and error. done and
// error are terminal. File changes travel inside tool_result.tool_result.
type oracleAdapter struct {
	calls map[string]ToolCall // tool_call id → the call as last reported
}

// The closed unions of the contract's system chunk.
var (
	oracleSystemTypes = []string{"limit_warning", "limit_reached", "no_progress", "error_limit"}
	oracleLimitTypes  = []string{"iteration", "token", "timeout"}
)

type oracleToolCall struct {
	ID        string          `json:"id"`
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Status    string          `json:"status"`
}

// oracleSource accepts the usual names of a SourceReference's fields; the
// contract names the type but not its members.
type oracleSource struct {
	File     string   `json:"file"`
	Path     string   `json:"path"`
	FilePath string   `json:"file_path"`
	Title    string   `json:"title"`
	URL      string   `json:"url"`
	Section  string   `json:"section"`
	Chapter  string   `json:"chapter"`
	Score    *float64 `json:"score"`
	Snippet  string   `json:"snippet"`
	Content  string   `json:"content"`
}

func (a *oracleAdapter) handle(t *Turn, p *payload) {
	typ, _ := p.typeName()
	switch typ {
	case "thinking", "content":
		c, err := p.str("content")
		if err != nil {
			t.fieldViolation(typ, err)
			return
		}
		k := KindText
		if typ == "thinking" {
			k = KindReasoning
		}
		t.out(Event{Type: k, Text: c})
	case "source":
		raw, ok := p.get("source")
		var s oracleSource
		if !ok || jsonKind(raw) != 'o' || json.Unmarshal([]byte(raw), &s) != nil {
			t.fieldViolation("source", &fieldErr{key: "source", missing: !ok, want: "an object"})
			return
		}
		c := &Citation{File: firstOf(s.File, s.Path, s.FilePath), Title: s.Title, URL: s.URL, Section: s.Section,
			Chapter: s.Chapter, Score: s.Score, Snippet: firstOf(s.Snippet, s.Content)}
		t.out(Event{Type: KindCitation, Citation: c, Raw: t.rawEvent()})
	case "tool_call":
		raw, ok := p.get("tool_call")
		var c oracleToolCall
		if !ok || jsonKind(raw) != 'o' || json.Unmarshal([]byte(raw), &c) != nil {
			t.fieldViolation("tool_call", &fieldErr{key: "tool_call", missing: !ok, want: "a tool call object"})
			return
		}
		// Chunks with the same id are one call whose status moves (pending
		// → running → done): an update may leave out what has not changed.
		prev, known := a.calls[c.ID]
		if c.Name == nil && !known {
			t.fieldViolation("tool_call", &fieldErr{key: "tool_call.name", missing: true})
			return
		}
		call := ToolCall{ID: c.ID, Name: prev.Name, Args: prev.Args, Status: c.Status}
		if c.Name != nil {
			call.Name = *c.Name
		}
		if len(c.Arguments) > 0 {
			call.Args = c.Arguments
		}
		if a.calls == nil {
			a.calls = make(map[string]ToolCall)
		}
		a.calls[c.ID] = call
		t.out(Event{Type: KindToolCall, ToolCall: &call, Raw: t.rawEvent()})
	case "tool_result":
		id, err := p.str("tool_call_id")
		if err != nil {
			t.fieldViolation("tool_result", err)
			return
		}
		res := p.rawMsg("tool_result")
		if res == nil {
			t.fieldViolation("tool_result", &fieldErr{key: "tool_result", missing: true})
			return
		}
		name := a.calls[id].Name
		t.out(Event{Type: KindToolResult, ToolResult: &ToolResult{ID: id, Name: name, Result: res}, Raw: t.rawEvent()})
		t.changeFromResult(name, string(res))
	case "system":
		st, err := p.str("system_type")
		if err != nil {
			t.fieldViolation("system", err)
			return
		}
		msg, err := p.str("system_message")
		if err != nil {
			t.fieldViolation("system", err)
			return
		}
		t.out(Event{Type: KindNotice, Notice: &Notice{Kind: "system", Code: st, Message: msg, Data: p.rawMsg("metadata")}, Raw: t.rawEvent()})
		t.closedList("system", "system_type", st, oracleSystemTypes)
		if raw, ok := p.get("metadata"); ok && jsonKind(raw) == 'o' {
			var m struct {
				LimitType *string `json:"limit_type"`
			}
			if json.Unmarshal([]byte(raw), &m) == nil && m.LimitType != nil {
				t.closedList("system", "metadata.limit_type", *m.LimitType, oracleLimitTypes)
			}
		}
	case "done":
		t.out(Event{Type: KindNotice, Notice: &Notice{Kind: "summary", Data: t.rawEvent()}})
		if t.errSeen {
			t.end(OutcomeError, "upstream error")
		} else {
			t.end(OutcomeCompleted, "")
		}
	case "error":
		msg, err := p.str("error")
		if err != nil {
			t.fieldViolation("error", err)
		}
		t.out(Event{Type: KindError, Error: &ErrorInfo{Code: "upstream", Message: msg}, Raw: t.rawEvent()})
		t.end(OutcomeError, "upstream error")
	default:
		t.unknown(typ)
	}
}

func (a *oracleAdapter) finish(*Turn, error) (Outcome, string) { return "", "" }

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
