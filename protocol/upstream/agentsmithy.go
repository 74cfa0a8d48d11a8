package upstream

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/smith-dev/smith/protocol"
)

// AgentSmithy v1/v2 payloads. Field order is the wire order of the real
// server's dataclasses: dialog_id, type, then the event's own fields;
// optional fields are absent, never null (agentsmithy.md section 2).
type (
	asBare struct {
		DialogID string `json:"dialog_id"`
		Type     string `json:"type"`
	}
	asContent struct {
		DialogID string `json:"dialog_id"`
		Type     string `json:"type"`
		Content  string `json:"content"`
	}
	asUser struct {
		DialogID   string `json:"dialog_id"`
		Type       string `json:"type"`
		Content    string `json:"content"`
		Checkpoint string `json:"checkpoint,omitempty"`
		Session    string `json:"session,omitempty"`
	}
	asToolCall struct {
		DialogID string `json:"dialog_id"`
		Type     string `json:"type"`
		Name     string `json:"name"`
		Args     any    `json:"args"`
	}
	asFileEdit struct {
		DialogID   string  `json:"dialog_id"`
		Type       string  `json:"type"`
		File       string  `json:"file"`
		Diff       *string `json:"diff,omitempty"`
		Checkpoint string  `json:"checkpoint,omitempty"`
	}
	asError struct {
		DialogID string `json:"dialog_id"`
		Type     string `json:"type"`
		Error    string `json:"error"`
	}
	asDone struct {
		DialogID string `json:"dialog_id"`
		Type     string `json:"type"`
		Done     bool   `json:"done"`
	}
)

// turnRecord collects what a v1/v2 turn put on the wire, for the history
// endpoint; the server commits it when the stream ends, cut or not (the
// real server persists partial replies too).
type turnRecord struct {
	d          *dialog
	checkpoint string
	session    string
	msgs       []storedMessage
}

func (s *Server) commit(r *turnRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range r.msgs {
		if m.User || m.visible() || m.Reasoning != "" || len(m.ToolCalls) > 0 || len(m.FileEdits) > 0 {
			r.d.Messages = append(r.d.Messages, m)
		}
	}
	r.d.Updated = time.Now()
}

// agentSmithyTurn renders a v2 or v1.1 turn. v2 checkpoints the workspace
// before the agent runs (the user event's checkpoint); v1.1 checkpoints
// after every edit (file_edit's checkpoint). The server writes the files
// itself, between tool_call and file_edit.
func (s *Server) agentSmithyTurn(req chatRequest) (*turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.resolveDialogLocked(req.DialogID)
	if err != nil {
		return nil, err
	}
	v2 := s.opts.Protocol == ProtocolV2
	fr := framing{crlf: true, style: stylePython}
	id := d.ID
	sc := plan(s.ws, req.Message)
	rec := &turnRecord{d: d, session: sessionName(d.Session)}
	t := &turn{header: sseHeader(), fr: fr, sc: sc, rec: rec,
		ping: func() []byte { return fr.comment(pythonPing()) },
		text: func(c string) []byte { return fr.event(asContent{id, "chat", c}) },
		shutdown: []op{
			{frame: fr.event(asError{id, "error", "Server is shutting down"})},
			{frame: fr.event(asDone{id, "done", true}), terminal: true},
		},
	}
	t.header.Set("X-Request-Id", "agentsmithy")
	add := func(o op) { t.ops = append(t.ops, o) }
	bare := func(typ string) op { return op{frame: fr.event(asBare{id, typ})} }

	rec.msgs = []storedMessage{{User: true, Content: req.Message}}
	if v2 {
		cp, err := s.checkpointLocked(d, "User message: "+firstLine(req.Message))
		if err != nil {
			return nil, err
		}
		rec.checkpoint = cp
		rec.msgs[0].Checkpoint, rec.msgs[0].Session = cp, rec.session
		add(op{frame: fr.event(asUser{id, "user", req.Message, cp, rec.session})})
	}
	rec.msgs = append(rec.msgs, storedMessage{})
	// First LLM call: reasoning, then the intro (or the whole answer when
	// no tool runs). End markers come after the model's stream, reasoning
	// first (section 5.1).
	first := sc.Intro
	if len(sc.Tools) == 0 {
		first = sc.Text()
	}
	add(bare("reasoning_start"))
	for _, c := range deltas(sc.Reasoning) {
		add(op{frame: fr.event(asContent{id, "reasoning", c}), delta: true, record: func() { rec.msgs[1].Reasoning += c }})
	}
	if first != "" {
		add(bare("chat_start"))
		for _, c := range deltas(first) {
			add(op{frame: fr.event(asContent{id, "chat", c}), delta: true, record: func() { rec.msgs[1].Content += c }})
		}
	}
	add(bare("reasoning_end"))
	if first != "" {
		add(bare("chat_end"))
	}
	if len(sc.Tools) > 0 {
		for _, tool := range sc.Tools {
			hc := historyEvent{Type: "tool_call", ID: tool.ID, Name: tool.Name, Args: tool.Args}
			add(op{frame: fr.event(asToolCall{id, "tool_call", tool.Name, tool.Args}), record: func() { rec.msgs[1].ToolCalls = append(rec.msgs[1].ToolCalls, hc) }})
			if tool.Edit != nil {
				add(s.fileEditOp(d, id, fr, tool.Edit, v2, rec))
			}
		}
		rec.msgs = append(rec.msgs, storedMessage{})
		add(bare("chat_start"))
		for _, c := range deltas(sc.Outro) {
			add(op{frame: fr.event(asContent{id, "chat", c}), delta: true, record: func() { rec.msgs[2].Content += c }})
		}
		add(bare("chat_end"))
	}
	if sc.Fail != "" {
		add(op{frame: fr.event(asError{id, "error", "LLM error: " + sc.Fail})})
	}
	add(op{frame: fr.event(asDone{id, "done", true}), terminal: true})
	return t, nil
}

// fileEditOp writes the edit to disk (the action) and announces it. The
// file field is the absolute path; replace_in_file carries the difflib
// diff, write_to_file and delete_file carry none.
func (s *Server) fileEditOp(d *dialog, id string, fr framing, e *fileEdit, v2 bool, rec *turnRecord) op {
	abs := filepath.Join(s.ws.root, filepath.FromSlash(e.Rel))
	var diff *string
	if e.Kind == protocol.ChangeModify && !e.Write {
		dt := agentSmithyDiff(abs, e.Old, e.New)
		diff = &dt
	}
	var checkpoint string
	o := op{action: func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.applyEdit(e); err != nil {
			s.log.Warn("demo agent edit failed", "file", e.Rel, "err", err)
			return err
		}
		if !v2 {
			cp, err := s.checkpointLocked(d, "Edit "+e.Rel)
			if err != nil {
				return err
			}
			checkpoint = cp
		}
		return nil
	}}
	o.lazy = func() []byte { return fr.event(asFileEdit{id, "file_edit", abs, diff, checkpoint}) }
	o.record = func() {
		rec.msgs[1].FileEdits = append(rec.msgs[1].FileEdits, historyEvent{Type: "file_edit", File: abs, Diff: diff})
	}
	return o
}

// applyEdit performs an edit the way the real tools do: text written as
// UTF-8 with LF line ends, parents created, deletes idempotent.
func (s *Server) applyEdit(e *fileEdit) error {
	p, err := s.ws.abs(e.Rel)
	if err != nil {
		return err
	}
	if e.Kind == protocol.ChangeDelete {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("delete %s: %w", e.Rel, err)
		}
		return nil
	}
	if err := writeFileAtomic(p, []byte(e.New)); err != nil {
		return fmt.Errorf("write %s: %w", e.Rel, err)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return truncate(s, 72)
}

// Legacy v0 payloads: no dialog_id, json.dumps with ensure_ascii=True.
type (
	v0Classification struct {
		Type     string `json:"type"`
		TaskType string `json:"task_type"`
	}
	v0Content struct {
		Content string `json:"content"`
	}
	v0ToolResult struct {
		Type   string `json:"type"`
		Name   string `json:"name"`
		Result any    `json:"result"`
	}
	v0Diff struct {
		Type      string `json:"type"`
		File      string `json:"file"`
		Diff      string `json:"diff"`
		LineStart *int   `json:"line_start"`
		LineEnd   *int   `json:"line_end"`
		Reason    string `json:"reason"`
	}
	v0Done struct {
		Done bool `json:"done"`
	}
	v0Error struct {
		Error string `json:"error"`
	}
)

// legacyTurn renders a v0 turn: the server only proposes; diff events are
// instructions the client applies (agentsmithy.md 7.1).
func (s *Server) legacyTurn(req chatRequest) *turn {
	fr := framing{crlf: true, style: stylePythonASCII}
	sc := plan(s.ws, req.Message)
	t := &turn{header: sseHeader(), fr: fr, sc: sc,
		ping:     func() []byte { return fr.comment(pythonPing()) },
		text:     func(c string) []byte { return fr.event(v0Content{c}) },
		shutdown: []op{{frame: fr.event(v0Error{"Error processing request: Server is shutting down"}), terminal: true}},
	}
	add := func(o op) { t.ops = append(t.ops, o) }
	task := "explain"
	if len(sc.Tools) > 0 {
		task = "edit"
	}
	add(op{frame: fr.event(v0Classification{"classification", task})})
	first := sc.Intro
	if len(sc.Tools) == 0 {
		first = sc.Text()
	}
	for _, c := range deltas(first) {
		add(op{frame: fr.event(v0Content{c}), delta: true})
	}
	for _, tool := range sc.Tools {
		if tool.Edit == nil {
			add(op{frame: fr.event(v0ToolResult{"tool_result", tool.Name, tool.Result})})
			continue
		}
		add(op{frame: fr.event(legacyDiffEvent(tool.Edit))})
	}
	if len(sc.Tools) > 0 {
		for _, c := range deltas(sc.Outro) {
			add(op{frame: fr.event(v0Content{c}), delta: true})
		}
	}
	if sc.Fail != "" {
		// v0: the error is terminal, no done follows.
		add(op{frame: fr.event(v0Error{"Error processing request: " + sc.Fail}), terminal: true})
		return t
	}
	add(op{frame: fr.event(v0Done{true}), terminal: true})
	return t
}

func legacyDiffEvent(e *fileEdit) v0Diff {
	from, to := "a/"+e.Rel, "b/"+e.Rel
	switch {
	case !e.Existed:
		from = "/dev/null"
	case e.Kind == protocol.ChangeDelete:
		to = "/dev/null"
	}
	start, end := changedRange(e.Old, e.New)
	return v0Diff{"diff", e.Rel, legacyDiff(from, to, e.Old, e.New), &start, &end, e.Reason}
}

// changedRange is the 1-based inclusive range of old lines the edit
// touches (for an insertion, the line before which it goes).
func changedRange(oldText, newText string) (int, int) {
	a, b := pySplitlines(oldText, false), pySplitlines(newText, false)
	codes := newSeqMatcher(a, b).opcodes()
	start, end := 0, 0
	for _, c := range codes {
		if c.tag == 'e' {
			continue
		}
		if start == 0 {
			start = c.i1 + 1
		}
		end = max(c.i2, c.i1+1)
	}
	if start == 0 {
		start, end = 1, 1
	}
	return start, end
}
