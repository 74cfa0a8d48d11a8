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

type textbookCitation struct {
	Chapter        string   `json:"chapter"`
	Section        string   `json:"section"`
	Title          string   `json:"title"`
	URL            string   `json:"url"`
	RelevanceScore *float64 `json:"relevance_score"`
	Snippet        string   `json:"snippet"`
}

func (c textbookCitation) citation() Citation {
	return Citation{Chapter: c.Chapter, Section: c.Section, Title: c.Title, URL: c.URL, Score: c.RelevanceScore, Snippet: c.Snippet}
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
		var c textbookCitation
		if !ok || jsonKind(raw) != 'o' || json.Unmarshal([]byte(raw), &c) != nil {
			t.fieldViolation("citation", &fieldErr{key: "citation", missing: !ok, want: "a citation object"})
			return
		}
		a.cite(t, c.citation())
	case "done":
		// done lists every citation used; those not streamed before are
		// emitted now, so the turn's citations are complete.
		if raw, ok := p.get("citations"); ok && raw != "null" {
			var cs []textbookCitation
			if jsonKind(raw) != 'a' || json.Unmarshal([]byte(raw), &cs) != nil {
				t.fieldViolation("done", &fieldErr{key: "citations", want: "an array of citations"})
			}
			for _, c := range cs {
				a.cite(t, c.citation())
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
