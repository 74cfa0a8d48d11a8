package editortest

import (
	"context"
	"io"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
)

// frameStream is the raw-frame side of jsonrpc2's built-in framers.
type frameStream interface {
	jsonrpc2.Stream
	ReadFrame(ctx context.Context) ([]byte, int64, error)
	WriteFrame(ctx context.Context, data []byte) (int64, error)
}

// recordingStream shows every error response to onError before the
// connection sees it: the answer to a malformed frame carries no id the
// connection knows, and jsonrpc2 would drop it silently.
type recordingStream struct {
	frames     frameStream
	onError    func([]byte)
	onResponse func(id string, frame []byte) // responses to CallRaw
}

func (s *recordingStream) ReadFrame(ctx context.Context) ([]byte, int64, error) {
	frame, n, err := s.frames.ReadFrame(ctx)
	if err != nil {
		return frame, n, err
	}
	// A zero-copy scan: notifications (most frames) cost next to nothing.
	v, serr := jsonrpc2.ScanMessageView(frame)
	if serr != nil {
		return frame, n, nil // the connection reports it
	}
	switch v.Kind {
	case jsonrpc2.MessageViewResponseResult, jsonrpc2.MessageViewResponseError:
		if id, ok := v.ID.StringValue(); ok && strings.HasPrefix(id, rawIDPrefix) {
			s.onResponse(id, frame)
		} else if v.Kind == jsonrpc2.MessageViewResponseError {
			s.onError(frame)
		}
	}
	return frame, n, nil
}

func (s *recordingStream) WriteFrame(ctx context.Context, data []byte) (int64, error) {
	return s.frames.WriteFrame(ctx, data)
}

func (s *recordingStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	frame, n, err := s.ReadFrame(ctx)
	if err != nil {
		return nil, 0, err
	}
	msg, err := jsonrpc2.DecodeMessage(frame)
	return msg, n, err
}

func (s *recordingStream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	return s.frames.Write(ctx, msg)
}

func (s *recordingStream) Close() error { return s.frames.Close() }

// lockedWriter serializes writes, so that raw bytes from WriteRaw never
// interleave with a frame the connection writes (each frame is one Write).
type lockedWriter struct {
	mu  sync.Mutex
	rwc io.ReadWriteCloser
}

func (l *lockedWriter) Read(p []byte) (int, error) { return l.rwc.Read(p) }

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rwc.Write(p)
}

func (l *lockedWriter) Close() error { return l.rwc.Close() }

// closeWrite closes the write side only, when the transport has one.
func (l *lockedWriter) closeWrite() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch c := l.rwc.(type) {
	case interface{ CloseWrite() error }:
		return c.CloseWrite()
	}
	return l.rwc.Close()
}

// pipeRWC joins a subprocess's stdout (read) and stdin (write).
type pipeRWC struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (p *pipeRWC) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipeRWC) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeRWC) Close() error {
	werr := p.w.Close()
	rerr := p.r.Close()
	if werr != nil {
		return werr
	}
	return rerr
}

// CloseWrite closes stdin only, so the server's answers can still be read.
func (p *pipeRWC) CloseWrite() error { return p.w.Close() }
