package protocol

import (
	"context"
	"io"
	"sync"
	"time"
)

// terminalGrace bounds how long ReadTurn waits, after the terminal event,
// for the upstream to end the body.
const terminalGrace = 2 * time.Second

// watchedReader reads a body on its own goroutine so that a blocked Read
// can be abandoned when ctx is cancelled or when no byte arrived for the
// idle timeout. It replaces http.Client.Timeout, which caps a whole stream
// instead of its silences. The idle clock runs only while the goroutine
// waits in the body's Read: a consumer slow to take the chunks (its emit
// blocked) stops the reading without counting as silence.
type watchedReader struct {
	ctx     context.Context
	chunks  chan chunk
	free    chan []byte
	quit    chan struct{}
	once    sync.Once
	clock   *idleClock
	stalled chan struct{} // closed when the idle clock fires
	cur     []byte
	buf     []byte
	err     error
}

type chunk struct {
	b   []byte
	err error
}

const (
	watchBufSize = 64 << 10
	watchBufs    = 3
)

func watch(ctx context.Context, body io.Reader, idle time.Duration) *watchedReader {
	w := &watchedReader{
		ctx:     ctx,
		chunks:  make(chan chunk, watchBufs),
		free:    make(chan []byte, watchBufs),
		quit:    make(chan struct{}),
		stalled: make(chan struct{}),
	}
	for range watchBufs {
		w.free <- make([]byte, watchBufSize)
	}
	w.clock = newIdleClock(idle, func() { close(w.stalled) })
	go w.pump(body)
	return w
}

func (w *watchedReader) pump(body io.Reader) {
	for {
		var b []byte
		select {
		case b = <-w.free:
		case <-w.quit:
			return
		}
		w.clock.wait()
		n, err := body.Read(b)
		w.clock.done(n > 0)
		select {
		case w.chunks <- chunk{b[:n], err}:
		case <-w.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

func (w *watchedReader) Read(p []byte) (int, error) {
	for len(w.cur) == 0 {
		if w.err != nil {
			return 0, w.err
		}
		if w.buf != nil {
			w.free <- w.buf[:cap(w.buf)]
			w.buf = nil
		}
		// A cancel wins; bytes that arrived before a stall are delivered
		// before it.
		if err := w.ctx.Err(); err != nil {
			w.err = err
			continue
		}
		select {
		case c := <-w.chunks:
			w.buf, w.cur, w.err = c.b, c.b, c.err
			continue
		default:
		}
		select {
		case c := <-w.chunks:
			w.buf, w.cur, w.err = c.b, c.b, c.err
		case <-w.ctx.Done():
			w.err = w.ctx.Err()
		case <-w.stalled:
			w.err = ErrIdleTimeout
		}
	}
	n := copy(p, w.cur)
	w.cur = w.cur[n:]
	return n, nil
}

// shorten lowers the idle timeout to d (used after the terminal event).
func (w *watchedReader) shorten(d time.Duration) { w.clock.shorten(d) }

func (w *watchedReader) close() {
	w.once.Do(func() {
		close(w.quit)
		w.clock.stop()
	})
}
