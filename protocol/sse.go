package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strings"
	"unicode/utf8"

	sse "github.com/tmaxmax/go-sse"
)

// SSEEvent is one event dispatched by the WHATWG event-stream algorithm.
type SSEEvent struct {
	// Type is the event type; "message" when the stream named none (or an
	// empty one), as the spec says. go-sse reports "" there.
	Type string `json:"event"`
	// Data is the data buffer without its final LF, decoded from UTF-8 with
	// one U+FFFD per maximal ill-formed subpart.
	Data string `json:"data"`
	// LastEventID is the stream's last event ID string at dispatch.
	LastEventID string `json:"id"`
	// Retry is the reconnection time in milliseconds in effect when the
	// event was dispatched, nil while the stream has set none.
	Retry *int `json:"-"`
}

// ErrStreamCut is matched (errors.Is) by every error that means the stream
// ended inside an event: a final block without its blank line, a final line
// without its terminator, or a body that failed with io.ErrUnexpectedEOF.
var ErrStreamCut = errors.New("sse: stream ended inside an event")

// ErrEventTooLarge is matched (errors.Is) by *EventTooLargeError.
var ErrEventTooLarge = errors.New("sse: event too large")

// TruncatedError reports a stream that was cut. The events before the cut
// were delivered; the incomplete one was discarded, never delivered as if
// complete. It matches ErrStreamCut.
type TruncatedError struct {
	// MidLine is true when the body ended inside a line (a partial field,
	// typically half a JSON payload); false when it ended between the lines
	// of an event that lacked its closing blank line.
	MidLine bool
	// Err is the underlying error, if any (io.ErrUnexpectedEOF from a cut
	// chunked body, or go-sse's own ErrUnexpectedEOF).
	Err error
}

func (e *TruncatedError) Error() string {
	where := "between the lines of an unterminated event"
	if e.MidLine {
		where = "in the middle of a line"
	}
	return "sse: stream cut " + where
}

// Is makes errors.Is(err, ErrStreamCut) true.
func (e *TruncatedError) Is(target error) bool { return target == ErrStreamCut }

// Unwrap returns the underlying error.
func (e *TruncatedError) Unwrap() error { return e.Err }

// EventTooLargeError reports an event larger than the reader's limit. The
// stream cannot be read past it.
type EventTooLargeError struct {
	Limit int   // the configured maximum, in bytes
	Err   error // bufio.ErrTooLong
}

func (e *EventTooLargeError) Error() string {
	return fmt.Sprintf("sse: an event is larger than the %d-byte limit (raise the max event size setting)", e.Limit)
}

// Is makes errors.Is(err, ErrEventTooLarge) true.
func (e *EventTooLargeError) Is(target error) bool { return target == ErrEventTooLarge }

// Unwrap returns bufio.ErrTooLong.
func (e *EventTooLargeError) Unwrap() error { return e.Err }

// SSEReader reads a text/event-stream exactly as the WHATWG algorithm does.
//
// Framing is go-sse's (sse.Read). go-sse v0.11.0 deviates from the spec in
// several points (docs: shared reference sse.md, section 3); the reader
// compensates for each, by watching the same bytes go-sse parses:
//
//   - G1/G9: go-sse yields blocks that have only event: or id: fields; the
//     spec dispatches only blocks with a data field. They are dropped (their
//     id still becomes the last event ID, as the spec's step 1 says).
//   - G2/G3: go-sse yields the final block at EOF without its blank line, or
//     fails on an unterminated final line. Both become a *TruncatedError
//     after the complete events; the partial event is never delivered.
//   - G4: the 64 KiB bufio.Scanner cap is replaced by the configured limit,
//     and bufio.ErrTooLong by *EventTooLargeError.
//   - G5: data is decoded with WHATWG UTF-8 replacement.
//   - G6: an unnamed event has Type "message".
//   - G7: retry is parsed here (ASCII digits only; go-sse's Read ignores it).
//   - G8: go-sse strips a BOM at the first non-blank line; the spec strips
//     exactly one, at byte 0. The reader strips it itself and starts go-sse's
//     input with a comment line, so go-sse never strips one.
//
// An SSEReader is not safe for concurrent use. It does not close r.
type SSEReader struct {
	t    *tracker
	max  int
	err  error // sticky terminal error (io.EOF on a clean end)
	pull func() (SSEEvent, error, bool)
	stop func()
	seq  iter.Seq2[sse.Event, error]
}

// NewSSEReader returns a reader of the event stream r. maxEventSize bounds
// one event (all its lines, in bytes); <= 0 means DefaultMaxEventSize.
func NewSSEReader(r io.Reader, maxEventSize int) *SSEReader {
	if maxEventSize <= 0 {
		maxEventSize = DefaultMaxEventSize
	}
	t := &tracker{r: r, prefix: ":\n"}
	// bufio.Scanner needs room for the token plus our 2-byte prefix.
	return &SSEReader{t: t, max: maxEventSize, seq: sse.Read(t, &sse.ReadConfig{MaxEventSize: maxEventSize + len(t.prefix)})}
}

// Next returns the next dispatched event. At a clean end of the stream it
// returns io.EOF; a cut stream gives a *TruncatedError (ErrStreamCut), an
// oversized event *EventTooLargeError; a failing body's error is returned
// wrapped. Once Next has returned an error it returns the same error again.
func (r *SSEReader) Next() (SSEEvent, error) {
	if r.err != nil {
		return SSEEvent{}, r.err
	}
	if r.pull == nil {
		r.pull, r.stop = iter.Pull2(r.All())
	}
	ev, err, ok := r.pull()
	if !ok || err != nil {
		r.stop() // the stream is over: release the iterator
		if r.err == nil {
			r.err = io.EOF
		}
		return SSEEvent{}, r.err
	}
	return ev, nil
}

// All returns the events as an iterator, for callers that push rather than
// pull. The final error, if any, is yielded last with a zero event; a clean
// end yields no error (Err then reports io.EOF). Use either All or Next on
// one reader, not both.
func (r *SSEReader) All() iter.Seq2[SSEEvent, error] {
	return func(yield func(SSEEvent, error) bool) {
		if r.err != nil {
			if r.err != io.EOF {
				yield(SSEEvent{}, r.err)
			}
			return
		}
		for ev, err := range r.seq {
			if err != nil {
				yield(SSEEvent{}, r.end(err))
				return
			}
			out, ok := r.dispatch(ev)
			if !ok {
				continue
			}
			out.Data = decodeUTF8(out.Data)
			if !yield(out, nil) {
				return
			}
		}
		if r.end(nil) != io.EOF {
			yield(SSEEvent{}, r.err)
		}
	}
}

// dispatch applies the spec to one block go-sse yielded: the event to
// dispatch, or false for a block the spec does not fire (its verdict
// decided by the bytes the tracker scanned). Data is not decoded yet.
func (r *SSEReader) dispatch(ev sse.Event) (SSEEvent, bool) {
	v, ok := r.t.popVerdict()
	return judge(ev, v, ok, &r.t.lastID)
}

// judge turns a block go-sse yielded and the tracker's verdict on it into
// the event to dispatch, or false for a block the spec does not fire.
// lastID is the stream's last event ID string, updated as the spec says.
// ok is false only if the tracker saw no such block, which would be a bug:
// the block is then dispatched as go-sse framed it.
func judge(ev sse.Event, v verdict, ok bool, lastID *string) (SSEEvent, bool) {
	if !admit(ev.LastEventID, &v, ok, lastID) {
		return SSEEvent{}, false
	}
	return SSEEvent{Type: eventType(ev.Type), Data: ev.Data, LastEventID: *lastID, Retry: v.retry}, true
}

// admit is judge's decision alone: it updates lastID and reports whether
// the block is dispatched. goID is go-sse's last event ID for the block.
func admit(goID string, v *verdict, ok bool, lastID *string) bool {
	id := goID
	switch {
	case !ok:
	case v.keep:
		id = v.id
	case v.blank:
		// Ended by a blank line but without data (G1): the spec sets the
		// last event ID string and fires nothing.
		if *lastID != v.id {
			*lastID = v.id
		}
		return false
	default:
		return false // the unterminated block go-sse yields at EOF (G2)
	}
	if *lastID != id { // nearly always equal: no store, no write barrier
		*lastID = id
	}
	return true
}

// eventType is the spec's event type for go-sse's: "message" when the
// stream named none.
func eventType(t string) string {
	if t == "" {
		return "message"
	}
	return t
}

// end records and returns the error that ends the stream, given go-sse's
// (nil when it ended without one): io.EOF for a clean end.
func (r *SSEReader) end(err error) error {
	r.err = endError(err, r.t.cut, r.t.inLine, r.max)
	return r.err
}

// endError is the error that ends a stream: go-sse's error goErr mapped to
// this package's, else a *TruncatedError when the tracker found the tail cut,
// else io.EOF. inLine says the body ended inside a line; max is the limit an
// oversized event broke.
func endError(goErr error, cut, inLine bool, max int) error {
	switch {
	case goErr == nil && cut:
		return &TruncatedError{}
	case goErr == nil:
		return io.EOF
	case errors.Is(goErr, bufio.ErrTooLong):
		return &EventTooLargeError{Limit: max, Err: goErr}
	case errors.Is(goErr, sse.ErrUnexpectedEOF):
		return &TruncatedError{MidLine: true, Err: goErr}
	case errors.Is(goErr, io.ErrUnexpectedEOF):
		return &TruncatedError{MidLine: inLine, Err: goErr}
	}
	return readError(goErr)
}

// Err returns the error that ended the stream: nil while it is being read,
// io.EOF after a clean end.
func (r *SSEReader) Err() error { return r.err }

// LastEventID returns the stream's last event ID string: the id in effect at
// the last dispatch (a blank line), including id-only blocks that fired no
// event, excluding an id in a discarded unterminated tail.
func (r *SSEReader) LastEventID() string { return r.t.lastID }

// Retry returns the reconnection time the stream set (ms), if any. A retry
// field applies at once, even in a discarded tail.
func (r *SSEReader) Retry() (ms int, ok bool) {
	if r.t.retry == nil {
		return 0, false
	}
	return *r.t.retry, true
}

// BytesRead returns how many bytes of the body were consumed.
func (r *SSEReader) BytesRead() int64 { return r.t.n }

// Close releases the pull iterator started by Next when the caller stops
// before the end of the stream (Next releases it itself once it returned
// an error). It does not close the underlying reader.
func (r *SSEReader) Close() {
	if r.stop != nil {
		r.stop()
	}
}

// readError wraps an error of the body (or of what reads it for the
// reader: a cancel, the idle timeout).
func readError(err error) error { return fmt.Errorf("sse: reading the stream: %w", err) }

// verdict says, for one block go-sse will yield, what the spec does with it.
type verdict struct {
	keep  bool   // dispatched: a data field was present
	blank bool   // ended by a blank line (false: go-sse's EOF dispatch, G2)
	retry *int   // reconnection time in effect at that blank line
	id    string // the last event ID buffer at that blank line
}

const (
	fieldOther = iota
	fieldData
	fieldEvent
	fieldID
	fieldRetry
)

// tracker is the io.Reader go-sse reads from. It strips the leading BOM,
// prepends a comment line (so go-sse never strips a BOM itself), and scans
// the bytes with the spec's line rules to decide the fate of every block go-
// sse will yield. Scanning looks only at field names and at id/retry values;
// data lines are skipped with bytes.IndexByte.
type tracker struct {
	r      io.Reader
	prefix string
	n      int64

	started  bool   // the first bytes have been read (BOM decided)
	held     []byte // the first bytes, given to go-sse before the rest
	startErr error  // an error met while reading the first bytes

	prevCR  bool
	inLine  bool // the current line has at least one byte
	name    [6]byte
	nameLen int
	colon   bool
	kind    int
	valLen  int
	nul     bool
	digits  int
	retryV  int
	badNum  bool
	dirty   bool // go-sse will yield this block
	hasData bool // the spec will dispatch this block
	retry   *int

	// The last event ID buffer, and the value of the id line being read.
	// The tracker, not go-sse, keeps it: ReadTurn frames a stream with
	// one go-sse parser per run of blocks, and a parser knows only the
	// ids of its own run.
	id    string
	idVal []byte

	verdicts []verdict
	vhead    int
	cut      bool
	lastID   string
	eof      bool
}

func (t *tracker) popVerdict() (verdict, bool) {
	if t.vhead == len(t.verdicts) {
		return verdict{}, false
	}
	v := t.verdicts[t.vhead]
	t.vhead++
	if t.vhead == len(t.verdicts) {
		t.verdicts, t.vhead = t.verdicts[:0], 0
	}
	return v, true
}

func (t *tracker) Read(p []byte) (int, error) {
	if len(t.prefix) > 0 {
		n := copy(p, t.prefix)
		t.prefix = t.prefix[n:]
		return n, nil
	}
	if !t.started {
		t.started = true
		t.readStart()
	}
	if len(t.held) > 0 {
		n := copy(p, t.held)
		t.held = t.held[n:]
		t.took(p[:n])
		return n, nil
	}
	var n int
	err := t.startErr
	if err == nil {
		n, err = t.r.Read(p)
		t.n += int64(n)
		t.took(p[:n])
	}
	if err == io.EOF && !t.eof {
		t.eof = true
		t.atEOF()
	}
	return n, err
}

// took scans the bytes given to go-sse.
func (t *tracker) took(p []byte) { t.scan(p) }

// readStart reads the first three bytes of the stream and drops them if
// they are a UTF-8 BOM (exactly one, only at byte 0, also when its bytes
// arrive in separate reads). The bytes are given to go-sse from t.held.
func (t *tracker) readStart() {
	const bom = "\xEF\xBB\xBF"
	var buf [3]byte
	n := 0
	for n < 3 && string(buf[:n]) == bom[:n] {
		k, err := t.r.Read(buf[n:])
		t.n += int64(k)
		n += k
		if err != nil {
			t.startErr = err
			break
		}
	}
	if string(buf[:n]) != bom {
		t.held = append(t.held, buf[:n]...)
	}
}

func (t *tracker) atEOF() {
	// An unterminated last line makes go-sse fail with ErrUnexpectedEOF (G3),
	// mapped to a mid-line TruncatedError. A terminated one without its blank
	// line is dispatched by go-sse if it is dirty (G2); the spec discards it.
	if t.inLine {
		return
	}
	if t.dirty || t.hasData {
		t.cut = true
		if t.dirty {
			t.verdicts = append(t.verdicts, verdict{})
		}
	}
}

// scan follows the spec's line rules over p. It returns the offset in p
// just past the last blank line, where a block ends and the next starts,
// or -1 when p has none. When the blank line ends with CR and p ends
// there, the LF that may follow is left to the next bytes.
func (t *tracker) scan(p []byte) (cut int) {
	cut = -1
	lf, pos := -1, 0
	for pos < len(p) {
		if t.prevCR {
			t.prevCR = false
			if p[pos] == '\n' { // the LF of a CRLF, even across reads
				pos++
				if cut == pos-1 {
					cut = pos
				}
				continue
			}
		}
		if lf < pos {
			if k := bytes.IndexByte(p[pos:], '\n'); k < 0 {
				lf = len(p)
			} else {
				lf = pos + k
			}
		}
		end := lf
		if k := bytes.IndexByte(p[pos:lf], '\r'); k >= 0 {
			end = pos + k
		}
		if !t.inLine && end < len(p) && end-pos >= 5 && string(p[pos:pos+5]) == "data:" {
			// The line of nearly every event, whole in p: what partial
			// and endLine would conclude, without their field parsing.
			t.dirty, t.hasData = true, true
			pos = end + 1
			if p[end] == '\r' {
				if pos == len(p) || p[pos] != '\n' {
					t.prevCR = true
					continue
				}
				pos++ // its LF
			}
			// The blank line that nearly always follows, whole in p:
			// what endLine concludes for it, without another search.
			switch {
			case pos < len(p) && p[pos] == '\n':
				pos++
			case pos+1 < len(p) && p[pos] == '\r' && p[pos+1] == '\n':
				pos += 2
			default:
				continue
			}
			t.endLine()
			cut = pos
			continue
		}
		t.partial(p[pos:end])
		if end == len(p) {
			return cut
		}
		if !t.inLine {
			cut = end + 1
		}
		t.endLine()
		t.prevCR = p[end] == '\r'
		pos = end + 1
	}
	return cut
}

// partial takes bytes of the current line (no terminator).
func (t *tracker) partial(seg []byte) {
	if len(seg) == 0 {
		return
	}
	if !t.inLine {
		t.inLine, t.nameLen, t.colon, t.kind, t.valLen, t.nul, t.digits, t.retryV, t.badNum = true, 0, false, fieldOther, 0, false, 0, 0, false
		t.idVal = t.idVal[:0]
	}
	if !t.colon {
		c := bytes.IndexByte(seg, ':')
		name := seg
		if c >= 0 {
			name = seg[:c]
		}
		if t.nameLen < len(t.name) {
			copy(t.name[t.nameLen:], name)
		}
		t.nameLen += len(name)
		if c < 0 {
			return
		}
		t.colon = true
		t.kind = t.classify()
		seg = seg[c+1:]
	}
	switch t.kind {
	case fieldID:
		if bytes.IndexByte(seg, 0) >= 0 {
			t.nul = true
		}
		if t.valLen == 0 && len(seg) > 0 && seg[0] == ' ' {
			seg, t.valLen = seg[1:], 1 // the one space after the colon
		}
		t.valLen += len(seg)
		t.idVal = append(t.idVal, seg...)
	case fieldRetry:
		for _, b := range seg {
			t.valLen++
			switch {
			case t.valLen == 1 && b == ' ':
			case b >= '0' && b <= '9':
				t.digits++
				if t.retryV > (math.MaxInt32-9)/10 {
					t.badNum = true // overflow: the spec leaves it open; ignore the field
				}
				t.retryV = t.retryV*10 + int(b-'0')
			default:
				t.badNum = true
			}
		}
	}
}

func (t *tracker) classify() int {
	if t.nameLen > 5 {
		return fieldOther
	}
	switch string(t.name[:t.nameLen]) {
	case "data":
		return fieldData
	case "event":
		return fieldEvent
	case "id":
		return fieldID
	case "retry":
		return fieldRetry
	}
	return fieldOther
}

func (t *tracker) endLine() {
	if !t.inLine { // blank line: dispatch
		if t.dirty {
			t.verdicts = append(t.verdicts, verdict{keep: t.hasData, blank: true, retry: t.retry, id: t.id})
		}
		t.dirty, t.hasData = false, false
		return
	}
	t.inLine = false
	if !t.colon {
		t.kind = t.classify()
	}
	switch t.kind {
	case fieldData:
		t.dirty, t.hasData = true, true
	case fieldEvent:
		t.dirty = true
	case fieldID:
		if !t.nul {
			t.dirty = true
			if string(t.idVal) != t.id {
				t.id = string(t.idVal)
			}
		}
	case fieldRetry:
		if t.digits > 0 && !t.badNum {
			v := t.retryV
			t.retry = &v
		}
	}
}

// decodeUTF8 decodes b like the WHATWG Encoding Standard's UTF-8 decoder:
// one U+FFFD per maximal subpart of an ill-formed sequence. (Go's range loop
// and encoding/json give one per byte, strings.ToValidUTF8 one per run.)
// Every byte that matters to SSE framing is ASCII and ends any ill-formed
// sequence, so decoding each event's data after framing equals decoding the
// stream first.
func decodeUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || n > 1 {
			sb.WriteString(s[i : i+n])
			i += n
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += maximalSubpart(s[i:])
	}
	return sb.String()
}

// maximalSubpart returns how many bytes of the ill-formed sequence at the
// start of s one U+FFFD replaces (at least 1).
func maximalSubpart(s string) int {
	lead := s[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		need = 1
	case lead >= 0xE0 && lead <= 0xEF:
		need = 2
		if lead == 0xE0 {
			lo = 0xA0
		} else if lead == 0xED {
			hi = 0x9F
		}
	case lead >= 0xF0 && lead <= 0xF4:
		need = 3
		if lead == 0xF0 {
			lo = 0x90
		} else if lead == 0xF4 {
			hi = 0x8F
		}
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(s); n++ {
		if s[n] < lo || s[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}
