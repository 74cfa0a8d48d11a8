package protocol

import (
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// ev is a compact expected event: type, data, id.
type ev struct{ T, D, ID string }

// sseCases cover every rule of the WHATWG algorithm (reference sse.md
// section 1); the names carry the number of the go-sse v0.11.0 deviation
// (section 3, G1–G8) a case checks the compensation of.
type sseCase struct {
	name   string
	in     string
	want   []ev
	err    error // nil (clean EOF), ErrStreamCut or ErrEventTooLarge
	lastID string
	retry  int // -1: none
	max    int
	big    bool // too big to feed byte by byte (go-sse rescans its buffer per read)
}

var sseCases = []sseCase{
	{name: "lf", in: "data: a\n\ndata: b\n\n", want: []ev{{"message", "a", ""}, {"message", "b", ""}}, retry: -1},
	{name: "crlf", in: "data: a\r\n\r\ndata: b\r\n\r\n", want: []ev{{"message", "a", ""}, {"message", "b", ""}}, retry: -1},
	{name: "cr", in: "data: a\r\rdata: b\r\r", want: []ev{{"message", "a", ""}, {"message", "b", ""}}, retry: -1},
	{name: "mixed endings", in: "data:1\r:\x00\n:\r\ndata:2\n:" + strings.Repeat("x", 2048) + "\rdata:3\n:data:fail\r:" + strings.Repeat("y", 2048) + "\ndata:4\n\n",
		want: []ev{{"message", "1\n2\n3\n4", ""}}, retry: -1},
	{name: "newline fest", in: "data:test\r\ndata\ndata:test\r\n\r\n", want: []ev{{"message", "test\n\ntest", ""}}, retry: -1},
	{name: "lf then cr is a blank line", in: "data: a\n\rdata: b\n\n", want: []ev{{"message", "a", ""}, {"message", "b", ""}}, retry: -1},
	{name: "one bom stripped", in: "\uFEFFdata: a\n\n", want: []ev{{"message", "a", ""}}, retry: -1},
	{name: "second bom kept", in: "\uFEFF\uFEFFdata: a\n\ndata: b\n\n", want: []ev{{"message", "b", ""}}, retry: -1},
	{name: "bom after blank line kept (G8)", in: "\n\uFEFFdata: a\n\ndata: b\n\n", want: []ev{{"message", "b", ""}}, retry: -1},
	{name: "bom mid stream kept", in: "data: a\n\n\uFEFFdata: b\n\n", want: []ev{{"message", "a", ""}}, retry: -1},
	{name: "partial bom is data", in: "\xEF\xBBdata: a\n\ndata: b\n\n", want: []ev{{"message", "b", ""}}, retry: -1},
	{name: "comments ignored", in: ": ping - 2025-12-29 11:20:15\r\n\r\ndata: x\r\n: c\r\n\r\n", want: []ev{{"message", "x", ""}}, retry: -1},
	{name: "data joined with lf", in: "data: YHOO\ndata: +2\ndata: 10\n\n", want: []ev{{"message", "YHOO\n+2\n10", ""}}, retry: -1},
	{name: "one space stripped", in: "data:  two\ndata:\ttab\ndata:none\ndata: trailing \n\n", want: []ev{{"message", " two\n\ttab\nnone\ntrailing ", ""}}, retry: -1},
	{name: "empty data fields", in: "data\n\ndata\ndata\n\ndata:", want: []ev{{"message", "", ""}, {"message", "\n", ""}}, err: ErrStreamCut, retry: -1},
	{name: "field names literal", in: "Data:1\n data:2\ndata :3\nda-ta:4\ndata_5\n\x00data:6\ndata:ok\n\n", want: []ev{{"message", "ok", ""}}, retry: -1},
	{name: "event type, message by default (G6)", in: "event: delta\ndata: a\n\ndata: b\n\nevent:\ndata: c\n\n", want: []ev{{"delta", "a", ""}, {"message", "b", ""}, {"message", "c", ""}}, retry: -1},
	{name: "event without data dispatches nothing (G1)", in: "event: ping\n\nid: 5\n\ndata: a\n\n", want: []ev{{"message", "a", "5"}}, lastID: "5", retry: -1},
	{name: "id persists and resets", in: "id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", want: []ev{{"message", "a", "1"}, {"message", "b", "1"}, {"message", "c", ""}}, retry: -1},
	{name: "id with nul ignored", in: "id: 7\ndata: a\n\nid: x\x00y\ndata: b\n\n", want: []ev{{"message", "a", "7"}, {"message", "b", "7"}}, lastID: "7", retry: -1},
	{name: "id only block sets last id (G1)", in: "data: a\n\nid: 9\n\n", want: []ev{{"message", "a", ""}}, lastID: "9", retry: -1},
	{name: "id in discarded tail not used", in: "id: 1\ndata: a\n\nid: 2\ndata: b\n", want: []ev{{"message", "a", "1"}}, err: ErrStreamCut, lastID: "1", retry: -1},
	{name: "retry digits (G7)", in: "retry: 2000\nretry: 1000x\ndata: a\n\n", want: []ev{{"message", "a", ""}}, retry: 2000},
	{name: "retry bogus ignored", in: "retry: +5\nretry: -5\nretry: 1.5\nretry:  7\nretry: 0x10\nretry:\nretry: \u0661\ndata: a\n\n", want: []ev{{"message", "a", ""}}, retry: -1},
	{name: "retry leading zeros", in: "retry:0050\n\n", retry: 50},
	{name: "retry in tail applies", in: "data: a\n\nretry: 300\ndata: b\n", want: []ev{{"message", "a", ""}}, err: ErrStreamCut, retry: 300},
	{name: "unterminated event discarded (G2)", in: "data: one\n\ndata: last\n", want: []ev{{"message", "one", ""}}, err: ErrStreamCut, retry: -1},
	{name: "cut mid line (G3)", in: "data: one\r\n\r\ndata: {\"con", want: []ev{{"message", "one", ""}}, err: ErrStreamCut, retry: -1},
	{name: "trailing comment line is fine", in: "data: one\n\n: bye\n", want: []ev{{"message", "one", ""}}, retry: -1},
	{name: "empty stream", in: "", retry: -1},
	{name: "only bom", in: "\uFEFF", retry: -1},
	{name: "invalid utf8 replaced per maximal subpart (G5)", in: "data: a\xF0\x9F\x98b\xED\xA0\x80c\xC0\x80\n\n", want: []ev{{"message", "a\uFFFDb\uFFFD\uFFFD\uFFFDc\uFFFD\uFFFD", ""}}, retry: -1},
	{name: "nul in data kept", in: "data:\x00\n\n", want: []ev{{"message", "\x00", ""}}, retry: -1},
	{name: "multibyte", in: "data: Ünïcödé 😀 日本\n\n", want: []ev{{"message", "Ünïcödé 😀 日本", ""}}, retry: -1},
	{name: "event too large (G4)", in: "data: small\n\ndata: " + strings.Repeat("x", 200) + "\n\n", max: 64, want: []ev{{"message", "small", ""}}, err: ErrEventTooLarge, retry: -1},
	{name: "no 64 KiB cap (G4)", in: "data: " + strings.Repeat("x", 100000) + "\n\n", want: []ev{{"message", strings.Repeat("x", 100000), ""}}, retry: -1, big: true},
}

// randomChunks returns a reader that hands out s in pieces of random size.
type randomChunks struct {
	s   string
	rng *rand.Rand
}

func (r *randomChunks) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := min(1+r.rng.IntN(7), len(r.s), len(p))
	copy(p, r.s[:n])
	r.s = r.s[n:]
	return n, nil
}

func feeds(s string, seed uint64) map[string]io.Reader {
	return map[string]io.Reader{
		"whole":      strings.NewReader(s),
		"byteByByte": iotest.OneByteReader(strings.NewReader(s)),
		"random":     &randomChunks{s: s, rng: rand.New(rand.NewPCG(seed, 7))},
	}
}

func TestSSEReader(t *testing.T) {
	for i, tc := range sseCases {
		for feed, r := range feeds(tc.in, uint64(i)) {
			if tc.big && feed != "whole" {
				continue
			}
			t.Run(tc.name+"/"+feed, func(t *testing.T) {
				sr := NewSSEReader(r, tc.max)
				var got []ev
				var err error
				for {
					var e SSEEvent
					e, err = sr.Next()
					if err != nil {
						break
					}
					got = append(got, ev{e.Type, e.Data, e.LastEventID})
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				switch {
				case tc.err == nil && err != io.EOF:
					t.Errorf("err = %v, want io.EOF", err)
				case tc.err != nil && !errors.Is(err, tc.err):
					t.Errorf("err = %v, want %v", err, tc.err)
				}
				if got := sr.LastEventID(); got != tc.lastID && tc.lastID != "" {
					t.Errorf("LastEventID = %q, want %q", got, tc.lastID)
				}
				ms, ok := sr.Retry()
				if !ok {
					ms = -1
				}
				if ms != tc.retry {
					t.Errorf("Retry = %d, want %d", ms, tc.retry)
				}
			})
		}
	}
}

func TestSSEReaderErrors(t *testing.T) {
	sr := NewSSEReader(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 10)
	_, err := sr.Next()
	var tl *EventTooLargeError
	if !errors.As(err, &tl) || tl.Limit != 10 || !strings.Contains(err.Error(), "10-byte limit") {
		t.Fatalf("err = %v, want *EventTooLargeError with limit 10", err)
	}
	if _, again := sr.Next(); again != err {
		t.Errorf("second Next = %v, want the same error", again)
	}

	sr = NewSSEReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(io.ErrUnexpectedEOF)), 0)
	if _, err := sr.Next(); err != nil {
		t.Fatal(err)
	}
	_, err = sr.Next()
	var te *TruncatedError
	if !errors.As(err, &te) || !te.MidLine || !errors.Is(err, ErrStreamCut) {
		t.Fatalf("err = %#v, want a mid-line *TruncatedError", err)
	}

	boom := errors.New("boom")
	sr = NewSSEReader(io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(boom)), 0)
	sr.Next()
	if _, err := sr.Next(); !errors.Is(err, boom) || errors.Is(err, ErrStreamCut) {
		t.Fatalf("err = %v, want the body's error", err)
	}
}

func TestSSEReaderRetryOnEvent(t *testing.T) {
	sr := NewSSEReader(strings.NewReader("data: a\n\nretry: 10\ndata: b\n\nretry: 20\n\n"), 0)
	a, _ := sr.Next()
	b, _ := sr.Next()
	if a.Retry != nil || b.Retry == nil || *b.Retry != 10 {
		t.Fatalf("retry on events = %v, %v; want nil, 10", a.Retry, b.Retry)
	}
	if _, err := sr.Next(); err != io.EOF {
		t.Fatal(err)
	}
	if ms, _ := sr.Retry(); ms != 20 {
		t.Errorf("final Retry = %d, want 20", ms)
	}
}

func FuzzSSEReader(f *testing.F) {
	for _, tc := range sseCases {
		f.Add(tc.in, uint64(3))
	}
	f.Fuzz(func(t *testing.T, in string, seed uint64) {
		// The same stream must give the same events however it is split.
		read := func(r io.Reader) ([]SSEEvent, string, error) {
			sr := NewSSEReader(r, 1<<16)
			var out []SSEEvent
			for {
				e, err := sr.Next()
				if err != nil {
					return out, sr.LastEventID(), err
				}
				e.Retry = nil
				out = append(out, e)
			}
		}
		w, wid, werr := read(strings.NewReader(in))
		// Tiny reads make go-sse rescan its buffer (quadratic in the event
		// size): split only inputs of a few KiB.
		if len(in) <= 8<<10 {
			g, gid, gerr := read(&randomChunks{s: in, rng: rand.New(rand.NewPCG(seed, 1))})
			if diff := cmp.Diff(w, g); diff != "" {
				t.Fatalf("whole vs split (-whole +split):\n%s", diff)
			}
			if (werr == io.EOF) != (gerr == io.EOF) || errors.Is(werr, ErrStreamCut) != errors.Is(gerr, ErrStreamCut) {
				t.Fatalf("errors differ: whole %v, split %v", werr, gerr)
			}
			if wid != gid {
				t.Fatalf("last id differs: %q vs %q", wid, gid)
			}
		}
		// And they must be the spec's: compare with a direct transcription
		// of the WHATWG algorithm (a test oracle, not used by smith), which
		// has no size limit.
		if errors.Is(werr, ErrEventTooLarge) {
			return
		}
		ref := refParse(in)
		var got []ev
		for _, e := range w {
			got = append(got, ev{e.Type, e.Data, e.LastEventID})
		}
		if diff := cmp.Diff(ref.events, got); diff != "" {
			t.Fatalf("reader vs spec (-spec +reader):\n%s", diff)
		}
		if ref.cut != errors.Is(werr, ErrStreamCut) || (!ref.cut && werr != io.EOF) {
			t.Fatalf("spec says cut=%v, reader ended with %v", ref.cut, werr)
		}
		if ref.lastID != wid {
			t.Fatalf("last id: spec %q, reader %q", ref.lastID, wid)
		}
	})
}

type refResult struct {
	events []ev
	lastID string
	cut    bool
}

// refParse is the WHATWG event-stream algorithm (reference sse.md section
// 1.2) transcribed line by line, as an oracle for FuzzSSEReader. "cut" is
// smith's rule: the stream ends inside a line, or after an unterminated
// block that had a data, event or (NUL-free) id field.
func refParse(in string) refResult {
	in = strings.TrimPrefix(in, "\uFEFF")
	var r refResult
	var data, typ, idBuf string
	var hasData, pending bool
	for in != "" {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			r.cut = true // an unterminated last line
			break
		}
		line := in[:i]
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
		if line == "" {
			r.lastID = idBuf
			if hasData {
				if typ == "" {
					typ = "message"
				}
				r.events = append(r.events, ev{typ, decodeUTF8(strings.TrimSuffix(data, "\n")), r.lastID})
			}
			data, typ, hasData, pending = "", "", false, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			typ, pending = value, true
		case "data":
			data, hasData, pending = data+value+"\n", true, true
		case "id":
			if !strings.Contains(value, "\x00") {
				idBuf, pending = value, true
			}
		}
	}
	if pending {
		r.cut = true
	}
	return r
}
