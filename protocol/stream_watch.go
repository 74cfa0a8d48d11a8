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
// instead of its silences.
type watchedReader struct {
	ctx    context.Context
	chunks chan chunk
	free   chan []byte
	quit   chan struct{}
	once   sync.Once
	idle   time.Duration
	timer  *time.Timer
	cur    []byte
	buf    []byte
	err    error
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
		ctx:    ctx,
		chunks: make(chan chunk, watchBufs),
		free:   make(chan []byte, watchBufs),
		quit:   make(chan struct{}),
		idle:   idle,
	}
	for range watchBufs {
		w.free <- make([]byte, watchBufSize)
	}
	if idle > 0 {
		w.timer = time.NewTimer(idle)
	}
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
		n, err := body.Read(b)
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
		var timeout <-chan time.Time
		if w.timer != nil {
			timeout = w.timer.C
		}
		select {
		case c := <-w.chunks:
			w.buf, w.cur, w.err = c.b, c.b, c.err
			if len(c.b) > 0 && w.timer != nil {
				w.timer.Reset(w.idle)
			}
		case <-w.ctx.Done():
			w.err = w.ctx.Err()
		case <-timeout:
			w.err = ErrIdleTimeout
		}
	}
	n := copy(p, w.cur)
	w.cur = w.cur[n:]
	return n, nil
}

// shorten lowers the idle timeout to d (used after the terminal event).
func (w *watchedReader) shorten(d time.Duration) {
	if w.timer == nil || w.idle > d {
		w.idle = d
		if w.timer == nil {
			w.timer = time.NewTimer(d)
		} else {
			w.timer.Reset(d)
		}
	}
}

func (w *watchedReader) close() {
	w.once.Do(func() {
		close(w.quit)
		if w.timer != nil {
			w.timer.Stop()
		}
	})
}
