package protocol

import (
	"context"
	"strings"
	"testing"
)

// Contract cases written from the seed documents (lifecycle: seed 002,
// textbook: seed 001, oracle: seed 003), independently of the goldens.

func dataEvents(payloads ...string) string {
	var b strings.Builder
	for _, p := range payloads {
		b.WriteString("data: " + p + "\n\n")
	}
	return b.String()
}

func readContract(t *testing.T, d Dialect, body string) (*Summary, []Event) {
	t.Helper()
	var evs []Event
	sum := ReadTurn(context.Background(), strings.NewReader(body), StreamOptions{TurnID: "t1", Dialect: d}, record(&evs))
	checkTurnInvariants(t, evs)
	return sum, evs
}

func violationsOf(sum *Summary, kind string) []Violation {
	var out []Violation
	for _, v := range sum.Violations {
		if v.Kind == kind {
			out = append(out, v)
		}
	}
	return out
}

func TestLifecycleSeveralMessagesAccumulate(t *testing.T) {
	sum, _ := readContract(t, DialectLifecycle, dataEvents(
		`{"type":"message_start","message_id":"m1"}`,
		`{"type":"text","message_id":"m1","content":"first. "}`,
		`{"type":"message_end","message_id":"m1"}`,
		`{"type":"status","status":"thinking","message":"Thinking..."}`,
		`{"type":"message_start","message_id":"m2"}`,
		`{"type":"text","message_id":"m2","content":"second."}`,
		`{"type":"message_end","message_id":"m2"}`,
	))
	if sum.Outcome != OutcomeCompleted || sum.Text != "first. second." || len(sum.Violations) != 0 {
		t.Fatalf("outcome %s, text %q, violations %v; want completed, both messages' text, no violation", sum.Outcome, sum.Text, sum.Violations)
	}
}

func TestLifecycleSecondMessageOpenAtEndIsInterrupted(t *testing.T) {
	sum, _ := readContract(t, DialectLifecycle, dataEvents(
		`{"type":"message_start","message_id":"m1"}`,
		`{"type":"text","message_id":"m1","content":"a"}`,
		`{"type":"message_end","message_id":"m1"}`,
		`{"type":"message_start","message_id":"m2"}`,
		`{"type":"text","message_id":"m2","content":"b"}`,
	))
	if sum.Outcome != OutcomeInterrupted || sum.Text != "ab" {
		t.Fatalf("outcome %s, text %q; want interrupted (m2 never ended) with text ab", sum.Outcome, sum.Text)
	}
}

func TestLifecycleSessionErrorIsReportedNotDropped(t *testing.T) {
	sum, _ := readContract(t, DialectLifecycle, dataEvents(
		`{"type":"message_start","message_id":"m1"}`,
		`{"type":"text","message_id":"m1","content":"ok"}`,
		`{"type":"message_end","message_id":"m1"}`,
		`{"type":"error","message_id":null,"code":"SESSION_NOT_FOUND","message":"Session not found"}`,
	))
	if len(sum.Errors) != 1 || sum.Errors[0].Code != "SESSION_NOT_FOUND" {
		t.Fatalf("errors %v; want the session-level error reported", sum.Errors)
	}
	if sum.Outcome != OutcomeError || len(sum.Violations) != 0 {
		t.Fatalf("outcome %s, violations %v; want error and no violation", sum.Outcome, sum.Violations)
	}
}

func TestLifecycleForbiddenEventsFlagged(t *testing.T) {
	sum, _ := readContract(t, DialectLifecycle, dataEvents(
		`{"type":"message_start","message_id":"m1"}`,
		`{"type":"text","message_id":"m1","content":"kept "}`,
		`{"type":"text","content":"unplaceable "}`, // no message_id inside a message
		`{"type":"message_end","message_id":"m1"}`,
		`{"type":"text","message_id":"m1","content":"late "}`, // names an ended message
		`{"type":"message_end","message_id":"m1"}`,            // a second message_end
		`{"type":"message_start","message_id":"m2"}`,
		`{"type":"tool_start","tool":"execute_sql"}`, // no message_id
		`{"type":"text","message_id":"m2","content":"also kept"}`,
		`{"type":"message_end","message_id":"m2"}`,
	))
	if sum.Text != "kept also kept" {
		t.Errorf("text %q; want only the placeable text", sum.Text)
	}
	if len(sum.ToolCalls) != 0 {
		t.Errorf("tool calls %v; the tool_start without message_id cannot be placed", sum.ToolCalls)
	}
	if sum.Outcome != OutcomeCompleted {
		t.Errorf("outcome %s, want completed", sum.Outcome)
	}
	missing := violationsOf(sum, ViolationMissingField)
	if len(missing) != 2 || !strings.Contains(missing[0].Message, `"message_id"`) || missing[0].EventIndex != 2 || missing[1].EventIndex != 7 {
		t.Errorf("missing_field violations %v; want two naming message_id, at events 2 and 7", missing)
	}
	late := violationsOf(sum, ViolationAfterTerminal)
	if len(late) != 2 || !strings.Contains(late[0].Message, `"m1"`) || late[0].EventIndex != 4 || late[1].EventIndex != 5 {
		t.Errorf("after_terminal violations %v; want the late text and the second message_end of m1", late)
	}
}

func TestTextbookCitationFieldsChecked(t *testing.T) {
	sum, _ := readContract(t, DialectTextbook, dataEvents(
		`{"type":"delta","content":"Physical AI"}`,
		`{"type":"citation","citation":{"chapter":"chapter-01","section":"section-1-1","url":"/docs/a","relevance_score":0.9}}`,
		`{"type":"citation","citation":{"chapter":"chapter-02","section":"section-2-1","title":"Robots","url":"/docs/b","relevance_score":"high"}}`,
		`{"type":"done","citations":[{"chapter":"chapter-02","section":"section-2-1","title":"Robots","url":"/docs/b","relevance_score":0.8},{"chapter":"chapter-03","section":"s","title":"Sensors","relevance_score":0.7},{"chapter":7,"section":"s4","title":"Motors","url":"/docs/d","relevance_score":0.6}]}`,
	))
	var titles []string
	for _, c := range sum.Citations {
		titles = append(titles, c.Title)
	}
	if strings.Join(titles, ",") != "Robots,Motors" {
		t.Errorf("citations %v; want Robots (score mistyped, rest kept) and Motors (chapter mistyped, rest kept)", titles)
	}
	want := []struct{ kind, field string }{
		{ViolationMissingField, `"citation.title"`},
		{ViolationWrongType, `"citation.relevance_score"`},
		{ViolationMissingField, `"citations[1].url"`},
		{ViolationWrongType, `"citations[2].chapter"`},
	}
	if len(sum.Violations) != len(want) {
		t.Fatalf("violations %v; want %d", sum.Violations, len(want))
	}
	for i, w := range want {
		if v := sum.Violations[i]; v.Kind != w.kind || !strings.Contains(v.Message, w.field) {
			t.Errorf("violation %d: %s %q; want %s naming %s", i, v.Kind, v.Message, w.kind, w.field)
		}
	}
	if sum.Outcome != OutcomeCompleted {
		t.Errorf("outcome %s, want completed", sum.Outcome)
	}
}

func TestOracleToolCallStatusUpdatesAreOneCall(t *testing.T) {
	sum, evs := readContract(t, DialectOracle, dataEvents(
		`{"type":"tool_call","tool_call":{"id":"c1","name":"search_code","arguments":{"q":"auth"},"status":"pending"}}`,
		`{"type":"tool_call","tool_call":{"id":"c1","name":"search_code","arguments":{"q":"auth"},"status":"running"}}`,
		`{"type":"tool_call","tool_call":{"id":"c2","name":"read","arguments":{},"status":"running"}}`,
		`{"type":"tool_call","tool_call":{"id":"c1","name":"search_code","arguments":{"q":"auth"},"status":"done"}}`,
		`{"type":"done","tokens_used":3}`,
	))
	if len(sum.ToolCalls) != 2 || sum.ToolCalls[0].ID != "c1" || sum.ToolCalls[0].Status != "done" || sum.ToolCalls[1].ID != "c2" {
		t.Fatalf("tool calls %+v; want c1 (status done) and c2", sum.ToolCalls)
	}
	n := 0
	for _, e := range evs {
		if e.Type == KindToolCall {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d toolCall events, want 4 (each status update is told)", n)
	}
}

func TestClosedListsReportOutsideValues(t *testing.T) {
	t.Run("textbook error code", func(t *testing.T) {
		sum, _ := readContract(t, DialectTextbook, dataEvents(`{"type":"error","message":"slow down","code":"rate_limited"}`))
		if len(sum.Errors) != 1 || sum.Errors[0].Code != "rate_limited" || sum.Outcome != OutcomeError {
			t.Fatalf("errors %v outcome %s; want the code as received, outcome error", sum.Errors, sum.Outcome)
		}
		v := violationsOf(sum, ViolationUnknownValue)
		if len(v) != 1 || !strings.Contains(v[0].Message, `"rate_limited"`) {
			t.Fatalf("violations %v; want one unknown_value naming the code", sum.Violations)
		}
	})
	t.Run("textbook unknown is in the list", func(t *testing.T) {
		sum, _ := readContract(t, DialectTextbook, dataEvents(`{"type":"error","message":"oops","code":"unknown"}`))
		if len(sum.Violations) != 0 {
			t.Fatalf("violations %v; unknown is one of the contract's codes", sum.Violations)
		}
	})
	t.Run("oracle system_type", func(t *testing.T) {
		sum, evs := readContract(t, DialectOracle, dataEvents(
			`{"type":"system","system_type":"budget_notice","system_message":"half the budget is gone"}`,
			`{"type":"content","content":"answer"}`,
			`{"type":"done"}`,
		))
		if sum.Outcome != OutcomeCompleted || sum.Text != "answer" {
			t.Fatalf("outcome %s text %q; the violation must not end the turn", sum.Outcome, sum.Text)
		}
		v := violationsOf(sum, ViolationUnknownValue)
		if len(v) != 1 || !strings.Contains(v[0].Message, `"budget_notice"`) {
			t.Fatalf("violations %v; want one unknown_value naming the system_type", sum.Violations)
		}
		found := false
		for _, e := range evs {
			found = found || e.Type == KindNotice && e.Notice.Code == "budget_notice"
		}
		if !found {
			t.Error("the system notice is not recorded with the system_type as received")
		}
	})
}
