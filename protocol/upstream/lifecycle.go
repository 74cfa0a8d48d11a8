package upstream

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
)

// The lifecycle dialect (seed 002) keeps one long-lived SSE stream per
// session (GET /api/chat/stream, first event session_start) and takes each
// user message as a separate POST (/api/chat/message, docs/upstream.md);
// the turn's events go out on the session stream, framed by message_start
// and message_end. A session takes one message at a time: a POST while a
// turn runs gets 409.

// lcSession is one open session stream.
type lcSession struct {
	id     string
	sink   *sink
	busy   bool
	ctx    context.Context    // ends with the stream: the client left or the server closes
	cancel context.CancelFunc // ends the stream (a cut fault closes it)
}

type (
	lcSessionStart struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
	}
	lcBare struct {
		Type      string `json:"type"`
		MessageID string `json:"message_id"`
	}
	lcStatus struct {
		Type    string `json:"type"`
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	lcText struct {
		Type      string `json:"type"`
		MessageID string `json:"message_id"`
		Content   string `json:"content"`
	}
	lcToolStart struct {
		Type      string `json:"type"`
		MessageID string `json:"message_id"`
		Tool      string `json:"tool"`
		Params    any    `json:"params"`
	}
	lcToolComplete struct {
		Type       string `json:"type"`
		MessageID  string `json:"message_id"`
		Tool       string `json:"tool"`
		DurationMS int    `json:"duration_ms"`
		Result     any    `json:"result,omitempty"` // smith extension (docs/dialects.md)
	}
	lcTable struct {
		Type            string      `json:"type"`
		MessageID       string      `json:"message_id"`
		TableTitle      string      `json:"table_title"`
		Rows            []fileCount `json:"rows"`
		ReplacePrevious bool        `json:"replace_previous"`
	}
	lcPlotRow struct {
		X     string `json:"x"`
		Y     int    `json:"y"`
		Label string `json:"label"`
	}
	lcPlot struct {
		Type            string      `json:"type"`
		MessageID       string      `json:"message_id"`
		PlotTitle       string      `json:"plot_title"`
		Rows            []lcPlotRow `json:"rows"`
		ReplacePrevious bool        `json:"replace_previous"`
	}
	lcSparkline struct {
		Series []float64 `json:"series"`
	}
	lcThumbnail struct {
		PlotTitle        string      `json:"plot_title"`
		Status           string      `json:"status"`
		Sparkline        lcSparkline `json:"sparkline"`
		PointCount       int         `json:"point_count"`
		SeriesCount      int         `json:"series_count"`
		FocusAnalyteName *string     `json:"focus_analyte_name"`
		LatestValue      *float64    `json:"latest_value"`
		UnitRaw          *string     `json:"unit_raw"`
		UnitDisplay      *string     `json:"unit_display"`
		DeltaPct         *float64    `json:"delta_pct"`
		DeltaDirection   *string     `json:"delta_direction"`
		DeltaPeriod      *string     `json:"delta_period"`
	}
	lcThumbnailUpdate struct {
		Type      string      `json:"type"`
		MessageID string      `json:"message_id"`
		PlotTitle string      `json:"plot_title"`
		ResultID  string      `json:"result_id"`
		Thumbnail lcThumbnail `json:"thumbnail"`
	}
	lcError struct {
		Type      string  `json:"type"`
		MessageID *string `json:"message_id"`
		Code      string  `json:"code"`
		Message   string  `json:"message"`
	}
	lcErrorBody struct {
		Error string `json:"error"`
	}
)

var lcFraming = framing{style: styleNode}

// lifecycleRequest starts both lifecycle routes: 404 when the server speaks
// another dialect, then the request's faults (a fault that answers the
// request itself ends it here). ok is false when the request was answered.
func (s *Server) lifecycleRequest(w http.ResponseWriter, r *http.Request) (faults []Fault, ok bool) {
	if s.opts.Dialect != "lifecycle" {
		writeJSON(w, http.StatusNotFound, detail("Not Found"))
		return nil, false
	}
	faults, err := s.requestFaults(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, lcErrorBody{err.Error()})
		return nil, false
	}
	return faults, !answerFault(w, faults)
}

// handleSessionStream is GET /api/chat/stream.
func (s *Server) handleSessionStream(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.lifecycleRequest(w, r); !ok {
		return
	}
	if s.opts.Replay != nil {
		s.serveReplay(w, r)
		return
	}
	if !s.beginStream(w) {
		return
	}
	defer s.streams.Done()
	for k, v := range sseHeader() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.shutdown, cancel)
	defer stop()
	sess := &lcSession{id: uuid4(), sink: newSink(w), ctx: ctx, cancel: cancel}
	// Registered before session_start goes out: a client may post at once.
	s.mu.Lock()
	s.sessions[sess.id] = sess
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, sess.id)
		s.mu.Unlock()
	}()
	if sess.sink.write(lcFraming.event(lcSessionStart{"session_start", sess.id})) != nil {
		return
	}
	defer sess.sink.close() // runs after the pinger stops; a turn still playing gets errors
	defer sess.sink.pinger(s.pingInterval(DefaultLifecyclePingInterval), func() []byte { return lcFraming.comment("keepalive") })()
	<-ctx.Done()
}

// handleSessionMessage is POST /api/chat/message.
func (s *Server) handleSessionMessage(w http.ResponseWriter, r *http.Request) {
	faults, ok := s.lifecycleRequest(w, r)
	if !ok {
		return
	}
	s.postMessage(w, r, faults)
}

// postMessage is POST /api/chat/message: 202 and the turn on the session
// stream, 409 while the session is busy, 404 for an unknown session.
func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, faults []Fault) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	var body struct {
		SessionID string `json:"sessionId"`
		Message   string `json:"message"`
	}
	if err == nil {
		err = json.Unmarshal(data, &body)
	}
	if err != nil || body.Message == "" || body.SessionID == "" {
		writeJSON(w, http.StatusBadRequest, lcErrorBody{"sessionId and message are required"})
		return
	}
	s.mu.Lock()
	sess := s.sessions[body.SessionID]
	switch {
	case sess == nil:
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, lcErrorBody{"Session not found"})
		return
	case sess.busy:
		s.mu.Unlock()
		writeJSON(w, http.StatusConflict, lcErrorBody{"Session is currently processing a message"})
		return
	}
	sess.busy = true
	s.mu.Unlock()

	msgID := uuid4()
	sc := plan(s.ws, body.Message)
	ops := lifecycleOps(sc, msgID)
	release := func() {
		s.mu.Lock()
		sess.busy = false
		s.mu.Unlock()
	}
	// The seed releases its lock in the same tick as message_end: a client
	// that posts as soon as it reads message_end must not get a 409.
	ops[len(ops)-1].action = func() error { release(); return nil }
	ops = applyFaults(ops, faults, lcFraming, func(c string) []byte { return lcFraming.event(lcText{"text", msgID, c}) })
	cut := hasFault(faults, "cut-mid-event")
	if !s.beginStream(w) {
		release()
		return
	}
	go func() {
		defer s.streams.Done()
		_ = play(sess.ctx, sess.sink, ops, s.opts.DeltaDelay)
		release()
		if cut {
			sess.cancel() // a stream cut mid-event cannot go on
		}
	}()
	writeJSON(w, http.StatusAccepted, struct {
		Status    string `json:"status"`
		SessionID string `json:"sessionId"`
		MessageID string `json:"message_id"`
	}{"processing", sess.id, msgID})
}

func hasFault(faults []Fault, name string) bool {
	for _, f := range faults {
		if f.Name == name {
			return true
		}
	}
	return false
}

// lifecycleOps renders one assistant turn of the lifecycle dialect.
func lifecycleOps(sc *script, id string) []op {
	fr := lcFraming
	var ops []op
	add := func(v any) { ops = append(ops, op{frame: fr.event(v)}) }
	text := func(s string) {
		for _, c := range deltas(s) {
			ops = append(ops, op{frame: fr.event(lcText{"text", id, c}), delta: true})
		}
	}
	add(lcBare{"message_start", id})
	add(lcStatus{"status", "thinking", "Thinking..."})
	text(sc.Intro)
	for _, t := range sc.Tools {
		add(lcToolStart{"tool_start", id, t.Name, t.Args})
		add(lcToolComplete{"tool_complete", id, t.Name, 1, toolResult(t)})
	}
	if sc.Table != nil {
		if sc.Plot {
			add(lcToolStart{"tool_start", id, "show_plot", map[string]string{"plot_title": sc.Table.Title}})
			var rows []lcPlotRow
			var series []float64
			for _, r := range sc.Table.Rows {
				rows = append(rows, lcPlotRow{r.File, r.Lines, "lines"})
				if len(series) < 30 {
					series = append(series, float64(r.Lines))
				}
			}
			if len(series) == 0 {
				series = []float64{0}
			}
			add(lcPlot{"plot_result", id, sc.Table.Title, rows, false})
			unit := "lines"
			var latest *float64
			if n := len(series); n > 0 && len(rows) > 0 {
				latest = &series[n-1]
			}
			add(lcThumbnailUpdate{"thumbnail_update", id, sc.Table.Title, "plot_1", lcThumbnail{
				PlotTitle: sc.Table.Title, Status: "normal", Sparkline: lcSparkline{series},
				PointCount: len(rows), SeriesCount: 1, LatestValue: latest, UnitRaw: &unit, UnitDisplay: &unit,
			}})
			add(lcToolComplete{"tool_complete", id, "show_plot", 1, nil})
		} else {
			add(lcToolStart{"tool_start", id, "show_table", map[string]string{"table_title": sc.Table.Title}})
			add(lcTable{"table_result", id, sc.Table.Title, sc.Table.Rows, false})
			add(lcToolComplete{"tool_complete", id, "show_table", 1, nil})
		}
	}
	text(sc.Outro)
	if sc.Fail != "" {
		add(lcError{"error", &id, "generation_failed", sc.Fail})
	}
	ops = append(ops, op{frame: fr.event(lcBare{"message_end", id}), terminal: true})
	return ops
}
