package editor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"

	"go.lsp.dev/jsonrpc2"
)

// rwBuffer is a stream reading from in and collecting what is written.
type rwBuffer struct {
	in  io.Reader
	out bytes.Buffer
}

func (b *rwBuffer) Read(p []byte) (int, error)  { return b.in.Read(p) }
func (b *rwBuffer) Write(p []byte) (int, error) { return b.out.Write(p) }
func (b *rwBuffer) Close() error                { return nil }

// FuzzTolerantStream: whatever bytes arrive, the guard returns only frames
// that jsonrpc2 accepts (so it never fails the connection on them), ends
// only on a transport error, and never panics.
func FuzzTolerantStream(f *testing.F) {
	frame := func(s string) []byte { return []byte("Content-Length: " + itoa(len(s)) + "\r\n\r\n" + s) }
	f.Add(frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	f.Add(frame(`{"jsonrpc":"2.0","id":1,"method":`))
	f.Add(frame(`[{"jsonrpc":"2.0","method":"x"},{"bad":1}]`))
	f.Add(frame(`{"jsonrpc":"1.0","id":"a","method":"x"}`))
	f.Add([]byte("Content-Length: nope\r\n\r\n{}\r\nContent-Length: 2\r\n\r\n{}"))
	f.Add([]byte("Content-Length: 5\n\n{\"a\":1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rw := &rwBuffer{in: bytes.NewReader(data)}
		s := newTolerantStream(rw, slog.New(slog.DiscardHandler))
		for i := 0; i < 1000; i++ {
			got, _, err := s.ReadFrame(context.Background())
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("ended with %v", err)
				}
				return
			}
			if trimmed := bytes.TrimLeft(got, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
				if _, err := jsonrpc2.ParseRequests(got); err != nil {
					t.Fatalf("batch %q passed the guard but jsonrpc2 rejects it: %v", got, err)
				}
				continue
			}
			if _, err := jsonrpc2.DecodeMessage(got); err != nil {
				t.Fatalf("frame %q passed the guard but jsonrpc2 rejects it: %v", got, err)
			}
		}
	})
}

func TestTolerantStreamAnswers(t *testing.T) {
	frame := func(s string) string { return "Content-Length: " + itoa(len(s)) + "\r\n\r\n" + s }
	in := frame(`{bad`) + frame(`{"id":3,"method":"x"}`) + "Content-Length: x\r\n\r\n" + frame(`{"jsonrpc":"2.0","method":"ok"}`)
	rw := &rwBuffer{in: bytes.NewReader([]byte(in))}
	s := newTolerantStream(rw, slog.New(slog.DiscardHandler))
	got, _, err := s.ReadFrame(context.Background())
	if err != nil || string(got) != `{"jsonrpc":"2.0","method":"ok"}` {
		t.Fatalf("first good frame = %q, %v", got, err)
	}
	want := frame(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"message is not valid JSON"}}`)
	if !bytes.HasPrefix(rw.out.Bytes(), []byte(want)) {
		t.Errorf("answers:\n%s\nwant first:\n%s", rw.out.Bytes(), want)
	}
	for _, sub := range []string{`"id":3,"error":{"code":-32600`, `"id":null,"error":{"code":-32700,"message":"malformed message header`} {
		if !bytes.Contains(rw.out.Bytes(), []byte(sub)) {
			t.Errorf("no answer containing %s in:\n%s", sub, rw.out.Bytes())
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
