package editor

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"

	"go.lsp.dev/jsonrpc2"

	"github.com/smith-dev/smith/daemon"
)

// route handles one method. params is the raw "params" member (nil when
// absent); for workspace/executeCommand it is the command's first argument.
type route struct {
	handle func(ctx context.Context, params json.RawMessage) (any, error)
	// async releases the read loop before handle runs. Methods that may call
	// the editor back (workspace/applyEdit) or wait on the upstream must be
	// async, or they deadlock or stall the connection; buffer notifications
	// must not be, because their order is the buffer's history.
	async bool
}

// typed adapts a handler of typed params. Absent params decode as the zero
// value (jsonrpc2's codec rejects an empty input).
func typed[P any, R any](f func(context.Context, *P) (R, error)) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p P
		if len(raw) > 0 && string(raw) != "null" {
			if err := (codec{}).Unmarshal(raw, &p); err != nil {
				return nil, invalidParams("%v", err)
			}
		}
		return f(ctx, &p)
	}
}

// routeTable maps every method smith answers to its handler.
func (c *client) routeTable() map[string]route {
	inline := func(f func(context.Context, json.RawMessage) (any, error)) route { return route{handle: f} }
	async := func(f func(context.Context, json.RawMessage) (any, error)) route {
		return route{handle: f, async: true}
	}
	return map[string]route{
		MethodInitialize:  inline(typed(c.initialize)),
		MethodInitialized: inline(typed(c.initialized)),
		MethodShutdown:    inline(typed(c.shutdown)),
		MethodExit:        inline(typed(c.exit)),
		MethodSetTrace:    inline(typed(ignore)),
		MethodDidOpen:     inline(typed(c.didOpen)),
		MethodDidChange:   inline(typed(c.didChange)),
		MethodDidSave:     inline(typed(c.didSave)),
		MethodDidClose:    inline(typed(c.didClose)),

		MethodDidChangeFolders: inline(typed(ignore)),
		MethodDidChangeConfig:  inline(typed(ignore)),

		MethodExecuteCommand: async(typed(c.executeCommand)),
		MethodCodeAction:     async(typed(c.codeAction)),

		MethodChat:              async(typed(c.chat)),
		MethodDialogs:           async(typed(c.dialogs)),
		MethodDialogNew:         async(typed(c.dialogNew)),
		MethodDialogSelect:      async(typed(c.dialogSelect)),
		MethodDialogRename:      async(typed(c.dialogRename)),
		MethodDialogDelete:      async(typed(c.dialogDelete)),
		MethodHistory:           async(typed(c.history)),
		MethodChanges:           async(typed(c.changes)),
		MethodChangePreview:     async(typed(c.changePreview)),
		MethodChangeApply:       async(typed(c.changeApply)),
		MethodChangeReject:      async(typed(c.changeReject)),
		MethodUndo:              async(typed(c.undo)),
		MethodPatchApply:        async(typed(c.patchApply)),
		MethodSession:           async(typed(sessionCall(c, (*daemon.Engine).Session))),
		MethodCheckpoints:       async(typed(sessionCall(c, (*daemon.Engine).Checkpoints))),
		MethodSessionApprove:    async(typed(sessionCall(c, (*daemon.Engine).Approve))),
		MethodSessionReset:      async(typed(sessionCall(c, (*daemon.Engine).Reset))),
		MethodCheckpointRestore: async(typed(c.checkpointRestore)),
		MethodStatus:            async(typed(c.status)),
	}
}

// ignore accepts a notification smith has no use for.
func ignore(context.Context, *json.RawMessage) (any, error) { return nil, nil }

// dispatch is the connection's handler. It enforces the lifecycle, keeps
// every failure from killing the connection (jsonrpc2 fails the whole
// connection when a notification handler returns an error or any handler
// panics), and turns cancelled requests into RequestCancelled.
func (c *client) dispatch(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	method := req.Method()
	r, known := c.routes[method]
	if gate := c.gate(method); gate != nil {
		if !req.IsCall() {
			return nil, nil // LSP: notifications that cannot be handled are dropped
		}
		return nil, gate
	}
	if !known {
		if !req.IsCall() {
			c.log.Debug("ignoring unknown notification", "method", method)
			return nil, nil
		}
		return jsonrpc2.MethodNotFoundHandler(ctx, req)
	}
	if r.async {
		jsonrpc2.Async(ctx)
	}
	if !c.enter() {
		if !req.IsCall() {
			return nil, nil
		}
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "smith is closing this connection")
	}
	defer c.inflight.Done()
	if strings.HasPrefix(method, "smith/") {
		c.smithAware.Store(true)
	}
	ctx, done := c.cancellable(ctx, req)
	defer done()
	return c.run(ctx, r, method, req.IsCall(), json.RawMessage(req.Params()))
}

// run calls the route, turning a panic into InternalError and swallowing
// the errors of notifications (logged), either of which would otherwise
// end the connection.
func (c *client) run(ctx context.Context, r route, method string, isCall bool, params json.RawMessage) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panicked", "method", method, "panic", p, "stack", string(debug.Stack()))
			res, err = nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "smith: internal error in %s: %v", method, p)
		}
		if !isCall {
			if err != nil {
				c.log.Warn("notification failed", "method", method, "err", err)
			}
			res, err = nil, nil
		}
	}()
	res, err = r.handle(ctx, params)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, jsonrpc2.NewError(CodeRequestCancelled, "request cancelled")
	case err != nil:
		return nil, wireError(err, nil)
	}
	return res, nil
}

// enter counts a handler in, unless the connection is being torn down
// (then teardown may already be waiting for the count to reach zero).
func (c *client) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.inflight.Add(1)
	return true
}

// gate answers methods the lifecycle state does not allow yet or anymore.
func (c *client) gate(method string) error {
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	switch {
	case method == MethodExit:
		return nil
	case st == stateNew && method != MethodInitialize:
		return errNotInitialized
	case st != stateNew && method == MethodInitialize:
		return jsonrpc2.NewError(jsonrpc2.InvalidRequest, "initialize was already received")
	case st == stateShutDown:
		return errShutDown
	}
	return nil
}

// cancellable gives a call its own cancellable context, registered under
// its id for $/cancelRequest.
//
// jsonrpc2.CancelHandler is not used: it derives its context directly from
// the pooled per-request context, and context.WithCancel then starts a
// goroutine that calls the parent's Done after the request may have been
// recycled, which panics ("cannot create context from nil parent") when a
// handler returns quickly. The context here is derived from
// DetachContext (the connection's context), which outlives the request;
// cancelling the connection still cancels it.
func (c *client) cancellable(ctx context.Context, req *jsonrpc2.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancel(jsonrpc2.DetachContext(ctx))
	if !req.IsCall() {
		return ctx, cancel
	}
	id := req.ID()
	c.mu.Lock()
	c.calls[id] = cancel
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
		cancel()
	}
}

// cancelCall cancels the running call id (no-op when it is not running).
func (c *client) cancelCall(id jsonrpc2.ID) {
	c.mu.Lock()
	cancel := c.calls[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// preempter runs on the read loop ahead of dispatch, so a cancellation is
// seen even while the request it cancels is still queued behind others.
type preempter struct {
	cancelRequest  func(jsonrpc2.ID)
	cancelProgress func(token json.RawMessage)
}

func (p preempter) Preempt(_ context.Context, req *jsonrpc2.Request) (any, error) {
	switch req.Method() {
	case MethodCancelRequest:
		var params CancelParams
		if err := json.Unmarshal(req.Params(), &params); err == nil {
			if id := decodeID(params.ID); id.IsValid() {
				p.cancelRequest(id)
			}
		}
		return true, nil // handled (a notification: nothing is sent)
	case MethodProgressCancel:
		var params WorkDoneProgressCancelParams
		if err := json.Unmarshal(req.Params(), &params); err == nil {
			p.cancelProgress(params.Token)
		}
		return true, nil
	}
	return nil, jsonrpc2.ErrNotHandled
}

// call sends a request to the editor and tells it with $/cancelRequest
// when smith stops waiting (jsonrpc2 sends nothing on a cancelled Call).
func (c *client) call(ctx context.Context, method string, params, result any) error {
	id, err := c.conn.Call(ctx, method, params, result)
	if ctx.Err() != nil && id.IsValid() {
		if nerr := c.conn.Notify(context.WithoutCancel(ctx), MethodCancelRequest, map[string]any{"id": idValue(id)}); nerr != nil {
			c.log.Debug("sending $/cancelRequest", "err", nerr)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}
