package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// The lifecycle dialect has no stream per request. The client opens one
// long-lived GET session stream per dialog (its first event,
// session_start, names the session, which smith uses as the dialog id),
// then POSTs each message; the turn's events (message_start ...
// message_end) arrive on the session stream. A pump goroutine per session
// reads that stream and hands the events of the current turn to the Chat
// that waits for them, which drives the turn's state machine (Turn) itself.
//
// Cancelling a lifecycle turn closes its session stream: the contract has no
// cancel request, and a closed stream is what makes its server stop. The
// dialog ends with it (later turns on it fail with ErrSessionClosed).

// lifecycleSession is one open session stream.
type lifecycleSession struct {
	id     string
	url    string
	cancel context.CancelCauseFunc // closes the GET
	rd     *SSEReader
	done   chan struct{} // closed when the pump has ended

	mu       sync.Mutex
	turn     *lifecycleTurn // the turn events go to; nil between turns
	draining bool           // an abandoned turn is still running upstream
	err      error          // why the stream ended, once it has
}

// lifecycleTurn receives one turn's raw events from the pump.
type lifecycleTurn struct {
	events chan streamItem
	done   chan struct{} // closed by endTurn when the owner stops listening
	once   sync.Once
}

type streamItem struct {
	ev  SSEEvent
	err error // the session stream ended (io.EOF when cleanly)
}

// lifecycleEnd reports whether ev ends a lifecycle turn: message_end, or an
// error that belongs to no started message (then no message_end follows).
func lifecycleEnd(ev SSEEvent) bool {
	var p struct {
		Type      string          `json:"type"`
		MessageID json.RawMessage `json:"message_id"`
	}
	if json.Unmarshal([]byte(ev.Data), &p) != nil {
		return false
	}
	switch p.Type {
	case "message_end", "done":
		return true
	case "error":
		return len(p.MessageID) == 0 || string(p.MessageID) == "null" || string(p.MessageID) == `""`
	}
	return false
}

func (c *Client) chatLifecycle(ctx context.Context, req ChatRequest, emit func(Event)) (*Summary, error) {
	s, err := c.session(ctx, req.DialogID)
	if err != nil {
		return c.failTurn(ctx, req, emit, err)
	}
	req.DialogID = s.id
	t, err := s.beginTurn()
	if err != nil {
		return c.failTurn(ctx, req, emit, err)
	}
	aborted := false // a turn abandoned midway keeps running upstream
	defer func() { s.endTurn(t, aborted) }()
	// The guard's causes are picked up below (fired); there is no request
	// of the turn's own to close.
	guard := c.startGuard(s.url, func(error) {})
	defer guard.stop()
	emit = guard.wrap(emit)

	body, err := c.requestBody(req)
	if err != nil {
		return c.failTurn(ctx, req, emit, err)
	}
	// The POST may return at once or only when the turn is over; the turn's
	// events may come before its answer. Whichever comes first decides.
	postCtx, cancelPost := context.WithCancel(ctx)
	defer cancelPost()
	posted := make(chan error, 1)
	go func() { posted <- c.postMessage(postCtx, s.id, body) }()

	var first *streamItem
	var timeout <-chan time.Time // nil: never
	if idle := c.idleTimeout(); idle > 0 {
		timer := time.NewTimer(idle)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case err := <-posted:
		if err != nil {
			return c.failTurn(ctx, req, emit, err)
		}
	case it := <-t.events:
		if it.err != nil {
			return c.failTurn(ctx, req, emit, sessionClosed(s.id, it.err))
		}
		first = &it
	case <-timeout:
		// Neither an answer nor an event: the message may still be queued
		// upstream, so the dialog counts as busy until its message_end.
		aborted = true
		return c.failTurn(ctx, req, emit, &IdleTimeoutError{URL: s.url, Timeout: c.idleTimeout().String()})
	case <-guard.fired:
		aborted = true
		return c.failTurn(ctx, req, emit, guard.cause)
	case <-ctx.Done():
		s.close(ctx.Err())
		return c.failTurn(ctx, req, emit, context.Cause(ctx))
	}

	sum, ended := c.followTurn(ctx, req, s, t, first, guard, emit)
	aborted = !ended
	if ctx.Err() != nil {
		// Detach first: the pump may be waiting to hand this turn an event.
		s.endTurn(t, aborted)
		s.close(ctx.Err())
		<-s.done // the dialog is gone once Chat returns
	}
	return sum, nil
}

// followTurn drives the turn's state machine with the events the pump hands
// over, until the turn's terminal event, the end of the session stream, an
// idle timeout or ctx. It reports whether the terminal event was seen.
func (c *Client) followTurn(ctx context.Context, req ChatRequest, s *lifecycleSession, t *lifecycleTurn, first *streamItem, guard *turnGuard, emit func(Event)) (*Summary, bool) {
	turn := NewTurn(c.streamOptions(req, nil))
	if first != nil {
		turn.Feed(first.ev, emit)
	}
	var timer *time.Timer
	var timeout <-chan time.Time // nil: never
	if idle := c.idleTimeout(); idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		timeout = timer.C
	}
	for !turn.Done() {
		select {
		case it := <-t.events:
			if it.err != nil {
				return turn.Finish(sessionEnded(it.err), emit), false
			}
			turn.Feed(it.ev, emit)
			// The idle time starts after emit: an editor slow to read is
			// not a silent upstream.
			if timer != nil {
				timer.Reset(c.idleTimeout())
			}
		case <-timeout:
			return turn.Finish(&IdleTimeoutError{URL: s.url, Timeout: c.idleTimeout().String()}, emit), false
		case <-guard.fired:
			return turn.Finish(guard.cause, emit), false
		case <-ctx.Done():
			return turn.Finish(context.Cause(ctx), emit), false
		}
	}
	return turn.Finish(nil, emit), true
}

// sessionClosed is ErrSessionClosed for the dialog id, whose session
// stream ended with err.
func sessionClosed(id string, err error) error {
	return errorf(ErrSessionClosed, "lifecycle dialog %s ended: %v (a lifecycle dialog ends with its stream): start a new dialog", id, err)
}

// sessionEnded is the cause of a turn whose session stream ended under it.
func sessionEnded(err error) error {
	if err == io.EOF {
		return errors.New("the session stream ended before the turn's message_end")
	}
	return fmt.Errorf("the session stream failed: %w", err)
}

// postMessage sends one message of the lifecycle dialog id. 409 means the
// session is still busy with the previous one.
func (c *Client) postMessage(ctx context.Context, id string, body []byte) error {
	req, err := c.newRequest(ctx, http.MethodPost, c.cfg.MessagePath, nil, body)
	if err != nil {
		return err
	}
	res, err := c.do(req)
	if err != nil {
		return err
	}
	if err := checkStatus(res); err != nil {
		var he *HTTPError
		if errors.As(err, &he) && he.Status == http.StatusConflict {
			return errorf(ErrDialogBusy, "lifecycle dialog %s is still answering an earlier message (%w): %s", id, err, busyAdvice)
		}
		return err
	}
	// The answer's body says nothing the stream will not; drain a little so
	// the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	return res.Body.Close()
}

// session returns the open session for id, or opens a new one when id is "".
func (c *Client) session(ctx context.Context, id string) (*lifecycleSession, error) {
	if id != "" {
		c.mu.Lock()
		s := c.sessions[id]
		c.mu.Unlock()
		if s == nil {
			return nil, errorf(ErrSessionClosed, "lifecycle dialog %s has no open session stream (a lifecycle dialog ends with its stream): start a new dialog", id)
		}
		return s, nil
	}
	s, err := c.openSession(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.sessions[s.id] = s
	c.mu.Unlock()
	go c.pump(s)
	return s, nil
}

// openSession opens a session stream and waits for its session_start. The
// stream outlives ctx, which bounds only the opening.
func (c *Client) openSession(ctx context.Context) (*lifecycleSession, error) {
	sctx, cancel := context.WithCancelCause(context.Background())
	stopOpen := context.AfterFunc(ctx, func() { cancel(ctx.Err()) })
	defer stopOpen()
	wd := c.startWatchdog(cancel, c.cfg.SessionPath)
	res, err := c.openStream(sctx, http.MethodGet, c.cfg.SessionPath, nil)
	if err != nil {
		wd.stop()
		cancel(err)
		return nil, err
	}
	u := res.Request.URL.Redacted()
	wd.r = res.Body
	rd := NewSSEReader(wd, c.cfg.MaxEventSize)
	fail := func(err error) (*lifecycleSession, error) {
		wd.stop()
		cancel(err)
		rd.Close()
		res.Body.Close()
		return nil, err
	}
	for {
		ev, err := rd.Next()
		if err != nil {
			if ctx.Err() != nil {
				return fail(ctx.Err())
			}
			return fail(fmt.Errorf("GET %s: the session stream ended before session_start: %w", u, err))
		}
		var p struct {
			Type      string `json:"type"`
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal([]byte(ev.Data), &p) != nil || p.Type != "session_start" {
			c.log.Debug("lifecycle: ignoring an event before session_start", "url", u, "data", ev.Data)
			continue
		}
		if p.SessionID == "" {
			return fail(fmt.Errorf("GET %s: session_start without a sessionId", u))
		}
		wd.stop() // between turns the stream may stay quiet for as long as it likes
		s := &lifecycleSession{id: p.SessionID, url: u, cancel: cancel, rd: rd, done: make(chan struct{})}
		go func() { <-s.done; rd.Close(); res.Body.Close() }()
		return s, nil
	}
}

// pump reads the session stream until it ends, handing each event to the
// current turn, or dropping it between turns.
func (c *Client) pump(s *lifecycleSession) {
	defer close(s.done)
	defer func() {
		c.mu.Lock()
		if c.sessions[s.id] == s {
			delete(c.sessions, s.id)
		}
		c.mu.Unlock()
	}()
	for {
		ev, err := s.rd.Next()
		s.mu.Lock()
		t := s.turn
		if err != nil && s.err == nil {
			s.err = err
		}
		if t == nil && err == nil && s.draining && lifecycleEnd(ev) {
			s.draining = false
		}
		s.mu.Unlock()
		if t != nil {
			select {
			case t.events <- streamItem{ev: ev, err: err}:
			case <-t.done:
			}
		} else if err == nil {
			c.log.Debug("lifecycle: event outside a turn dropped", "session", s.id, "data", ev.Data)
		}
		if err != nil {
			return
		}
	}
}

// beginTurn makes t the session's current turn. A session can run one turn
// at a time, like its server.
func (s *lifecycleSession) beginTurn() (*lifecycleTurn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, sessionClosed(s.id, s.err)
	}
	if s.turn != nil || s.draining {
		return nil, errorf(ErrDialogBusy, "lifecycle dialog %s is still answering an earlier message: %s", s.id, busyAdvice)
	}
	t := &lifecycleTurn{events: make(chan streamItem), done: make(chan struct{})}
	s.turn = t
	return t, nil
}

// endTurn detaches t; calling it again does nothing. An aborted turn keeps
// running upstream until its message_end, so its remaining events are
// dropped, and new turns refused, until then.
func (s *lifecycleSession) endTurn(t *lifecycleTurn, aborted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn == t {
		s.turn = nil
		s.draining = aborted
	}
	t.once.Do(func() { close(t.done) })
}

// close ends the session stream.
func (s *lifecycleSession) close(cause error) {
	s.cancel(cause)
}
