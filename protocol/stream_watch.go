package protocol

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// terminalGrace bounds how long ReadTurn waits, after the terminal event,
// for the upstream to end the body.
const terminalGrace = 2 * time.Second

// watchedStream reads a body and frames it with go-sse on a goroutine of its
// own, and hands go-sse's events to ReadTurn in batches.
//
// The goroutine lets a blocked Read be abandoned when ctx is cancelled or
// when no byte arrived for the idle timeout. It replaces http.Client.Timeout,
// which caps a whole stream instead of its silences. The idle clock runs
// only while the goroutine waits in the body's Read: a consumer slow to take
// the events (its emit blocked) stops the reading without counting as
// silence.
//
// go-sse's framing is most of the cost of a turn; the rest of the SSE
// reader (the tracker's scan of the same bytes, its verdicts, UTF-8
// decoding) runs with the mapping (adapter, turn state machine, emit) on
// the caller's goroutine, so that the two halves use two cores: each batch
// carries the bytes go-sse read besides its events (SSEReader.framed).
// Batching keeps the hand-over cheap without delaying any event: the batch
// is handed over before every Read of the body, so every event the body
// delivered is with the consumer before the goroutine waits for more. The
// goroutine runs at most watchBatches batches ahead of the consumer.
//
// The consumer calls next, shorten and close; run and bodyReader belong to
// the goroutine.
type watchedStream struct {
	ctx     context.Context
	sr      *SSEReader // framed: go-sse on the goroutine, the rest in next
	out     chan *frameBatch
	free    chan *frameBatch
	quit    chan struct{}
	once    sync.Once
	clock   *idleClock
	stalled chan struct{} // closed when the idle clock fires

	// The goroutine's.
	body  io.Reader
	buf   []byte // the last bytes read from body
	cur   []byte // what go-sse has not taken of buf yet
	err   error  // the body's error, returned once cur is taken
	batch *frameBatch
	made  int // batches allocated so far (at most watchBatches)
}

// frameBatch is a run of go-sse's events with the bytes go-sse read before
// yielding them (and maybe a few more).
type frameBatch struct {
	evs   []sse.Event
	bytes []byte
	eof   bool  // the body has ended: bytes are its last
	last  bool  // go-sse is done; err is its error, nil at a clean end
	err   error // go-sse's, unmapped
}

const (
	watchBufSize = 64 << 10 // bytes asked of the body per Read
	watchBatch   = 1024     // events per batch at most (a full buffer holds ~600 deltas)
	watchBatches = 4        // batches in flight at most
)

// errWatchClosed stops the goroutine's framing once the consumer has gone;
// nobody sees it.
var errWatchClosed = errors.New("sse: stream reader closed")

// watch starts reading body. The caller must call close.
func watch(ctx context.Context, body io.Reader, idle time.Duration, maxEventSize int) *watchedStream {
	w := &watchedStream{
		ctx:     ctx,
		out:     make(chan *frameBatch, watchBatches),
		free:    make(chan *frameBatch, watchBatches),
		quit:    make(chan struct{}),
		stalled: make(chan struct{}),
		body:    body,
	}
	w.clock = newIdleClock(idle, func() { close(w.stalled) })
	w.sr = NewSSEReader(bodyReader{w}, maxEventSize)
	frames := w.sr.framed()
	w.newBatch()
	go w.run(frames)
	return w
}

func (w *watchedStream) run(frames iter.Seq2[sse.Event, error]) {
	for ev, err := range frames {
		if err != nil {
			w.send(err, true)
			return
		}
		w.batch.evs = append(w.batch.evs, ev)
		if len(w.batch.evs) == watchBatch && !w.send(nil, false) {
			return
		}
	}
	w.send(nil, true)
}

// send hands the current batch over, with the bytes read so far, and
// starts a new one unless it was the last. It reports false if the
// consumer has gone.
func (w *watchedStream) send(err error, last bool) bool {
	b := w.batch
	// The batch's old bytes, scanned by the consumer before it gave the
	// batch back, collect the next ones.
	b.bytes, b.eof = w.sr.takeScanned(b.bytes)
	b.err, b.last = err, last
	select {
	case w.out <- b:
	case <-w.quit:
		return false
	}
	w.batch = nil
	return last || w.newBatch()
}

func (w *watchedStream) newBatch() bool {
	if w.made < watchBatches {
		w.made++
		w.batch = &frameBatch{evs: make([]sse.Event, 0, 64)} // grows as needed, kept when reused
		return true
	}
	select {
	case b := <-w.free:
		w.batch = b
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
		if len(w.batch.evs) > 0 && !w.send(nil, false) {
			return 0, errWatchClosed
		}
		if w.buf == nil {
			w.buf = make([]byte, watchBufSize)
		}
		// A body may return no byte and no error; go-sse's scanner would
		// give up after a hundred of those, so read again.
		for len(w.cur) == 0 && w.err == nil {
			select {
			case <-w.quit:
				return 0, errWatchClosed
			default:
			}
			w.clock.wait()
			n, err := w.body.Read(w.buf)
			w.clock.done(n > 0)
			w.cur, w.err = w.buf[:n], err
		}
		if len(w.cur) == 0 {
			return 0, w.err
		}
	}
	n := copy(p, w.cur)
	w.cur = w.cur[n:]
	return n, nil
}

// next passes the events of the next batch, decoded and checked against
// the spec, to feed, and, after the last ones, returns why the stream
// ended: io.EOF at a clean end, the SSEReader's error, ctx's error or the
// idle timeout. A cancel wins over events not handed over yet; events that
// arrived before a stall are delivered before it.
func (w *watchedStream) next(feed func(SSEEvent)) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	var b *frameBatch
	select {
	case b = <-w.out:
	default:
		select {
		case b = <-w.out:
		case <-w.ctx.Done():
			return w.ctx.Err()
		case <-w.stalled:
			return readError(ErrIdleTimeout)
		}
	}
	w.sr.scanned(b.bytes, b.eof)
	for _, ev := range b.evs {
		if out, ok := w.sr.dispatch(ev); ok {
			out.Data = decodeUTF8(out.Data)
			feed(out)
		}
	}
	var err error
	if b.last {
		err = w.sr.end(b.err)
	}
	// Not cleared: the goroutine overwrites the events (a batch keeps at
	// most watchBatch of go-sse's strings alive until then), and clearing
	// would pull the lines it writes next to this core.
	b.evs = b.evs[:0]
	select {
	case w.free <- b:
	default:
	}
	return err
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
