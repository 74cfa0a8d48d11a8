package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// AppendEventJSON appends e's JSON encoding to dst, byte for byte what
// encoding/json's Encoder writes for it with SetEscapeHTML(false), without
// the trailing newline, and reports true; or leaves dst as it is and
// reports false for an event it has no fast path for.
//
// Why: text and reasoning deltas and segment marks are nearly every event
// of a turn, and the reflective encoder spent more CPU on each of them than
// SSE framing and the dialect together (a fifth of `smith replay --json`).
// Every other event is rare and goes through encoding/json.
// TestAppendEventJSON and FuzzAppendEventJSON hold this to encoding/json.
func AppendEventJSON(dst []byte, e *Event) ([]byte, bool) {
	if !fastEvent(e) {
		return dst, false
	}
	return appendEventTail(appendEventHead(dst, e), e), true
}

// EventEncoder is AppendEventJSON for a run of events, such as a turn's:
// it keeps the encoding of the members that repeat from one event to the
// next (type, dialogId, turnId) and encodes them again only when they
// change. The zero value is ready to use.
type EventEncoder struct {
	typ          Kind
	dialog, turn string
	// line is the head, `{"type":...,"seq":` for typ, dialog and turn,
	// then the decimal digits of seq, the last event's: one copy into the
	// output for both. The next event's seq is nearly always one more,
	// counted up in the digits rather than formatted anew.
	line    []byte
	headLen int // the head's bytes in line; 0 before the first event
	seq     int64
}

// Append is AppendEventJSON(dst, e): the same bytes, the same verdict.
func (c *EventEncoder) Append(dst []byte, e *Event) ([]byte, bool) {
	if !fastEvent(e) {
		return dst, false
	}
	switch {
	case c.headLen == 0 || !sameString(string(e.Type), string(c.typ)) || !sameString(e.DialogID, c.dialog) || !sameString(e.TurnID, c.turn):
		c.typ, c.dialog, c.turn = e.Type, e.DialogID, e.TurnID
		c.line = appendEventHead(c.line[:0], e)
		c.headLen = len(c.line)
		c.seq, c.line = e.Seq, strconv.AppendInt(c.line, e.Seq, 10)
	case e.Seq == c.seq:
	case e.Seq > 0 && c.seq == e.Seq-1 && incDecimal(c.line[c.headLen:]):
		c.seq = e.Seq
	default:
		c.seq, c.line = e.Seq, strconv.AppendInt(c.line[:c.headLen], e.Seq, 10)
	}
	dst = append(dst, c.line...)
	return appendEventRest(dst, e), true
}

// sameString is a == b, with the common case — the same string, taken
// from the same field event after event — decided without a call.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// incDecimal adds one to the non-negative decimal number d in place and
// reports true, or reports false, with d unchanged, if it would gain a
// digit (all nines).
func incDecimal(d []byte) bool {
	i := len(d) - 1
	for i >= 0 && d[i] == '9' {
		i--
	}
	if i < 0 {
		return false
	}
	d[i]++
	for i++; i < len(d); i++ {
		d[i] = '0'
	}
	return true
}

// fastEvent reports whether e is one of the events AppendEventJSON
// encodes itself: no member but the head, text and segment.
func fastEvent(e *Event) bool {
	return e.ToolCall == nil && e.ToolResult == nil && e.Change == nil && e.Citation == nil &&
		e.Notice == nil && e.Error == nil && e.TurnEnd == nil && e.Violation == nil && len(e.Raw) == 0
}

// appendEventHead appends the members before seq's value.
func appendEventHead(dst []byte, e *Event) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendJSONString(dst, string(e.Type))
	if e.DialogID != "" {
		dst = append(dst, `,"dialogId":`...)
		dst = appendJSONString(dst, e.DialogID)
	}
	if e.TurnID != "" {
		dst = append(dst, `,"turnId":`...)
		dst = appendJSONString(dst, e.TurnID)
	}
	return append(dst, `,"seq":`...)
}

// appendEventTail appends seq's value and the members after it.
func appendEventTail(dst []byte, e *Event) []byte {
	return appendEventRest(strconv.AppendInt(dst, e.Seq, 10), e)
}

// appendEventRest appends the members after seq.
func appendEventRest(dst []byte, e *Event) []byte {
	if e.Text != "" {
		dst = append(dst, `,"text":`...)
		dst = appendJSONString(dst, e.Text)
	}
	if s := e.Segment; s != nil {
		dst = append(dst, `,"segment":{"block":`...)
		dst = appendJSONString(dst, s.Block)
		dst = append(dst, `,"phase":`...)
		dst = appendJSONString(dst, s.Phase)
		if s.ID != "" {
			dst = append(dst, `,"id":`...)
			dst = appendJSONString(dst, s.ID)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// jsonSafeASCII marks with '1' the bytes appendJSONString copies as they
// are: printable ASCII but for '"' and '\\'. (A constant: a lookup is
// cheaper than the three comparisons per byte it replaces.)
const jsonSafeASCII = "0000000000000000000000000000000011011111111111111111111111111111111111111111111111111111111101111111111111111111111111111111111100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"

// plainWord reports whether none of the eight bytes of w needs more than a
// copy in a JSON string: none is '"', '\\', a control byte (hasSpecial)
// or non-ASCII (>= 0x80, which the encoder must check for U+2028, U+2029
// and invalid UTF-8).
func plainWord(w uint64) bool {
	return notPlain(w) == 0
}

// notPlain is plainWord's test as a mask: the high bit of each byte of w
// that needs a look may be set, and the lowest byte marked is exactly the
// first that needs one (bytes above it may be marked falsely), so that
// firstMarked(notPlain(w)) is the offset of that byte.
func notPlain(w uint64) uint64 {
	return w&0x8080808080808080 | specialBits(w)
}

// firstMarked is the offset of the lowest byte whose high bit is set in m,
// 8 when none is.
func firstMarked(m uint64) int {
	return bits.TrailingZeros64(m) >> 3
}

// load64 is the little-endian word of s[i:i+8] (one load once compiled).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// appendJSONString appends s as a JSON string the way encoding/json does
// without HTML escaping: the short escapes \" \\ \b \f \n \r \t, \u00XX
// for the other control bytes, \ufffd for each invalid UTF-8 byte, and
// \u2028 and \u2029 escaped (they end lines in JavaScript).
func appendJSONString(dst []byte, s string) []byte {
	dst = slices.Grow(dst, len(s)+2)
	dst = append(dst, '"')
	dst = appendJSONStringBody(dst, s)
	return append(dst, '"')
}

// appendJSONStringBody is appendJSONString without the quotes.
func appendJSONStringBody(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look (nearly all
		// text): a word test instead of eight lookups; then straight to
		// the byte that needs one.
		if i+8 <= len(s) {
			m := notPlain(load64(s, i))
			if m == 0 {
				i += 8
				continue
			}
			i += firstMarked(m)
		}
		b := s[i]
		if jsonSafeASCII[b] == '1' { // in the last seven bytes
			i++
			continue
		}
		if b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// AppendSummaryJSON appends s's JSON encoding to dst, byte for byte what
// encoding/json's Encoder writes for it with SetEscapeHTML(false), without
// the trailing newline.
//
// Why: the summary carries the turn's whole text and reasoning, and the
// reflective encoder escaped a 1 MB answer at several nanoseconds a byte
// into a buffer grown by doubling (7 % of a 100k-event `smith replay
// --json`). Everything but the two texts still goes through encoding/json;
// they are encoded straight into dst.
func AppendSummaryJSON(dst []byte, s *Summary) ([]byte, error) {
	before, after, err := summaryAround(s)
	if err != nil {
		return dst, err
	}
	// Room for everything, escapes aside: the texts are most of it.
	dst = slices.Grow(dst, len(before)+len(after)+len(s.Text)+len(s.Reasoning)+32)
	dst = append(dst, before...)
	dst = append(dst, `,"text":`...)
	dst = appendJSONString(dst, s.Text)
	dst = append(dst, `,"reasoning":`...)
	dst = appendJSONString(dst, s.Reasoning)
	return append(dst, after...), nil
}

// summaryAround is the JSON encoding of s without its text and reasoning
// members: the bytes before them and the bytes after them.
func summaryAround(s *Summary) (before, after []byte, err error) {
	rest := *s
	rest.Text, rest.Reasoning = "", ""
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&rest); err != nil {
		return nil, nil, err
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	// The members before text are strings and null, in which `,"` cannot
	// occur unescaped: the first match is the summary's own member.
	const empty = `,"text":"","reasoning":""`
	i := bytes.Index(out, []byte(empty))
	if i < 0 {
		return nil, nil, errors.New("summary JSON without its text members")
	}
	return out[:i], out[i+len(empty):], nil
}

// WriteSummaryJSON writes what AppendSummaryJSON appends for s, and a
// newline, to w. The texts are encoded a piece at a time into a small
// buffer: the encoding of a long answer is never held whole (replay's
// largest allocation after go-sse's, and page faults besides).
func WriteSummaryJSON(w io.Writer, s *Summary) error {
	return writeSummaryJSON(w, s, summaryPiece)
}

// summaryPiece is how many bytes of text WriteSummaryJSON encodes at once.
const summaryPiece = 32 << 10

func writeSummaryJSON(w io.Writer, s *Summary, piece int) error {
	before, after, err := summaryAround(s)
	if err != nil {
		return err
	}
	// A copy: before and after share one array.
	buf := make([]byte, 0, min(len(before)+len(s.Text)+len(s.Reasoning), 2*piece)+len(after)+64)
	buf = append(buf, before...)
	buf = append(buf, `,"text":"`...)
	if buf, err = writeJSONStringBody(w, buf, s.Text, piece); err != nil {
		return err
	}
	buf = append(buf, `","reasoning":"`...)
	if buf, err = writeJSONStringBody(w, buf, s.Reasoning, piece); err != nil {
		return err
	}
	buf = append(buf, '"')
	buf = append(buf, after...)
	_, err = w.Write(append(buf, '\n'))
	return err
}

// writeJSONStringBody appends s's JSON encoding (no quotes) to buf a piece
// at a time, writing buf to w and emptying it after each piece but the
// last. Pieces are cut before a byte that starts a UTF-8 sequence (or is
// no part of one), so that each piece encodes exactly as it does within
// the whole: no sequence spans a cut.
func writeJSONStringBody(w io.Writer, buf []byte, s string, piece int) ([]byte, error) {
	for len(s) > piece {
		end := piece
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		if end == 0 { // a piece shorter than the sequence: cut after it
			for end = piece; end < len(s) && !utf8.RuneStart(s[end]); end++ {
			}
		}
		buf = appendJSONStringBody(buf, s[:end])
		if _, err := w.Write(buf); err != nil {
			return buf, err
		}
		buf, s = buf[:0], s[end:]
	}
	return appendJSONStringBody(buf, s), nil
}
