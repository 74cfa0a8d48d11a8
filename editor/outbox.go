package editor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Defaults of the outgoing queue toward one editor (docs/protocol.md,
// "Backpressure").
const (
	// defaultOutboxLimit is how many bytes may wait for the editor to read
	// them. Beyond it, writers wait and no further request is read. It is
	// small on purpose: what waits here ages (at 100 000 events/s, 256 KiB
	// is about 10 ms of a turn's notifications; 4 MiB made events wait
	// 0.2-0.8 s behind an editor a little slower than the upstream), and
	// a turn held back holds the upstream's stream back too, which is the
	// backpressure wanted. One frame larger than the limit still goes.
	defaultOutboxLimit = 256 << 10
	// defaultWriteStall is how long the queue may stay full with the editor
	// reading nothing before the connection is closed.
	defaultWriteStall = time.Minute
	// outboxChunk bounds one write(2), so that progress of an editor that
	// reads slowly is seen before a whole batch has gone.
	outboxChunk = 256 << 10
	// outboxKeep is the largest batch buffer kept for reuse.
	outboxKeep = 1 << 20
	// closeWait bounds how long closing a connection waits for the editor
	// to read what is still queued (the last answers, exit's).
	closeWait = 5 * time.Second
)

// outbox is the write side of an editor connection: a bounded queue of
// bytes and one goroutine that writes it to the transport.
//
// Batching: a frame is copied into the queue and Write returns; the
// writer goroutine takes everything queued and writes it with one
// write(2), so a burst of notifications costs one system call, and a
// lone one goes out at once (the queue is flushed whenever it drains,
// never on a timer).
//
// Bounds: when limit bytes are queued, Write waits (a turn's events then
// wait, which holds the upstream's stream, not memory), and the read loop
// waits too (waitRoom) instead of reading requests whose answers could
// not be sent. An editor that reads nothing for stall while the queue is
// full is disconnected with a logged reason, so that neither smith nor the
// turn waits on it for good.
type outbox struct {
	w     io.Writer
	close func() error // closes the transport; unblocks a stuck write
	log   *slog.Logger
	limit int
	stall time.Duration

	mu       sync.Mutex
	pending  []byte
	spare    []byte
	waiters  int           // goroutines waiting on progress
	blocked  int           // writers among them
	progress chan struct{} // closed (and replaced) when room may have appeared
	err      error         // sticky: the transport failed, or the editor stopped reading
	closing  bool
	wake     chan struct{} // cap 1: pending is not empty, or closing
	done     chan struct{} // the writer goroutine has returned
}

func newOutbox(w io.Writer, closeTransport func() error, limit int, stall time.Duration, log *slog.Logger) *outbox {
	if limit <= 0 {
		limit = defaultOutboxLimit
	}
	if stall <= 0 {
		stall = defaultWriteStall
	}
	o := &outbox{
		w: w, close: closeTransport, log: log, limit: limit, stall: stall,
		progress: make(chan struct{}),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	go o.run()
	return o
}

// Write queues a copy of p (one whole frame: jsonrpc2 writes each frame
// with one Write). It waits while the queue is full.
func (o *outbox) Write(p []byte) (int, error) {
	o.mu.Lock()
	if err := o.waitLocked(len(p)); err != nil {
		o.mu.Unlock()
		return 0, err
	}
	o.pending = append(o.pending, p...)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// waitRoom waits until the queue is below its limit (or has failed, or
// ctx is done). The read loop calls it before each frame.
func (o *outbox) waitRoom(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.roomLocked() && o.err == nil {
		return nil // the common case: no timer
	}
	stop := context.AfterFunc(ctx, func() {
		o.mu.Lock()
		o.signalLocked()
		o.mu.Unlock()
	})
	defer stop()
	for !o.roomLocked() && o.err == nil && ctx.Err() == nil {
		if err := o.waitProgressLocked(false); err != nil {
			return err
		}
	}
	if o.err != nil {
		return o.err
	}
	return ctx.Err()
}

// roomLocked reports whether another request may be read: the queue is
// at most half full and no writer waits for room (its frame would not fit).
func (o *outbox) roomLocked() bool {
	return len(o.pending) < o.limit/2 && o.blocked == 0
}

// waitLocked waits until n more bytes fit (an empty queue takes any frame).
func (o *outbox) waitLocked(n int) error {
	for o.err == nil && len(o.pending) > 0 && len(o.pending)+n > o.limit {
		if o.closing {
			break
		}
		if err := o.waitProgressLocked(true); err != nil {
			return err
		}
	}
	return o.err
}

// waitProgressLocked waits for the writer to make progress, up to stall;
// if none comes, the editor has stopped reading and the connection fails.
func (o *outbox) waitProgressLocked(writer bool) error {
	ch, stall := o.progress, o.stall
	o.waiters++
	if writer {
		o.blocked++
		defer func() { o.blocked-- }()
	}
	o.mu.Unlock()
	t := time.NewTimer(stall)
	var stalled bool
	select {
	case <-ch:
	case <-t.C:
		stalled = true
	}
	t.Stop()
	o.mu.Lock()
	o.waiters--
	if stalled && ch == o.progress && o.err == nil {
		err := fmt.Errorf("the editor stopped reading: %d bytes have waited %s; closing the connection (the editor may restart it)", len(o.pending), stall)
		o.log.Warn("closing the editor connection", "reason", err)
		o.failLocked(err)
	}
	return o.err
}

// hurry shortens the stall time to closeWait: the connection is being
// torn down, and handlers blocked on a full queue must not hold the
// teardown (a SIGTERM) for the whole stall time.
func (o *outbox) hurry() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stall > closeWait {
		o.stall = closeWait
		// Wake the waiters to wait again with the shorter time. Not a sign
		// of room: they check the queue again.
		o.signalLocked()
	}
}

// signalLocked wakes everyone waiting for room.
func (o *outbox) signalLocked() {
	if o.waiters > 0 {
		close(o.progress)
		o.progress = make(chan struct{})
	}
}

// failLocked records err, wakes the waiters and closes the transport, so
// that the read loop ends too and the connection is torn down.
func (o *outbox) failLocked(err error) {
	if o.err != nil {
		return
	}
	o.err = err
	o.signalLocked()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	go o.close() // may block on a transport stuck in write
}

// run is the writer goroutine.
func (o *outbox) run() {
	defer close(o.done)
	for {
		o.mu.Lock()
		for len(o.pending) == 0 && !o.closing && o.err == nil {
			o.mu.Unlock()
			<-o.wake
			o.mu.Lock()
		}
		if o.err != nil || len(o.pending) == 0 {
			o.mu.Unlock()
			return // closing with nothing left, or failed
		}
		buf := o.pending
		o.pending = o.spare[:0]
		o.spare = nil
		o.signalLocked() // the queue is empty again: room for writers
		o.mu.Unlock()

		for off := 0; off < len(buf); {
			n, err := o.w.Write(buf[off:min(len(buf), off+outboxChunk)])
			off += n
			if err != nil {
				o.mu.Lock()
				o.failLocked(fmt.Errorf("writing to the editor: %w", err))
				o.mu.Unlock()
				return
			}
			o.mu.Lock()
			o.signalLocked()
			o.mu.Unlock()
		}
		if cap(buf) <= outboxKeep {
			o.mu.Lock()
			o.spare = buf[:0]
			o.mu.Unlock()
		}
	}
}

// Close writes what is queued (waiting at most closeWait, or the stall
// time when shorter, for an editor that does not read: a shutdown must
// not hang on it) and closes the transport.
func (o *outbox) Close() error {
	o.mu.Lock()
	o.closing = true
	stall := o.stall // hurry may shorten it meanwhile, under mu
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(min(stall, closeWait))
	defer t.Stop()
	select {
	case <-o.done:
	case <-t.C:
	}
	o.mu.Lock()
	failed := o.err != nil
	if !failed {
		o.err = errOutboxClosed
		o.signalLocked()
	}
	o.mu.Unlock()
	if failed {
		return nil // failLocked closes the transport
	}
	return o.close()
}

// errOutboxClosed fails writes after Close. It wraps net.ErrClosed, which
// jsonrpc2 counts as a clean end (a late notification racing teardown is
// not a broken connection).
var errOutboxClosed = fmt.Errorf("editor connection closed: %w", net.ErrClosed)
