package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// framing is how a dialect frames events on the wire.
type framing struct {
	crlf  bool      // sse-starlette's "\r\n" line ends (AgentSmithy); else "\n"
	style jsonStyle // payload serialisation
}

// frame wraps a payload into one SSE event. The LF dialects go through
// go-sse's Message encoder; AgentSmithy's CRLF framing cannot (go-sse only
// writes "\n"), so it is written by hand: "data: " + payload + "\r\n\r\n".
func (f framing) frame(payload []byte) []byte {
	if f.crlf {
		b := make([]byte, 0, len(payload)+10)
		b = append(b, "data: "...)
		b = append(b, payload...)
		return append(b, "\r\n\r\n"...)
	}
	var m sse.Message
	m.AppendData(string(payload))
	var buf bytes.Buffer
	_, _ = m.WriteTo(&buf) // writing to a bytes.Buffer cannot fail
	return buf.Bytes()
}

// event marshals v in the dialect's style and frames it.
func (f framing) event(v any) []byte { return f.frame(mustMarshal(f.style, v)) }

// comment frames an SSE comment (a keep-alive ping).
func (f framing) comment(text string) []byte {
	if f.crlf {
		return []byte(": " + text + "\r\n\r\n")
	}
	var m sse.Message
	m.AppendComment(text)
	var buf bytes.Buffer
	_, _ = m.WriteTo(&buf)
	return buf.Bytes()
}

// op is one step of a turn on the wire: an optional side effect (the
// server writing a file) followed by an optional event frame.
type op struct {
	action   func() error // run first; an error is logged and the turn goes on, as a failed tool would
	frame    []byte
	lazy     func() []byte // builds the frame after action ran (v1's per-edit checkpoint); used when frame is nil
	cut      bool          // write only the first half of the frame (cut-mid-event)
	delta    bool          // a text or reasoning delta, paced by Options.DeltaDelay
	terminal bool          // the event that ends the turn (dropped by the no-done fault)
	stall    time.Duration // hold the stream silent (no pings either) this long
	pings    time.Duration // pings-only: write frame (a comment) every pings until ctx ends; nothing after
	drip     time.Duration // drip: write the frame one byte at a time, one every drip
	record   func()        // record into the dialog's history once the frame is out
}

func (o op) isFrame() bool { return o.frame != nil || o.lazy != nil }

// sink serialises writes of events and pings to one response and flushes
// after every write, so each event leaves the server when it is produced.
type sink struct {
	mu  sync.Mutex
	w   io.Writer
	rc  *http.ResponseController
	err error
}

func newSink(w http.ResponseWriter) *sink {
	return &sink{w: w, rc: http.NewResponseController(w)}
}

func (s *sink) write(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(b)
}

func (s *sink) writeLocked(b []byte) error {
	if s.err != nil {
		return s.err
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return err
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
	}
	return s.err
}

// errSinkClosed is returned by writes after the response is finished.
var errSinkClosed = errors.New("upstream: response finished")

// close makes every later write fail: a handler calls it before returning,
// because a ResponseWriter must not be used after that (the lifecycle
// turn goroutine may still be running).
func (s *sink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = errSinkClosed
	}
}

// hold keeps the sink locked (so not even a ping goes out) for d or until
// ctx ends.
func (s *sink) hold(ctx context.Context, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sleep(ctx, d)
}

// pinger writes ping comments every interval until stop is called.
func (s *sink) pinger(interval time.Duration, ping func() []byte) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if s.write(ping()) != nil {
					return
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// pythonPing is sse-starlette's ping text: "ping - " + str(datetime.now(timezone.utc)).
func pythonPing() string {
	now := time.Now().UTC()
	layout := "2006-01-02 15:04:05.000000+00:00"
	if now.Nanosecond()/1000 == 0 {
		layout = "2006-01-02 15:04:05+00:00" // str() omits zero microseconds
	}
	return "ping - " + now.Format(layout)
}

// play writes ops in order. It stops early when ctx ends (the client went
// away) or the connection fails; actions after that point are not run,
// like tools a disconnected real server never reaches.
func play(ctx context.Context, s *sink, ops []op, delay time.Duration) error {
	for _, o := range ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		if o.stall > 0 {
			s.hold(ctx, o.stall)
		}
		if o.action != nil {
			_ = o.action() // the error already became part of the script's text
		}
		frame := o.frame
		if frame == nil && o.lazy != nil {
			frame = o.lazy()
		}
		if frame == nil {
			continue
		}
		if o.cut {
			frame = frame[:len(frame)/2]
		}
		if o.delta && delay > 0 {
			sleep(ctx, delay)
		}
		if o.pings > 0 {
			for ctx.Err() == nil {
				if err := s.write(frame); err != nil {
					return err
				}
				sleep(ctx, o.pings)
			}
			return ctx.Err()
		}
		if o.drip > 0 {
			for i := range frame {
				if err := s.write(frame[i : i+1]); err != nil {
					return err
				}
				if sleep(ctx, o.drip); ctx.Err() != nil {
					return ctx.Err()
				}
			}
			if o.record != nil {
				o.record()
			}
			continue
		}
		if err := s.write(frame); err != nil {
			return err
		}
		if o.record != nil {
			o.record()
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
