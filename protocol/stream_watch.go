package protocol

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	sse "github.com/tmaxmax/go-sse"
)

// terminalGrace bounds how long ReadTurn waits, after the terminal event,
// for the upstream to end the body.
const terminalGrace = 2 * time.Second

// watchedStream reads a body on a goroutine of its own and hands it to
// ReadTurn as segments: runs of whole SSE blocks, framed by go-sse.
//
// The goroutine lets a blocked Read be abandoned when ctx is cancelled or
// when no byte arrived for the idle timeout. It replaces http.Client.Timeout,
// which caps a whole stream instead of its silences. The idle clock runs
// only while the goroutine waits in the body's Read: a consumer slow to take
// the events (its emit blocked) stops the reading without counting as
// silence.
//
// Why segments: go-sse frames a stream on one goroutine, byte by byte, and
// on a fast stream its framing costs as much as everything else together
// (JSON, the adapter, the turn state machine, emit). The goroutine scans
// what it reads with the tracker (the spec's line rules, which the SSE
// reader needs anyway for its compensations) and cuts the bytes after the
// last blank line of each read: every block before the cut is complete, and
// a block is all the state go-sse keeps from one event to the next (the last
// event ID, which go-sse would lose at the cut, is the tracker's). A large
// segment is framed by a go-sse parser on a goroutine of its own, so that
// the framing of several segments and the mapping of earlier ones use all
// cores; a small one (a stream trickling in) is framed by the consumer when
// it takes it. The consumer takes segments in order, so events keep theirs.
//
// Every event the body delivered is in a segment before the goroutine reads
// again, so nothing waits for more bytes to be framed. At most watchSegments
// segments wait for the consumer.
//
// The consumer calls next, shorten and close; run belongs to the goroutine.
type watchedStream struct {
	ctx     context.Context
	max     int // the event size limit
	out     chan *segment
	free    chan *segment
	quit    chan struct{}
	once    sync.Once
	clock   *idleClock
	stalled chan struct{} // closed when the idle clock fires
	lastID  string        // the consumer's: the last event ID string
	body    io.Reader     // the goroutine's (the consumer's when seq)
	// seq: no goroutine; the consumer reads, cuts and frames the body
	// itself, with c, and there is no idle clock (see StreamOptions.Sequential).
	seq bool
	c   cutter
}

// segment is a run of whole blocks of the stream or, in the last segment,
// the stream's tail; with the tracker's verdicts on its blocks, and, once
// framed, go-sse's events.
type segment struct {
	bytes    []byte
	verdicts []verdict // one per block go-sse yields from bytes, in order
	// last: the body ended after bytes; end is how (io.EOF when cleanly),
	// given to go-sse after the bytes, as the body gave it. cut and inLine
	// are the tracker's view of the tail.
	last        bool
	end         error
	cut, inLine bool
	tooLarge    bool // bytes hold one unfinished block past the limit

	async bool          // framed on a goroutine of its own: wait for done
	done  chan struct{} // with async, closed once evs and err are set
	evs   []sse.Event
	err   error // go-sse's error, if it failed
	// valid: bytes are valid UTF-8, and so is every event's data, which
	// is cut out of them at ASCII delimiters: no decoding needed.
	valid bool
}

const (
	watchBufSize  = 64 << 10 // bytes asked of the body per Read
	watchSegments = 4        // segments waiting for the consumer at most
	// asyncMin is the size from which a segment is framed on a goroutine
	// of its own; smaller ones are not worth the hand-over.
	asyncMin = 16 << 10
)

// watch starts reading body. The caller must call close. With seq, no
// goroutine is started: next reads the body itself, and idle is ignored.
func watch(ctx context.Context, body io.Reader, idle time.Duration, maxEventSize int, seq bool) *watchedStream {
	if maxEventSize <= 0 {
		maxEventSize = DefaultMaxEventSize
	}
	w := &watchedStream{
		ctx:     ctx,
		max:     maxEventSize,
		out:     make(chan *segment, watchSegments),
		free:    make(chan *segment, watchSegments+2),
		quit:    make(chan struct{}),
		stalled: make(chan struct{}),
		body:    body,
		seq:     seq,
	}
	if seq {
		idle = -1
	}
	w.clock = newIdleClock(idle, func() { close(w.stalled) })
	if !seq {
		go w.run()
	}
	return w
}

// run reads the body, scans it and cuts it into segments, until the body
// ends or the consumer has gone.
func (w *watchedStream) run() {
	var c cutter
	for {
		s := w.cut(&c)
		if s == nil {
			return
		}
		end := s.last || s.tooLarge // s is the consumer's once sent
		if !w.send(s) || end {
			return
		}
	}
}

// cutter is the state of the cutting of a body into segments: the tracker
// of the spec's line rules, the segment being filled, and whether the
// leading BOM has been dealt with.
type cutter struct {
	t       tracker
	s       *segment
	started bool
}

// cut reads the body until it has the next segment: whole blocks up to the
// last blank line of a read, or the tail of the stream (last), or more
// than the event limit without a blank line (tooLarge). It returns nil if
// the consumer has gone. In a sequential stream it runs on the consumer's
// goroutine and the idle clock is not used.
func (w *watchedStream) cut(c *cutter) *segment {
	if c.s == nil {
		c.s = w.segment(0)
	}
	s := c.s
	for {
		if !w.seq {
			select {
			case <-w.quit:
				return nil
			default:
			}
		}
		if cap(s.bytes)-len(s.bytes) < watchBufSize/2 {
			s.bytes = slices.Grow(s.bytes, watchBufSize)
		}
		if !w.seq {
			w.clock.wait()
		}
		n, err := w.body.Read(s.bytes[len(s.bytes):cap(s.bytes)])
		if !w.seq {
			w.clock.done(n > 0)
		}
		from := len(s.bytes)
		s.bytes = s.bytes[:from+n]
		if !c.started {
			// Exactly one BOM, at byte 0, also when its bytes come in
			// separate reads.
			const bom = "\xEF\xBB\xBF"
			if err == nil && len(s.bytes) < len(bom) && string(s.bytes) == bom[:len(s.bytes)] {
				continue
			}
			c.started, from = true, 0
			if bytes.HasPrefix(s.bytes, []byte(bom)) {
				s.bytes = s.bytes[:copy(s.bytes, s.bytes[len(bom):])]
			}
		}
		t := &c.t
		cut := t.scan(s.bytes[from:])
		switch {
		case err != nil:
			if err == io.EOF {
				t.atEOF()
			}
			s.last, s.end, s.cut, s.inLine = true, err, t.cut, t.inLine
			s.takeVerdicts(t)
			c.s = nil
			return s
		case cut >= 0:
			next := w.segment(len(s.bytes) - from - cut)
			next.bytes = append(next.bytes, s.bytes[from+cut:]...)
			s.bytes = s.bytes[:from+cut]
			s.takeVerdicts(t)
			c.s = next
			return s
		case len(s.bytes) > w.max+len(segmentPrefix):
			// No blank line in more than the limit: go-sse would fail
			// on it, having no event to give first.
			s.tooLarge = true
			c.s = nil
			return s
		}
	}
}

// takeVerdicts moves the tracker's verdicts to s, whose own are none yet
// (a segment is returned as soon as it has them): the two swap their
// arrays instead of copying hundreds of verdicts per segment.
func (s *segment) takeVerdicts(t *tracker) {
	if len(s.verdicts) > 0 {
		s.verdicts = append(s.verdicts, t.verdicts...)
		t.verdicts = t.verdicts[:0]
		return
	}
	s.verdicts, t.verdicts = t.verdicts, s.verdicts[:0]
}

// segment returns an empty segment with room for n bytes, reusing one the
// consumer is done with if it can.
func (w *watchedStream) segment(n int) *segment {
	var s *segment
	select {
	case s = <-w.free:
		s.bytes, s.verdicts, s.evs = s.bytes[:0], s.verdicts[:0], s.evs[:0]
	default:
		s = &segment{}
	}
	if cap(s.bytes) < n {
		s.bytes = make([]byte, 0, n+watchBufSize)
	}
	return s
}

// send hands s to the consumer, framing started if it is large. It
// reports false if the consumer has gone.
func (w *watchedStream) send(s *segment) bool {
	if len(s.bytes) >= asyncMin && !s.tooLarge {
		s.async, s.done = true, make(chan struct{})
		go func() {
			s.frame(w.max, func(ev sse.Event) { s.evs = append(s.evs, ev) })
			close(s.done)
		}()
	}
	select {
	case w.out <- s:
		return true
	case <-w.quit:
		return false
	}
}

// segmentPrefix starts go-sse's input with a comment line, so that go-sse
// never strips a BOM itself (G8): the reader strips exactly one, at byte 0
// of the stream, and a segment starts in the middle of it.
const segmentPrefix = ":\n"

// frame runs go-sse over the segment, passing each event it yields to
// yield.
func (s *segment) frame(max int, yield func(sse.Event)) {
	end := s.end
	if !s.last {
		end = io.EOF
	}
	s.valid = utf8.Valid(s.bytes)
	r := &segmentReader{b: s.bytes, end: end}
	// The prefix counts towards go-sse's limit; the caller's max is the
	// limit for an event.
	for ev, err := range sse.Read(r, &sse.ReadConfig{MaxEventSize: max + len(segmentPrefix)}) {
		if err != nil {
			s.err = err
			return
		}
		yield(ev)
	}
}

// segmentReader gives go-sse a segment: the prefix, the bytes, then end.
type segmentReader struct {
	pre bool // the prefix has been read
	b   []byte
	end error
}

func (r *segmentReader) Read(p []byte) (int, error) {
	if !r.pre {
		r.pre = true
		return copy(p, segmentPrefix), nil
	}
	if len(r.b) == 0 {
		return 0, r.end
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// next passes the events of the next segment, decoded and checked against
// the spec, to feed, and, after the last ones, returns why the stream
// ended: io.EOF at a clean end, the reader's error (ErrStreamCut,
// ErrEventTooLarge, the body's), ctx's error or the idle timeout. A cancel
// wins over events not handed over yet; events that arrived before a stall
// are delivered before it.
func (w *watchedStream) next(feed func(SSEEvent)) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	var s *segment
	if w.seq {
		s = w.cut(&w.c)
	} else {
		select {
		case s = <-w.out:
		default:
			select {
			case s = <-w.out:
			case <-w.ctx.Done():
				return w.ctx.Err()
			case <-w.stalled:
				return readError(ErrIdleTimeout)
			}
		}
	}
	if s.tooLarge {
		return &EventTooLargeError{Limit: w.max, Err: bufio.ErrTooLong}
	}
	i := 0
	handle := func(ev sse.Event) {
		// judge, with the event built in the call (a copy less of it
		// was measurable at 100k events).
		var v *verdict
		if i < len(s.verdicts) {
			v = &s.verdicts[i]
		}
		i++
		if !admit(ev.LastEventID, v, v != nil, &w.lastID) {
			return
		}
		data := ev.Data
		if !s.valid {
			data = decodeUTF8(data)
		}
		var retry *int
		if v != nil {
			retry = v.retry
		}
		feed(SSEEvent{Type: eventType(ev.Type), Data: data, LastEventID: w.lastID, Retry: retry})
	}
	if s.async {
		<-s.done
		for _, ev := range s.evs {
			handle(ev)
		}
	} else {
		// Framed here, each event mapped as go-sse yields it.
		s.frame(w.max, handle)
	}
	var err error
	if s.err != nil || s.last {
		err = endError(s.err, s.cut, s.inLine, w.max)
		if s.last && stopped(s.end) {
			// The client closed the body on purpose (idle watchdog,
			// progress timeout, turn limit): that is why it ended, also
			// when the cut fell inside a line.
			err = s.end
		}
	}
	// The events are not cleared: the next frame overwrites them (a
	// segment keeps go-sse's strings alive until then).
	s.async, s.done, s.err, s.last, s.end = false, nil, nil, false, nil
	select {
	case w.free <- s:
	default:
	}
	return err
}

// stopped reports whether err is the cause the client gave when it closed
// a body it was reading on purpose.
func stopped(err error) bool {
	return err != nil && (errors.Is(err, ErrIdleTimeout) || errors.Is(err, ErrNoProgress) || errors.Is(err, ErrTurnLimit))
}

// shorten lowers the idle timeout to d (used after the terminal event).
func (w *watchedStream) shorten(d time.Duration) { w.clock.shorten(d) }

// setIdle gives the stream the idle timeout d again.
func (w *watchedStream) setIdle(d time.Duration) { w.clock.set(d) }

// close stops the goroutine: it exits at its next hand-over, or, blocked in
// the body's Read, once that Read returns (closing an http.Response body
// unblocks it).
func (w *watchedStream) close() {
	w.once.Do(func() {
		close(w.quit)
		w.clock.stop()
	})
}
