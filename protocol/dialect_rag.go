package protocol

import (
	"encoding/json"
	"fmt"
)

// ragAdapter maps the rag contract: status, metadata (citations),
// {"message":{"content","thinking"}} tokens and {"error","details"}. It has
// no terminal event: a clean end of the body completes the turn (or ends it
// in error after an error event), a cut body interrupts it.
type ragAdapter struct{}

type ragCitation struct {
	FileName      *string  `json:"fileName"`
	File          *string  `json:"file"`
	HeaderContext string   `json:"headerContext"`
	Score         *float64 `json:"score"`
	Preview       string   `json:"preview"`
}

func (ragAdapter) handle(t *Turn, p *payload) {
	typ, typed := p.typeName()
	switch {
	case typed && typ == "status":
		msg, err := p.str("message")
		if err != nil {
			t.fieldViolation("status", err)
			return
		}
		t.out(Event{Type: KindNotice, Notice: &Notice{Kind: "status", Message: msg}})
	case typed && typ == "metadata":
		ragMetadata(t, p)
	case !typed && p.has("message"):
		v, _ := p.get("message")
		if jsonKind(v) != 'o' {
			t.fieldViolation("token", &fieldErr{key: "message", want: "an object"})
			return
		}
		var m payload
		_ = m.parse(v) // validated with the outer payload
		content, cerr := m.optStr("content")
		thinking, terr := m.optStr("thinking")
		if cerr != nil || terr != nil || (!m.has("content") && !m.has("thinking")) {
			t.fieldViolation("token", &fieldErr{key: "message.content", missing: cerr == nil && terr == nil, want: "a string"})
			return
		}
		if thinking != "" {
			t.out(Event{Type: KindReasoning, Text: thinking})
		}
		if content != "" {
			t.out(Event{Type: KindText, Text: content})
		}
	case !typed && p.has("error"):
		msg, err := p.str("error")
		if err != nil {
			t.fieldViolation("error", err)
			return
		}
		if d, _ := p.optStr("details"); d != "" {
			msg += ": " + d
		}
		t.out(Event{Type: KindError, Error: &ErrorInfo{Code: "upstream", Message: msg}, Raw: t.rawEvent()})
	default:
		t.unknown(typ)
	}
}

func ragMetadata(t *Turn, p *payload) {
	raw, ok := p.get("citations")
	if !ok || jsonKind(raw) != 'a' {
		t.fieldViolation("metadata", &fieldErr{key: "citations", missing: !ok, want: "an array"})
		return
	}
	var cs []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &cs); err != nil {
		t.fieldViolation("metadata", err)
		return
	}
	for i, c := range cs {
		var rc ragCitation
		if err := json.Unmarshal(c, &rc); err != nil || rc.FileName == nil {
			msg := fmt.Sprintf("metadata: citations[%d] needs a string \"fileName\"", i)
			if rc.File != nil {
				msg += " (it has \"file\", which the contract forbids)"
			}
			t.violate(ViolationMissingField, msg, string(c))
			continue
		}
		t.out(Event{Type: KindCitation, Citation: &Citation{
			File: *rc.FileName, Section: rc.HeaderContext, Score: rc.Score, Snippet: rc.Preview,
		}})
	}
}

func (ragAdapter) finish(t *Turn, cause error) (Outcome, string) {
	if cause != nil {
		return "", ""
	}
	if t.errSeen {
		return OutcomeError, "upstream error"
	}
	return OutcomeCompleted, ""
}
