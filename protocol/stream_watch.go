package protocol

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// terminalGrace bounds how long ReadTurn waits, after the terminal event,
// for the upstream to end the body.
const terminalGrace = 2 * time.Second

// watchedStream reads and frames a body on a goroutine of its own and hands
// the SSE events to ReadTurn in batches.
//
// The goroutine lets a blocked Read be abandoned when ctx is cancelled or
// when no byte arrived for the idle timeout. It replaces http.Client.Timeout,
// which caps a whole stream instead of its silences. The idle clock runs
// only while the goroutine waits in the body's Read: a consumer slow to take
// the events (its emit blocked) stops the reading without counting as
// silence.
//
// Framing there too (go-sse and the spec compensations, most of the cost of
// a turn) puts it and the mapping (adapter, turn state machine, emit) on two
// cores. Batching keeps the hand-over cheap without delaying any event: the
// batch is handed over before every Read of the body, so every event the
// body delivered is with the consumer before the goroutine waits for more.
// The goroutine runs at most watchBatches batches ahead of the consumer.
//
// The consumer calls next, release, shorten and close; everything else
// belongs to the goroutine.
type watchedStream struct {
	ctx     context.Context
	out     chan eventBatch
	free    chan []SSEEvent
	quit    chan struct{}
	once    sync.Once
	clock   *idleClock
	stalled chan struct{} // closed when the idle clock fires

	// The goroutine's.
	body  io.Reader
	buf   []byte // the last bytes read from body
	cur   []byte // what go-sse has not taken of buf yet
	err   error  // the body's error, returned once cur is taken
	batch []SSEEvent
	made  int // batches allocated so far (at most watchBatches)
}

// eventBatch is a run of events; err is set on the last batch only: io.EOF
// after a clean end, else the SSEReader's error.
type eventBatch struct {
	evs []SSEEvent
	err error
}

const (
	watchBufSize = 64 << 10 // bytes asked of the body per Read
	watchBatch   = 256      // events per batch at most
	watchBatches = 4        // batches in flight at most
)

// errWatchClosed stops the goroutine's framing once the consumer has gone;
// nobody sees it.
var errWatchClosed = errors.New("sse: stream reader closed")

// watch starts reading body. The caller must call close.
func watch(ctx context.Context, body io.Reader, idle time.Duration, maxEventSize int) *watchedStream {
	w := &watchedStream{
		ctx:     ctx,
		out:     make(chan eventBatch, watchBatches),
		free:    make(chan []SSEEvent, watchBatches),
		quit:    make(chan struct{}),
		stalled: make(chan struct{}),
		body:    body,
	}
	w.clock = newIdleClock(idle, func() { close(w.stalled) })
	w.newBatch()
	sr := NewSSEReader(bodyReader{w}, maxEventSize)
	sr.undecoded = true // next decodes, on the consumer's core
	go w.run(sr)
	return w
}

func (w *watchedStream) run(sr *SSEReader) {
	for ev, err := range sr.All() {
		if err != nil {
			w.send(err)
			return
		}
		w.batch = append(w.batch, ev)
		if len(w.batch) == watchBatch && !w.send(nil) {
			return
		}
	}
	w.send(io.EOF)
}

// send hands the current batch over and starts a new one (unless err ends
// the stream). It reports false if the consumer has gone.
func (w *watchedStream) send(err error) bool {
	select {
	case w.out <- eventBatch{w.batch, err}:
	case <-w.quit:
		return false
	}
	w.batch = nil
	if err != nil {
		return true
	}
	return w.newBatch()
}

func (w *watchedStream) newBatch() bool {
	if w.made < watchBatches {
		w.made++
		w.batch = make([]SSEEvent, 0, watchBatch)
		return true
	}
	select {
	case b := <-w.free:
		w.batch = b[:0]
		return true
	case <-w.quit:
		return false
	}
}

// bodyReader is what the goroutine's SSEReader reads: the body, through a
// buffer, the batch handed over before each Read of the body. go-sse reads
// only once it has yielded every event of the bytes it holds, so the batch
// then holds all of them.
type bodyReader struct{ w *watchedStream }

func (r bodyReader) Read(p []byte) (int, error) {
	w := r.w
	if len(w.cur) == 0 {
		if w.err != nil {
			return 0, w.err
		}
		if len(w.batch) > 0 && !w.send(nil) {
			return 0, errWatchClosed
		}
		select {
		case <-w.quit:
			return 0, errWatchClosed
		default:
		}
		if w.buf == nil {
			w.buf = make([]byte, watchBufSize)
		}
		w.clock.wait()
		n, err := w.body.Read(w.buf)
		w.clock.done(n > 0)
		w.cur, w.err = w.buf[:n], err
		if n == 0 {
			return 0, err
		}
	}
	n := copy(p, w.cur)
	w.cur = w.cur[n:]
	return n, nil
}

// next returns the next batch of events and, with the last one, why the
// stream ended: io.EOF at a clean end, the SSEReader's error, ctx's error
// or the idle timeout. A cancel wins over events not handed over yet;
// events that arrived before a stall are delivered before it.
func (w *watchedStream) next() ([]SSEEvent, error) {
	if err := w.ctx.Err(); err != nil {
		return nil, err
	}
	var b eventBatch
	select {
	case b = <-w.out:
	default:
		select {
		case b = <-w.out:
		case <-w.ctx.Done():
			return nil, w.ctx.Err()
		case <-w.stalled:
			return nil, readError(ErrIdleTimeout)
		}
	}
	for i := range b.evs {
		b.evs[i].Data = decodeUTF8(b.evs[i].Data)
	}
	return b.evs, b.err
}

// release gives a batch returned by next back for reuse; its events must
// not be used after.
func (w *watchedStream) release(evs []SSEEvent) {
	if evs == nil {
		return
	}
	select {
	case w.free <- evs:
	default:
	}
}

// shorten lowers the idle timeout to d (used after the terminal event).
func (w *watchedStream) shorten(d time.Duration) { w.clock.shorten(d) }

// close stops the goroutine: it exits at its next hand-over, or, blocked in
// the body's Read, once that Read returns (closing an http.Response body
// unblocks it).
func (w *watchedStream) close() {
	w.once.Do(func() {
		close(w.quit)
		w.clock.stop()
	})
}
