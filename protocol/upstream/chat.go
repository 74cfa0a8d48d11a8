package upstream

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/smith-dev/smith/protocol"
)

// chatRequest is what the chat route needs from any dialect's body.
type chatRequest struct {
	Message   string
	DialogID  string // AgentSmithy dialog_id
	ContextID string // oracle context_id
	SessionID string // lifecycle sessionId
	Stream    bool
}

// agentSmithyBody is AgentSmithy's ChatRequest.
type agentSmithyBody struct {
	Messages *[]struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Context  json.RawMessage `json:"context"`
	Stream   *bool           `json:"stream"`
	DialogID *string         `json:"dialog_id"`
}

// parseAgentSmithy validates the body like the real route: 422 for shape
// errors, 400 when no user message exists.
func parseAgentSmithy(w http.ResponseWriter, r *http.Request) (chatRequest, bool) {
	var body agentSmithyBody
	if !decodeBody(w, r, &body) {
		return chatRequest{}, false
	}
	if body.Messages == nil {
		write422(w, validationError{Type: "missing", Loc: []any{"body", "messages"}, Msg: "Field required", Input: map[string]any{}})
		return chatRequest{}, false
	}
	req := chatRequest{Stream: body.Stream == nil || *body.Stream}
	if body.DialogID != nil {
		req.DialogID = *body.DialogID
	}
	found := false
	for i := len(*body.Messages) - 1; i >= 0; i-- {
		m := (*body.Messages)[i]
		var content string
		if err := json.Unmarshal(m.Content, &content); err != nil {
			write422(w, validationError{Type: "string_type", Loc: []any{"body", "messages", i, "content"}, Msg: "Input should be a valid string", Input: json.RawMessage(orNull(m.Content))})
			return chatRequest{}, false
		}
		if m.Role == "user" && !found {
			req.Message, found = content, true
		}
	}
	if !found {
		writeJSON(w, http.StatusBadRequest, detail("No user message found"))
		return chatRequest{}, false
	}
	return req, true
}

func orNull(b json.RawMessage) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

// genericBody accepts the bodies smith's client sends to the other
// dialects (docs/upstream.md) and a few common spellings.
type genericBody struct {
	Message   *string `json:"message"`
	Query     *string `json:"query"`
	Question  *string `json:"question"`
	Prompt    *string `json:"prompt"`
	ContextID string  `json:"context_id"`
	SessionID string  `json:"sessionId"`
	Messages  []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// parseGeneric reads the user's message; it answers 400 (Node style
// {"error": ...}) when there is none.
func parseGeneric(w http.ResponseWriter, r *http.Request) (chatRequest, bool) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	var body genericBody
	if err == nil {
		err = json.Unmarshal(data, &body)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, struct {
			Error string `json:"error"`
		}{"Invalid JSON body: " + err.Error()})
		return chatRequest{}, false
	}
	req := chatRequest{ContextID: body.ContextID, SessionID: body.SessionID, Stream: true}
	for _, p := range []*string{body.Message, body.Query, body.Question, body.Prompt} {
		if p != nil && req.Message == "" {
			req.Message = *p
		}
	}
	for i := len(body.Messages) - 1; i >= 0 && req.Message == ""; i-- {
		if body.Messages[i].Role == "user" {
			req.Message = body.Messages[i].Content
		}
	}
	if strings.TrimSpace(req.Message) == "" {
		writeJSON(w, http.StatusBadRequest, struct {
			Error string `json:"error"`
		}{"message is required"})
		return chatRequest{}, false
	}
	return req, true
}

// handleChat is POST /api/chat for every dialect.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	faults, err := s.requestFaults(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, detail(err.Error()))
		return
	}
	if answerFault(w, faults) {
		return
	}
	if s.opts.Replay != nil {
		s.serveReplay(w, r)
		return
	}
	switch s.opts.Dialect {
	case protocol.DialectLifecycle:
		s.postMessage(w, r, faults)
	case protocol.DialectAgentSmithy:
		req, ok := parseAgentSmithy(w, r)
		if !ok {
			return
		}
		if s.opts.Protocol == ProtocolV0 {
			s.streamTurn(w, r, faults, s.legacyTurn(req))
			return
		}
		t, err := s.agentSmithyTurn(req)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, detail(err.Error()))
			return
		}
		if !req.Stream {
			s.answerNonStreaming(w, t)
			return
		}
		s.streamTurn(w, r, faults, t)
	default:
		req, ok := parseGeneric(w, r)
		if !ok {
			return
		}
		s.streamTurn(w, r, faults, s.genericTurn(req))
	}
}

// turn is a rendered turn: response headers, the ops, and what to do
// when it has been played (or cut).
type turn struct {
	header   http.Header
	fr       framing
	ops      []op
	text     func(string) []byte // a text delta frame of the dialect (huge-event)
	shutdown []op                // sent instead of the rest when the server closes mid-turn
	ping     func() []byte       // nil: the dialect sends no pings
	sc       *script
	rec      *turnRecord // AgentSmithy v1/v2 history; nil for other dialects
}

func sseHeader() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	return h
}

// streamTurn answers 200 with the turn's SSE stream.
func (s *Server) streamTurn(w http.ResponseWriter, r *http.Request, faults []Fault, t *turn) {
	if !s.beginStream(w) {
		return
	}
	defer s.streams.Done()
	if t.rec != nil {
		defer s.commit(t.rec)
	}
	for k, v := range t.header {
		w.Header()[k] = v
	}
	w.WriteHeader(http.StatusOK)
	sk := newSink(w)
	if err := sk.write(nil); err != nil { // flush the head at once
		return
	}
	if t.ping != nil {
		defer sk.pinger(s.pingInterval(DefaultPingInterval), t.ping)()
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.shutdown, cancel)
	defer stop()
	err := play(ctx, sk, applyFaults(t.ops, faults, t.fr, t.text), s.opts.DeltaDelay)
	if err != nil && s.shutdown.Err() != nil && r.Context().Err() == nil {
		_ = play(r.Context(), sk, t.shutdown, 0)
	}
}

// pingInterval applies Options.PingInterval to a dialect's default.
func (s *Server) pingInterval(def time.Duration) time.Duration {
	switch {
	case s.opts.PingInterval < 0:
		return 0
	case s.opts.PingInterval > 0:
		return s.opts.PingInterval
	}
	return def
}

// answerNonStreaming is AgentSmithy's stream=false answer: the turn runs
// to the end and the text comes back as one JSON object.
func (s *Server) answerNonStreaming(w http.ResponseWriter, t *turn) {
	if t.rec != nil {
		defer s.commit(t.rec)
	}
	for _, o := range t.ops {
		if o.action != nil {
			_ = o.action()
		}
		if o.lazy != nil {
			_ = o.lazy()
		}
		if o.record != nil {
			o.record()
		}
	}
	meta := struct {
		Checkpoint string `json:"checkpoint,omitempty"`
		Session    string `json:"session,omitempty"`
	}{}
	if t.rec != nil {
		meta.Checkpoint, meta.Session = t.rec.checkpoint, t.rec.session
	}
	writeJSON(w, http.StatusOK, struct {
		Content  string `json:"content"`
		Done     bool   `json:"done"`
		Metadata any    `json:"metadata"`
	}{t.sc.Text(), true, meta})
}
