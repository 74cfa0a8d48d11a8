package editor

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// progressCreateTimeout bounds the wait for window/workDoneProgress/create.
const progressCreateTimeout = 5 * time.Second

// tokenKey carries the workDoneToken of workspace/executeCommand to the
// smith method it runs.
type tokenKey struct{}

// progress reports one long request with $/progress. The zero value (no
// token, or a client without window.workDoneProgress) reports nothing.
type progress struct {
	c     *client
	token ProgressToken
	done  func()
}

// startProgress begins progress for a request: on the token the client
// gave, or on one smith creates with window/workDoneProgress/create when
// the client announced window.workDoneProgress. Cancelling the progress in
// the editor (window/workDoneProgress/cancel) calls cancel.
func (c *client) startProgress(ctx context.Context, token ProgressToken, title string, cancel context.CancelFunc) *progress {
	if len(token) == 0 {
		if t, ok := ctx.Value(tokenKey{}).(ProgressToken); ok {
			token = t
		}
	}
	if len(token) == 0 {
		c.mu.Lock()
		can := c.caps.workDoneProgress
		c.mu.Unlock()
		if !can {
			return &progress{}
		}
		token = ProgressToken(strconv.Quote(fmt.Sprintf("smith-%d", c.nextToken.Add(1))))
		// An editor that never answers must not hold up the turn.
		cctx, cancelCreate := context.WithTimeout(ctx, progressCreateTimeout)
		err := c.call(cctx, MethodProgressCreate, &WorkDoneProgressCreateParams{Token: token}, nil)
		cancelCreate()
		if err != nil {
			c.log.Debug("the editor refused a progress token", "err", err)
			return &progress{}
		}
	}
	p := &progress{c: c, token: token, done: c.trackProgress(token, cancel)}
	p.send(WorkDoneProgress{Kind: "begin", Title: title, Cancellable: true})
	return p
}

func (p *progress) send(v WorkDoneProgress) {
	if p.c == nil {
		return
	}
	if err := p.c.conn.Notify(context.Background(), MethodProgress, &ProgressParams{Token: p.token, Value: v}); err != nil {
		p.c.log.Debug("sending $/progress", "err", err)
	}
}

// event reports the events worth a status line: tool calls and notices.
// Text deltas are not repeated here; they go out as smith/event.
func (p *progress) event(ev protocol.Event) {
	switch {
	case ev.ToolCall != nil:
		p.send(WorkDoneProgress{Kind: "report", Message: "running " + ev.ToolCall.Name})
	case ev.Notice != nil && ev.Notice.Message != "":
		p.send(WorkDoneProgress{Kind: "report", Message: ev.Notice.Message})
	}
}

// end closes the progress with the turn's outcome.
func (p *progress) end(res *daemon.ChatResult) {
	if p.c == nil {
		return
	}
	msg := "failed"
	if res != nil {
		msg = string(res.Outcome)
	}
	p.send(WorkDoneProgress{Kind: "end", Message: msg})
	p.done()
}

// trackProgress lets window/workDoneProgress/cancel cancel the request;
// the returned func forgets the token.
func (c *client) trackProgress(token ProgressToken, cancel context.CancelFunc) func() {
	key := string(token)
	c.mu.Lock()
	c.progress[key] = cancel
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.progress, key)
		c.mu.Unlock()
	}
}

func (c *client) cancelProgress(token ProgressToken) {
	c.mu.Lock()
	cancel := c.progress[string(token)]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
