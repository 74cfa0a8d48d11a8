package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"
)

// signalContext is signal.NotifyContext(parent, sigs...) set up on first
// use rather than at program start: the handler is installed when something
// first waits on the context (Done), asks whether it has ended (Err) or
// derives a context from it (which calls Done). Installing it starts the
// runtime's signal thread and the os/signal loop, which cost 13-18 % of the
// CPU of a command that never waits on its context, such as smith version,
// smith --help or smith config (docs/benchmarks.md, "Start-up (target 4)").
// Until then SIGINT and SIGTERM end the process as in any program: nothing
// is yet waiting on the context that could wind down more gently.
type signalContext struct {
	parent context.Context
	sigs   []os.Signal
	once   sync.Once
	n      atomic.Pointer[notified]
}

// notified is the installed context and the function that releases it.
type notified struct {
	ctx  context.Context
	stop context.CancelFunc
}

// newSignalContext returns a context canceled by the first of sigs, and
// the function that releases its handler (and cancels it), as
// signal.NotifyContext does.
func newSignalContext(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	c := &signalContext{parent: parent, sigs: sigs}
	return c, c.stop
}

// use installs the handler once and returns the context it cancels.
func (c *signalContext) use() context.Context {
	c.once.Do(func() {
		ctx, stop := signal.NotifyContext(c.parent, c.sigs...)
		c.n.Store(&notified{ctx, stop})
	})
	return c.n.Load().ctx
}

// stop releases the handler if it was installed; either way the context is
// canceled afterwards, as after signal.NotifyContext's stop.
func (c *signalContext) stop() {
	c.once.Do(func() {
		ctx, cancel := context.WithCancel(c.parent)
		c.n.Store(&notified{ctx, cancel})
	})
	c.n.Load().stop()
}

func (c *signalContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c *signalContext) Done() <-chan struct{}       { return c.use().Done() }

// Err does not install the handler: until it is installed, no signal can
// have ended the context (it would have ended the process), so the parent
// answers. smith apply asks once before its first rename; installing the
// handler there started two threads of the runtime's for one question.
func (c *signalContext) Err() error {
	if n := c.n.Load(); n != nil {
		return n.ctx.Err()
	}
	return c.parent.Err()
}

// Value asks the installed context once there is one, so that contexts
// derived from this one find its cancelation (context's parentCancelCtx
// looks it up by Value after calling Done).
func (c *signalContext) Value(key any) any {
	if n := c.n.Load(); n != nil {
		return n.ctx.Value(key)
	}
	return c.parent.Value(key)
}

func (c *signalContext) String() string { return "smith's signal context" }
