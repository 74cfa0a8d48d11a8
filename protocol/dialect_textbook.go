package protocol

import (
	"encoding/json"
	"fmt"
)

// textbookAdapter maps the textbook contract: delta, citation, done (with
// all citations) and coded error. done and error are terminal.
type textbookAdapter struct {
	cited map[Citation]bool
}

// textbookErrorCodes is the contract's closed list of error codes (it has
// its own "unknown").
var textbookErrorCodes = []string{"retrieval_failed", "generation_failed", "timeout", "out_of_scope", "unknown"}

// citation reads one citation object field by field: a required field that
// is absent (or null) leaves the citation out, a field of the wrong type is
// reported and left empty while the rest of the citation is kept. what
// names the payload ("citation", "done"), key the object's place in it
// ("citation", "citations[2]"). Every problem is reported, not only the
// first.
func (a *textbookAdapter) citation(t *Turn, what, key, raw string) (Citation, bool) {
	var o payload
	if jsonKind(raw) != 'o' || o.parse(raw) != nil {
		t.fieldViolation(what, &fieldErr{key: key, want: "a citation object"})
		return Citation{}, false
	}
	var c Citation
	ok := true
	for _, f := range []struct {
		name string
		dst  *string
	}{{"chapter", &c.Chapter}, {"section", &c.Section}, {"title", &c.Title}, {"url", &c.URL}, {"snippet", &c.Snippet}} {
		v, present := o.get(f.name)
		switch {
		case (!present || v == "null") && f.name == "snippet": // the one optional field
		case !present || v == "null":
			t.fieldViolation(what, &fieldErr{key: key + "." + f.name, missing: true})
			ok = false
		case jsonKind(v) != 's':
			t.fieldViolation(what, &fieldErr{key: key + "." + f.name, want: "a string"})
		default:
			*f.dst = unquote(v)
		}
	}
	switch v, present := o.get("relevance_score"); {
	case !present || v == "null":
		t.fieldViolation(what, &fieldErr{key: key + ".relevance_score", missing: true})
		ok = false
	default:
		f, isNum, err := o.optNum("relevance_score")
		if err != nil || !isNum {
			t.fieldViolation(what, &fieldErr{key: key + ".relevance_score", want: "a number"})
		} else {
			c.Score = &f
		}
	}
	return c, ok
}

func (a *textbookAdapter) handle(t *Turn, p *payload) {
	typ, _ := p.typeName()
	switch typ {
	case "delta":
		c, err := p.str("content")
		if err != nil {
			t.fieldViolation("delta", err)
			return
		}
		t.out(Event{Type: KindText, Text: c})
	case "citation":
		raw, ok := p.get("citation")
		if !ok {
			t.fieldViolation("citation", &fieldErr{key: "citation", missing: true})
			return
		}
		if c, ok := a.citation(t, "citation", "citation", raw); ok {
			a.cite(t, c)
		}
	case "done":
		// done lists every citation used; those not streamed before are
		// emitted now, so the turn's citations are complete.
		if raw, ok := p.get("citations"); ok && raw != "null" {
			var cs []json.RawMessage
			if jsonKind(raw) != 'a' || json.Unmarshal([]byte(raw), &cs) != nil {
				t.fieldViolation("done", &fieldErr{key: "citations", want: "an array of citations"})
			}
			for i, r := range cs {
				if c, ok := a.citation(t, "done", fmt.Sprintf("citations[%d]", i), string(r)); ok {
					a.cite(t, c)
				}
			}
		}
		if t.errSeen {
			t.end(OutcomeError, "upstream error")
		} else {
			t.end(OutcomeCompleted, "")
		}
	case "error":
		msg, err := p.str("message")
		if err != nil {
			t.fieldViolation("error", err)
		}
		code, err := p.str("code")
		if err != nil {
			t.fieldViolation("error", err)
			code = "unknown"
		}
		t.out(Event{Type: KindError, Error: &ErrorInfo{Code: code, Message: msg}, Raw: t.rawEvent()})
		t.closedList("error", "code", code, textbookErrorCodes)
		t.end(OutcomeError, fmt.Sprintf("upstream error (%s)", code))
	default:
		t.unknown(typ)
	}
}

// cite emits a citation once per turn (by value, ignoring the score).
func (a *textbookAdapter) cite(t *Turn, c Citation) {
	key := c
	key.Score, key.Snippet = nil, ""
	if a.cited[key] {
		return
	}
	if a.cited == nil {
		a.cited = make(map[Citation]bool)
	}
	a.cited[key] = true
	t.out(Event{Type: KindCitation, Citation: &c})
}

func (a *textbookAdapter) finish(*Turn, error) (Outcome, string) { return "", "" }
