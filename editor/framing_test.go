package editor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
)

func lspFrame(body string) string { return "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body }

// TestFramesResyncAfterBadHeader: after a malformed header block the
// framer reports it once and then reads the next message, whatever the
// bad block was followed by. jsonrpc2's own reader (wrapped by lspFrames)
// reads the unframed body and the next header as one line and never gets
// back in step.
func TestFramesResyncAfterBadHeader(t *testing.T) {
	good := `{"jsonrpc":"2.0","id":1,"method":"smith/status"}`
	body := `{"jsonrpc":"2.0","id":9,"method":"smith/status"}` // no newline, like every real body
	tests := []struct{ name, bad string }{
		{"non-numeric length", "Content-Length: abc\r\n\r\n" + body},
		{"negative length", "Content-Length: -5\r\n\r\n" + body},
		{"zero length", "Content-Length: 0\r\n\r\n" + body},
		{"line without colon", "Content-Length 10\r\n\r\n" + body},
		{"no Content-Length", "Content-Type: application/json\r\n\r\n" + body},
		{"too long line", "X-Pad: " + strings.Repeat("p", 2*maxHeaderLine) + "\r\nContent-Length: 3\r\n\r\n{x}"},
		{"bare newlines", "Content-Length: x\n\n" + body},
		{"garbage", "\x00\xff not lsp at all " + body},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.bad + lspFrame(good) + "content-length: 2\r\n\r\n{}"
			fs := newLSPFrames(&rwBuffer{in: strings.NewReader(in)})
			ctx := context.Background()
			var got []string
			var headerErrs int
			for {
				frame, _, err := fs.ReadFrame(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if errors.Is(err, jsonrpc2.ErrInvalidHeader) {
					headerErrs++
					if headerErrs > 3 {
						t.Fatalf("still out of step after %d header errors; frames so far %q", headerErrs, got)
					}
					continue
				}
				if err != nil {
					t.Fatalf("ReadFrame: %v (frames so far %q)", err, got)
				}
				got = append(got, string(frame))
			}
			if headerErrs == 0 {
				t.Errorf("the malformed header was not reported")
			}
			if len(got) < 2 || got[len(got)-2] != good || got[len(got)-1] != "{}" {
				t.Errorf("frames after the bad header = %q, want to end with %q and {}", got, good)
			}
		})
	}
}

// endless is a reader of n bytes of c, with no newline, then tail.
type endless struct {
	n    int64
	c    byte
	tail *strings.Reader
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return e.tail.Read(p)
	}
	k := int(min(int64(len(p)), e.n))
	for i := range k {
		p[i] = e.c
	}
	e.n -= int64(k)
	return k, nil
}

// TestFramesHeaderLineBounded: a "header line" of 256 MiB without a
// newline costs a bounded amount of memory (jsonrpc2's reader buffers the
// whole line: 1.6 GB of RSS after 1.5 GiB), is reported as a malformed
// header, and the message after it is read.
func TestFramesHeaderLineBounded(t *testing.T) {
	good := `{"jsonrpc":"2.0","method":"initialized"}`
	r := &endless{n: 256 << 20, c: 'a', tail: strings.NewReader(lspFrame(good))}
	fs := newLSPFrames(&rwBuffer{in: r})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := fs.ReadFrame(context.Background())
	if !errors.Is(err, jsonrpc2.ErrInvalidHeader) {
		t.Fatalf("first ReadFrame = %v, want a malformed header", err)
	}
	frame, _, err := fs.ReadFrame(context.Background())
	runtime.ReadMemStats(&after)
	if err != nil || string(frame) != good {
		t.Fatalf("after the long line: %q, %v", frame, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("reading past a 256 MiB line allocated %d bytes, want it bounded (< 4 MiB)", alloc)
	}
	if fs.Skipped() < 256<<20-maxHeaderLine-(64<<10) {
		t.Errorf("skipped %d bytes, want the whole line", fs.Skipped())
	}
}

// TestFramesLargeBody: a body far above the kept buffer is read whole,
// and a Content-Length that lies (the input ends early) is an unexpected
// EOF after at most what was sent.
func TestFramesLargeBody(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("b", 10<<20) + `"}`
	fs := newLSPFrames(&rwBuffer{in: strings.NewReader(lspFrame(big) + "Content-Length: 1000000000\r\n\r\n{}")})
	frame, _, err := fs.ReadFrame(context.Background())
	if err != nil || string(frame) != big {
		t.Fatalf("10 MiB frame: %d bytes, %v", len(frame), err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err = fs.ReadFrame(context.Background())
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: %v, want unexpected EOF", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("a 1 GB Content-Length with 2 bytes sent allocated %d bytes", alloc)
	}
}

// rawPeer is an editor that writes frames and reads only when told to.
type rawPeer struct {
	t  *testing.T
	c  net.Conn
	fs *lspFrames
}

func (p *rawPeer) send(body string) error {
	_, err := io.WriteString(p.c, lspFrame(body))
	return err
}

func (p *rawPeer) read() string {
	p.t.Helper()
	frame, _, err := p.fs.ReadFrame(context.Background())
	if err != nil {
		p.t.Fatalf("read: %v", err)
	}
	return string(frame)
}

// startRaw serves one connection of srv over net.Pipe (unbuffered: what
// the editor does not read stays on smith's side) and initializes it.
func startRaw(t *testing.T, opts Options) (*rawPeer, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return startRawCtx(ctx, t, opts)
}

func startRawCtx(ctx context.Context, t *testing.T, opts Options) (*rawPeer, <-chan error) {
	t.Helper()
	srv := NewServer(opts)
	t.Cleanup(func() { srv.Close() })
	serverEnd, clientEnd := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.ServeConn(ctx, serverEnd) }()
	t.Cleanup(func() { clientEnd.Close() })
	p := &rawPeer{t: t, c: clientEnd, fs: newLSPFrames(clientEnd)}
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"rootUri":%q,"initializationOptions":{"upstream":"http://127.0.0.1:1","stateDir":%q}}}`,
		pathToURI(t.TempDir()), t.TempDir())
	if err := p.send(init); err != nil {
		t.Fatal(err)
	}
	if got := p.read(); !strings.Contains(got, `"capabilities"`) {
		t.Fatalf("initialize: %s", got)
	}
	if err := p.send(`{"jsonrpc":"2.0","method":"initialized","params":{}}`); err != nil {
		t.Fatal(err)
	}
	return p, done
}

// TestStalledEditorBoundsTheQueue: an editor that sends 20 000 requests
// and reads nothing holds a bounded amount of smith's memory (smith stops
// reading requests once the answers waiting for the editor fill the
// queue, instead of starting one blocked handler per request), and when
// it reads again every request is answered.
func TestStalledEditorBoundsTheQueue(t *testing.T) {
	p, _ := startRaw(t, Options{QueueLimit: 64 << 10, WriteStall: time.Hour})
	base := runtime.NumGoroutine()
	const n = 20000
	var sent atomic.Int64
	go func() {
		for i := 1; i <= n; i++ {
			if p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"smith/changes","params":{}}`, i)) != nil {
				return
			}
			sent.Add(1)
		}
	}()
	// Wait until smith stops taking requests (or took them all).
	for last := int64(-1); ; {
		time.Sleep(200 * time.Millisecond)
		now := sent.Load()
		if now == last || now == n {
			break
		}
		last = now
	}
	if g := runtime.NumGoroutine() - base; g > 200 {
		t.Errorf("%d goroutines more while the editor does not read (%d of %d requests taken), want a bounded number", g, sent.Load(), n)
	}
	if sent.Load() == n {
		t.Errorf("smith took all %d requests while the editor read none of the answers", n)
	}
	answered := map[string]bool{}
	for len(answered) < n {
		got := p.read()
		i := strings.Index(got, `"id":`)
		if i < 0 || !strings.Contains(got, `"result"`) {
			t.Fatalf("unexpected frame %s", got)
		}
		answered[got[i+5:i+5+strings.IndexAny(got[i+5:], ",}")]] = true
	}
}

// TestStalledEditorIsDisconnected: an editor that reads nothing while
// the queue is full is disconnected after the stall time, with the reason
// in the connection's error, instead of holding smith for good.
func TestStalledEditorIsDisconnected(t *testing.T) {
	p, done := startRaw(t, Options{QueueLimit: 16 << 10, WriteStall: 300 * time.Millisecond})
	go func() {
		for i := 1; ; i++ {
			if p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"smith/changes","params":{}}`, i)) != nil {
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "stopped reading") {
			t.Errorf("ServeConn = %v, want the stall named", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a stalled editor was never disconnected")
	}
}

// TestShutdownWithStalledEditor: the server's context ends (SIGTERM)
// while handlers wait on a queue the editor does not read: the connection
// is torn down within seconds, not after the stall time (an hour here).
func TestShutdownWithStalledEditor(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, done := startRawCtx(ctx, t, Options{QueueLimit: 16 << 10, WriteStall: time.Hour})
	var sent atomic.Int64
	go func() {
		for i := 1; ; i++ {
			if p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"smith/changes","params":{}}`, i)) != nil {
				return
			}
			sent.Add(1)
		}
	}()
	for last := int64(-1); sent.Load() != last; {
		last = sent.Load()
		time.Sleep(200 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("ServeConn did not return after its context ended: teardown waits on the stalled editor")
	}
}

// TestBadHeaderThenRequest: a request after a malformed header block
// (whose body has no newline, as real bodies) is answered; before
// lspFrames the connection answered one -32700 and then nothing again.
func TestBadHeaderThenRequest(t *testing.T) {
	p, _ := startRaw(t, Options{})
	bad := "Content-Length: abc\r\n\r\n" + `{"jsonrpc":"2.0","id":7,"method":"smith/changes","params":{}}`
	if _, err := io.WriteString(p.c, bad); err != nil {
		t.Fatal(err)
	}
	if err := p.send(`{"jsonrpc":"2.0","id":8,"method":"smith/changes","params":{}}`); err != nil {
		t.Fatal(err)
	}
	first := p.read()
	if !strings.Contains(first, `"code":-32700`) || !strings.Contains(first, "Content-Length") {
		t.Errorf("answer to the bad header: %s", first)
	}
	answer := make(chan string, 1)
	go func() { answer <- p.read() }()
	select {
	case got := <-answer:
		if !strings.Contains(got, `"id":8,"result"`) {
			t.Errorf("answer to the request after the bad header: %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request after a malformed header was never answered: the connection is deaf")
	}
}

// TestOutboxBatches: frames queued while the writer is busy go out
// together, in order.
func TestOutboxBatches(t *testing.T) {
	r, w := net.Pipe()
	o := newOutbox(w, w.Close, 1<<20, time.Hour, slog.New(slog.DiscardHandler))
	var want bytes.Buffer
	for i := range 1000 {
		frame := fmt.Sprintf("frame %d;", i)
		want.WriteString(frame)
		if _, err := o.Write([]byte(frame)); err != nil {
			t.Fatal(err)
		}
	}
	var got bytes.Buffer
	reads := 0
	buf := make([]byte, 1<<20)
	for got.Len() < want.Len() {
		n, err := r.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got.Write(buf[:n])
		reads++
	}
	if got.String() != want.String() {
		t.Errorf("bytes out of order or lost")
	}
	if reads > 10 {
		t.Errorf("1000 frames queued at once took %d writes, want them batched", reads)
	}
	go io.Copy(io.Discard, r)
	if err := o.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
