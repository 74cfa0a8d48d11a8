package editor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"go.lsp.dev/jsonrpc2"
)

// frameStream is the raw-frame side of jsonrpc2's built-in framers. The
// library looks for these two methods on a Stream (an unexported interface
// of the same shape) and uses them for its fast path and for batches, so
// the wrapper below provides them too.
type frameStream interface {
	jsonrpc2.Stream
	ReadFrame(ctx context.Context) ([]byte, int64, error)
	WriteFrame(ctx context.Context, data []byte) (int64, error)
}

// tolerantStream keeps a connection alive across malformed input.
//
// jsonrpc2 ends the whole connection, without answering, when a frame's
// body is not JSON, is not a JSON-RPC 2.0 message, or when a header is
// malformed (pitfall P7 of the library notes). An editor plugin with one
// bad message would lose its session and every running turn. So every
// frame is checked here before the connection sees it: a bad body is
// answered with a ParseError or InvalidRequest response (with the request's
// id when one can be read) and skipped; a bad header is answered once with
// a ParseError, after which the framer (lspFrames) skips to the next
// "Content-Length:" field and the stream is back in step at the next
// message. Transport errors (EOF, a closed pipe) still end the connection
// as before.
type tolerantStream struct {
	frameStream
	log *slog.Logger
	// room, when set, is waited on before each frame is read: the outgoing
	// queue has room for its answer (backpressure; outbox.waitRoom).
	room func(context.Context) error
}

// newTolerantStream frames rwc with LSP Content-Length headers.
func newTolerantStream(rwc io.ReadWriteCloser, log *slog.Logger) *tolerantStream {
	return &tolerantStream{frameStream: headerFrames(rwc), log: log}
}

// ReadFrame returns the next frame that the connection can handle.
func (s *tolerantStream) ReadFrame(ctx context.Context) ([]byte, int64, error) {
	headerErrAnswered := false
	for {
		if s.room != nil {
			if err := s.room(ctx); err != nil {
				return nil, 0, err
			}
		}
		frame, n, err := s.frameStream.ReadFrame(ctx)
		if errors.Is(err, jsonrpc2.ErrInvalidHeader) {
			s.log.Warn("malformed message header; skipping to the next \"Content-Length:\"", "err", err)
			if !headerErrAnswered {
				headerErrAnswered = true
				s.answer(ctx, jsonrpc2.ID{}, jsonrpc2.NewError(jsonrpc2.ParseError, err.Error()+" (expected \"Content-Length: N\" and a blank line)"))
			}
			continue
		}
		if lf, ok := s.frameStream.(*lspFrames); ok && headerErrAnswered && err == nil {
			s.log.Info("back in step after a malformed header", "skippedBytes", lf.Skipped())
		}
		if err != nil {
			return nil, 0, err
		}
		if rpcErr, id := checkFrame(frame); rpcErr != nil {
			s.log.Warn("malformed message; answered with an error", "code", rpcErr.Code, "err", rpcErr.Message)
			s.answer(ctx, id, rpcErr)
			continue
		}
		return frame, n, nil
	}
}

// Read is ReadFrame plus decoding, for callers that use the plain Stream API.
func (s *tolerantStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	frame, n, err := s.ReadFrame(ctx)
	if err != nil {
		return nil, 0, err
	}
	msg, err := jsonrpc2.DecodeMessage(frame)
	return msg, n, err
}

func (s *tolerantStream) answer(ctx context.Context, id jsonrpc2.ID, e *jsonrpc2.Error) {
	if _, err := s.WriteFrame(ctx, jsonrpc2.AppendResponse(nil, id, nil, e)); err != nil {
		s.log.Debug("cannot answer a malformed message", "err", err)
	}
}

// checkFrame returns the error response a frame deserves, or nil when
// jsonrpc2 can take it. A batch only fails as a whole when it is not JSON;
// the library answers bad members itself.
func checkFrame(frame []byte) (*jsonrpc2.Error, jsonrpc2.ID) {
	if !json.Valid(frame) {
		return jsonrpc2.NewError(jsonrpc2.ParseError, "message is not valid JSON"), jsonrpc2.ID{}
	}
	if t := bytes.TrimLeft(frame, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		return nil, jsonrpc2.ID{}
	}
	if _, err := jsonrpc2.DecodeMessage(frame); err != nil {
		return jsonrpc2.NewError(jsonrpc2.InvalidRequest, fmt.Sprintf("not a JSON-RPC 2.0 message: %v", err)), frameID(frame)
	}
	return nil, jsonrpc2.ID{}
}

// frameID reads the "id" of a message that jsonrpc2 rejected, so that the
// error response reaches the request that caused it.
func frameID(frame []byte) jsonrpc2.ID {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(frame, &m) != nil {
		return jsonrpc2.ID{}
	}
	return decodeID(m.ID)
}

// decodeID turns a JSON number or string into an ID (the zero ID otherwise).
func decodeID(raw json.RawMessage) jsonrpc2.ID {
	var n int64
	if json.Unmarshal(raw, &n) == nil {
		return jsonrpc2.NewNumberID(n)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return jsonrpc2.NewStringID(s)
	}
	return jsonrpc2.ID{}
}

// idValue is an ID as the codec can marshal it (jsonrpc2.ID has no
// exported fields and no MarshalJSON).
func idValue(id jsonrpc2.ID) any {
	if n, ok := id.Number(); ok {
		return n
	}
	if s, ok := id.StringValue(); ok {
		return s
	}
	return nil
}
