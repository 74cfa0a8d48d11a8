package editor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.lsp.dev/jsonrpc2"
)

// Limits of the frames smith reads (docs/protocol.md, "Framing errors and
// limits").
const (
	// maxHeaderLine bounds one header line. Real headers are
	// "Content-Length: N" and "Content-Type: ...", well under 100 bytes.
	maxHeaderLine = 4 << 10
	// maxFrame bounds a declared Content-Length (jsonrpc2's own bound).
	maxFrame = 1 << 30
	// keepBody is the largest body buffer kept for the next frame; a
	// bigger one (a 50 MB didOpen) is dropped once its frame is handled.
	keepBody = 1 << 20
)

// lspFrames is the LSP base-protocol framer of smith's connections:
// jsonrpc2's header stream writes the frames, and ReadFrame below reads
// them, because jsonrpc2's reader (v1.0.1, framer.go) is wrong for an
// endpoint that must outlive bad input in three ways:
//
//   - after a malformed header it returns ErrInvalidHeader with the rest
//     of that header block and the body still unread, so the next read
//     takes the body (which has no newline) and the next header as one
//     "line", fails again, and so on forever: one `Content-Length: abc`
//     makes the connection deaf to every later message;
//   - a header line is read with bufio.Reader.ReadBytes, unbounded: a line
//     without a newline grows memory until the process dies;
//   - the body buffer is allocated at the declared length before any of it
//     arrives, and kept at that size for the connection's life.
//
// This reader bounds header lines (maxHeaderLine), grows a large body as
// its bytes arrive and drops it afterwards, and after a malformed header
// resynchronizes: it skips input up to the next "Content-Length:" field
// and reads the header block that starts there. The error of the bad
// header still reaches the caller (wrapping jsonrpc2.ErrInvalidHeader), so
// that it can be answered and logged.
type lspFrames struct {
	frameStream // jsonrpc2's header stream, used for writing and Close
	in          *bufio.Reader
	body        []byte
	resync      bool   // the last header was malformed: skip to the next one
	carry       []byte // after resync: the value of a Content-Length found in the malformed line
	skipped     int64
}

// newLSPFrames frames rwc: reads with the resynchronizing reader, writes
// with jsonrpc2's header framer.
func newLSPFrames(rwc io.ReadWriteCloser) *lspFrames {
	fs, ok := jsonrpc2.NewHeaderStream(rwc).(frameStream)
	if !ok {
		// The header framer has had raw-frame access since v1.0.0; without it
		// batches and malformed-frame recovery would silently disappear.
		panic("editor: jsonrpc2 header stream lost ReadFrame/WriteFrame")
	}
	return &lspFrames{frameStream: fs, in: bufio.NewReaderSize(rwc, 64<<10)}
}

// headerError is a malformed header block: what was wrong with it.
type headerError struct{ reason string }

func (e *headerError) Error() string { return "malformed message header: " + e.reason }
func (e *headerError) Unwrap() error { return jsonrpc2.ErrInvalidHeader }

// Skipped reports how many bytes the last resynchronization passed over.
func (s *lspFrames) Skipped() int64 { return s.skipped }

// Read is ReadFrame plus decoding, for callers of the plain Stream API.
func (s *lspFrames) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	frame, n, err := s.ReadFrame(ctx)
	if err != nil {
		return nil, 0, err
	}
	msg, err := jsonrpc2.DecodeMessage(frame)
	return msg, n, err
}

// ReadFrame returns the body of the next frame. The slice is valid until
// the next call. Errors: io.EOF at a clean end between frames,
// io.ErrUnexpectedEOF in the middle of one, a *headerError for a malformed
// header block (the next call resynchronizes), or the transport's error.
func (s *lspFrames) ReadFrame(ctx context.Context) ([]byte, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if cap(s.body) > keepBody {
		s.body = nil
	}
	var consumed int64
	length, haveLength := 0, false
	if s.resync {
		var line []byte
		if s.carry != nil {
			// The malformed line held the field: start there.
			line, s.carry, s.skipped = s.carry, nil, 0
		} else {
			n, err := s.skipToContentLength()
			s.skipped = n
			if err != nil {
				return nil, 0, err
			}
			// The field name is consumed; its value is the rest of the line.
			if line, err = s.line(); err != nil {
				s.resync = false
				return nil, 0, s.headerFailed(err, "Content-Length line")
			}
		}
		s.resync = false
		consumed += int64(len(line))
		if length, haveLength = parseLength(line); !haveLength {
			return nil, 0, s.bad("Content-Length %q is not a number of bytes (1 to %d)", trimEOL(line), maxFrame)
		}
	}
	for first := !haveLength; ; first = false {
		line, err := s.line()
		if err != nil {
			if errors.Is(err, io.EOF) && first {
				return nil, 0, io.EOF
			}
			return nil, 0, s.headerFailed(err, "header")
		}
		consumed += int64(len(line))
		if l := trimEOL(line); len(l) == 0 {
			break
		}
		name, value, ok := splitField(line)
		if !ok || !isToken(name) {
			s.carryField(line)
			return nil, 0, s.bad("header line %.40q is not \"Name: value\"", trimEOL(line))
		}
		if !equalFold(name, "content-length") {
			continue // Content-Type and anything else: ignored
		}
		if length, haveLength = parseLength(value); !haveLength {
			return nil, 0, s.bad("Content-Length %q is not a number of bytes (1 to %d)", value, maxFrame)
		}
	}
	if !haveLength {
		return nil, 0, s.bad("no Content-Length")
	}
	body, err := s.readBody(length)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, err
	}
	return body, consumed + int64(length), nil
}

// line reads one header line, at most maxHeaderLine bytes with its end.
func (s *lspFrames) line() ([]byte, error) {
	line, err := s.in.ReadSlice('\n')
	switch {
	case err == nil && len(line) <= maxHeaderLine:
		return line, nil
	case err == nil || errors.Is(err, bufio.ErrBufferFull):
		return nil, errLongLine
	case errors.Is(err, io.EOF) && len(line) > 0:
		return nil, io.ErrUnexpectedEOF
	}
	return nil, err
}

var errLongLine = fmt.Errorf("a header line is longer than %d bytes", maxHeaderLine)

// headerFailed turns a failed line read into the frame's error: a line
// that is too long is a malformed header (resynchronized after), the end
// of input in the middle of a header block is an unexpected EOF.
func (s *lspFrames) headerFailed(err error, what string) error {
	if errors.Is(err, errLongLine) {
		return s.bad("%s: %v", what, err)
	}
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (s *lspFrames) bad(format string, args ...any) error {
	s.resync = true
	return &headerError{reason: fmt.Sprintf(format, args...)}
}

// carryField keeps what follows "Content-Length:" in a malformed line (a
// body without a newline ran into the next header), so that resync starts
// there rather than at the field after it.
func (s *lspFrames) carryField(line []byte) {
	const field = "content-length:"
	for i := 1; i+len(field) <= len(line); i++ {
		if equalFold(line[i:i+len(field)], field) {
			s.carry = bytes.Clone(line[i+len(field):])
			return
		}
	}
}

// isToken reports whether a header field name is an HTTP token (letters,
// digits and a few marks): what a body that ran into a header is not.
func isToken(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// skipToContentLength discards input up to and including the next
// "Content-Length:" (in any case), returning how many bytes it passed
// over. It holds no more than the reader's buffer whatever it skips.
func (s *lspFrames) skipToContentLength() (int64, error) {
	const field = "content-length:"
	var n int64
	matched := 0
	for {
		c, err := s.in.ReadByte()
		if err != nil {
			return n, err
		}
		n++
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		switch {
		case c == field[matched]:
			matched++
			if matched == len(field) {
				return n - int64(len(field)), nil
			}
		case c == field[0]: // the field has no other 'c' to restart from
			matched = 1
		default:
			matched = 0
		}
	}
}

// readBody reads n bytes. A body up to keepBody goes into the kept
// buffer; a larger one grows as its bytes arrive, so that a Content-Length
// that lies costs only what was really sent.
func (s *lspFrames) readBody(n int) ([]byte, error) {
	if n <= cap(s.body) || n <= keepBody {
		if cap(s.body) < n {
			s.body = make([]byte, n, max(n, 4<<10))
		}
		b := s.body[:n]
		_, err := io.ReadFull(s.in, b)
		return b, err
	}
	b := make([]byte, 0, keepBody)
	for len(b) < n {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(n-len(b), cap(b)))
		}
		end := min(cap(b), n)
		k, err := io.ReadFull(s.in, b[len(b):end])
		b = b[:len(b)+k]
		if err != nil {
			return nil, err
		}
	}
	s.body = b
	return b, nil
}

// parseLength parses a Content-Length value (trailing CR/LF and blanks
// allowed): a decimal number from 1 to maxFrame.
func parseLength(v []byte) (int, bool) {
	v = trimSpace(trimEOL(v))
	if len(v) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' || n > (maxFrame-int(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n > 0
}

func trimEOL(line []byte) []byte {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line
}

func trimSpace(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// splitField splits "Name: value".
func splitField(line []byte) (name, value []byte, ok bool) {
	line = trimEOL(line)
	for i, c := range line {
		if c == ':' {
			return line[:i], trimSpace(line[i+1:]), true
		}
	}
	return nil, nil, false
}

// equalFold compares ASCII case-insensitively; want is lower case.
func equalFold(name []byte, want string) bool {
	if len(name) != len(want) {
		return false
	}
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != want[i] {
			return false
		}
	}
	return true
}
