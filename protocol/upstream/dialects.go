package upstream

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/smith-dev/smith/protocol"
)

// The other dialects serve the same demo agent in their own contracts
// (seeds 000 rag, 001 textbook, 003 oracle; lifecycle is in lifecycle.go).
// None of them writes files: a change travels as a tool result in the
// shapes of docs/dialects.md, and the client applies it. rag and textbook
// have no tool events at all, so there the change is only described in
// the text (the turn has no change event).

// changeResultFor is the tool-result payload of an edit
// (docs/dialects.md, "File changes carried by tool results").
func changeResultFor(e *fileEdit) changeResult {
	r := changeResult{Path: e.Rel, Reason: e.Reason}
	switch {
	case e.Kind == protocol.ChangeDelete:
		r.Kind = "delete"
	case e.Write:
		c := e.New
		r.Content = &c
		if !e.Existed {
			r.Kind = "create"
		}
	default:
		d := standardDiff("a/"+e.Rel, "b/"+e.Rel, e.Old, e.New)
		r.Diff = &d
	}
	return r
}

// toolResult is what a tool returns in dialects that stream results.
func toolResult(t *toolStep) any {
	if t.Edit != nil {
		return changeResultFor(t.Edit)
	}
	return t.Result
}

// rag payloads (Node: JSON.stringify, LF framing).
type (
	ragStatus struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	ragCitation struct {
		FileName      string  `json:"fileName"`
		HeaderContext string  `json:"headerContext"`
		Score         float64 `json:"score"`
		Preview       string  `json:"preview"`
	}
	ragMetadata struct {
		Type      string        `json:"type"`
		Citations []ragCitation `json:"citations"`
	}
	ragMessage struct {
		Content  string `json:"content"`
		Thinking string `json:"thinking,omitempty"`
	}
	ragToken struct {
		Message ragMessage `json:"message"`
	}
	ragError struct {
		Error   string `json:"error"`
		Details string `json:"details"`
	}
)

// textbook payloads (FastAPI: json.dumps, LF framing).
type (
	tbDelta struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	tbCitation struct {
		Chapter        string  `json:"chapter"`
		Section        string  `json:"section"`
		Title          string  `json:"title"`
		URL            string  `json:"url"`
		RelevanceScore float64 `json:"relevance_score"`
		Snippet        string  `json:"snippet,omitempty"`
	}
	tbCitationEvent struct {
		Type     string     `json:"type"`
		Citation tbCitation `json:"citation"`
	}
	tbDone struct {
		Type      string       `json:"type"`
		Citations []tbCitation `json:"citations"`
	}
	tbError struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    string `json:"code"`
	}
)

// oracle payloads (json.dumps, LF framing).
type (
	orContent struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	orSource struct {
		Path    string  `json:"path"`
		Title   string  `json:"title"`
		Snippet string  `json:"snippet"`
		Score   float64 `json:"score"`
	}
	orSourceEvent struct {
		Type   string   `json:"type"`
		Source orSource `json:"source"`
	}
	orToolCallBody struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
		Status    string `json:"status"`
	}
	orToolCall struct {
		Type     string         `json:"type"`
		ToolCall orToolCallBody `json:"tool_call"`
	}
	orToolResult struct {
		Type       string `json:"type"`
		ToolCallID string `json:"tool_call_id"`
		ToolResult any    `json:"tool_result"`
	}
	orSystemMeta struct {
		CurrentValue int    `json:"current_value"`
		LimitValue   int    `json:"limit_value"`
		Percent      int    `json:"percent"`
		LimitType    string `json:"limit_type"`
	}
	orSystem struct {
		Type          string       `json:"type"`
		SystemType    string       `json:"system_type"`
		SystemMessage string       `json:"system_message"`
		Metadata      orSystemMeta `json:"metadata"`
	}
	orDone struct {
		Type       string `json:"type"`
		TokensUsed int    `json:"tokens_used"`
		ModelUsed  string `json:"model_used"`
		ContextID  string `json:"context_id"`
	}
	orError struct {
		Type  string `json:"type"`
		Error string `json:"error"`
	}
)

func lfHeader() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	return h
}

// genericTurn renders a rag, textbook or oracle turn.
func (s *Server) genericTurn(req chatRequest) *turn {
	started := time.Now()
	sc := plan(s.ws, req.Message)
	switch s.opts.Dialect {
	case protocol.DialectRAG:
		return ragTurn(sc, time.Since(started))
	case protocol.DialectTextbook:
		return textbookTurn(sc)
	default:
		return oracleTurn(sc, req.ContextID)
	}
}

func ragTurn(sc *script, search time.Duration) *turn {
	fr := framing{style: styleNode}
	t := &turn{header: lfHeader(), fr: fr, sc: sc,
		text: func(c string) []byte { return fr.event(ragToken{ragMessage{Content: c}}) },
	}
	ms := float64(search.Microseconds()) / 1000
	t.header.Set("Server-Timing", fmt.Sprintf("embed;dur=0.0, search;dur=%.1f, total;dur=%.1f", ms, ms))
	add := func(o op) { t.ops = append(t.ops, o) }
	add(op{frame: fr.event(ragStatus{"status", ""})})
	cites := []ragCitation{}
	for _, c := range sc.Citations {
		cites = append(cites, ragCitation{c.File, c.Header, round2(c.Score), c.Snippet})
	}
	add(op{frame: fr.event(ragMetadata{"metadata", cites})})
	for _, c := range deltas(sc.Reasoning) {
		add(op{frame: fr.event(ragToken{ragMessage{Thinking: c}}), delta: true})
	}
	for _, c := range deltas(sc.Text()) {
		add(op{frame: t.text(c), delta: true})
	}
	if sc.Fail != "" {
		add(op{frame: fr.event(ragError{sc.Fail, "demo agent failure requested"})})
	}
	// rag ends with the body; its last event is the terminal one for the
	// no-done fault's purposes.
	t.ops[len(t.ops)-1].terminal = true
	return t
}

func textbookTurn(sc *script) *turn {
	fr := framing{style: stylePython}
	t := &turn{header: lfHeader(), fr: fr, sc: sc,
		text: func(c string) []byte { return fr.event(tbDelta{"delta", c}) },
	}
	add := func(o op) { t.ops = append(t.ops, o) }
	var cites []tbCitation
	for i, c := range sc.Citations {
		cites = append(cites, tbCitation{
			Chapter:        fmt.Sprintf("chapter-%02d", i+1),
			Section:        fmt.Sprintf("section-%d-%d", i+1, c.Line),
			Title:          c.File,
			URL:            "/" + c.File + fmt.Sprintf("#L%d", c.Line),
			RelevanceScore: round2(c.Score),
			Snippet:        c.Snippet,
		})
	}
	// Citations arrive between the intro and the rest, as they are
	// "identified during response generation".
	for _, c := range deltas(sc.Intro) {
		add(op{frame: t.text(c), delta: true})
	}
	for _, c := range cites {
		add(op{frame: fr.event(tbCitationEvent{"citation", c})})
	}
	for _, c := range deltas(sc.Outro) {
		add(op{frame: t.text(c), delta: true})
	}
	if sc.Fail != "" {
		add(op{frame: fr.event(tbError{"error", sc.Fail, "generation_failed"}), terminal: true})
		return t
	}
	done := tbDone{"done", []tbCitation{}}
	for _, c := range cites {
		c.Snippet = ""
		done.Citations = append(done.Citations, c)
	}
	add(op{frame: fr.event(done), terminal: true})
	return t
}

func oracleTurn(sc *script, contextID string) *turn {
	fr := framing{style: stylePython}
	if contextID == "" {
		contextID = randomHex(16)
	}
	t := &turn{header: lfHeader(), fr: fr, sc: sc,
		text: func(c string) []byte { return fr.event(orContent{"content", c}) },
	}
	add := func(o op) { t.ops = append(t.ops, o) }
	if sc.LongTask {
		add(op{frame: fr.event(orSystem{"system", "limit_warning",
			"Approaching iteration limit (7/10). Consider wrapping up your response.",
			orSystemMeta{7, 10, 70, "iteration"}})})
	}
	for _, c := range deltas(sc.Reasoning) {
		add(op{frame: fr.event(orContent{"thinking", c}), delta: true})
	}
	first := sc.Intro
	if len(sc.Tools) == 0 {
		first = sc.Text()
	}
	for _, c := range deltas(first) {
		add(op{frame: t.text(c), delta: true})
	}
	for _, tool := range sc.Tools {
		add(op{frame: fr.event(orToolCall{"tool_call", orToolCallBody{tool.ID, tool.Name, tool.Args, "running"}})})
		add(op{frame: fr.event(orToolResult{"tool_result", tool.ID, toolResult(tool)})})
	}
	for _, c := range sc.Citations {
		add(op{frame: fr.event(orSourceEvent{"source", orSource{c.File, c.Header, c.Snippet, round2(c.Score)}})})
	}
	if len(sc.Tools) > 0 {
		for _, c := range deltas(sc.Outro) {
			add(op{frame: t.text(c), delta: true})
		}
	}
	if sc.Fail != "" {
		add(op{frame: fr.event(orError{"error", sc.Fail}), terminal: true})
		return t
	}
	tokens := (len(sc.Message) + len(sc.Reasoning) + len(sc.Text()) + 3) / 4
	add(op{frame: fr.event(orDone{"done", tokens, modelName, contextID}), terminal: true})
	return t
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// uuid4 is a random RFC 4122 version 4 UUID (crypto.randomUUID()).
func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return strings.Join([]string{h[:8], h[8:12], h[12:16], h[16:20], h[20:]}, "-")
}
