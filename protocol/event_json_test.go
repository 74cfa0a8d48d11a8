package protocol

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// stdEventJSON is what encoding/json writes for e with SetEscapeHTML(false),
// without the trailing newline.
func stdEventJSON(t testing.TB, e *Event) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func TestAppendEventJSON(t *testing.T) {
	tests := []struct {
		e    Event
		fast bool
	}{
		{Event{Type: KindText, DialogID: "d1", Seq: 7, Text: "The loop "}, true},
		{Event{Type: KindText, Seq: 0, Text: "line with \"quotes\" and \\ \n\r\t\b\f\x00\x1f\x7f <&> é ✓ \u2028\u2029 \xff\xfe end"}, true},
		{Event{Type: KindReasoning, DialogID: "d", TurnID: "t1", Seq: -3, Text: "hmm"}, true},
		{Event{Type: KindText, Seq: 1}, true},
		{Event{Type: KindSegment, DialogID: "d", Seq: 2, Segment: &Segment{Block: "text", Phase: "start"}}, true},
		{Event{Type: KindSegment, Seq: 2, Segment: &Segment{Block: "reasoning", Phase: "end", ID: "r\"1"}}, true},
		{Event{Type: KindSegment, Seq: 2, Segment: &Segment{}}, true},
		{Event{Type: KindToolCall, Seq: 3, ToolCall: &ToolCall{Name: "x"}}, false},
		{Event{Type: KindText, Seq: 4, Text: "x", Raw: json.RawMessage(`{"a":1}`)}, false},
		{Event{Type: KindTurnEnd, Seq: 5, TurnEnd: &TurnEnd{Outcome: OutcomeCompleted}}, false},
	}
	var enc EventEncoder // one for all: its memory of the last head must not leak into the next
	for _, tt := range append(tests, tests...) {
		got, ok := AppendEventJSON([]byte("prefix"), &tt.e)
		egot, eok := enc.Append([]byte("prefix"), &tt.e)
		if eok != ok || string(egot) != string(got) {
			t.Errorf("%+v: EventEncoder gave %q, %v; AppendEventJSON %q, %v", tt.e, egot, eok, got, ok)
		}
		if ok != tt.fast {
			t.Errorf("%+v: fast path %v, want %v", tt.e, ok, tt.fast)
			continue
		}
		if !ok {
			if string(got) != "prefix" {
				t.Errorf("%+v: no fast path but dst changed to %q", tt.e, got)
			}
			continue
		}
		if want := "prefix" + stdEventJSON(t, &tt.e); string(got) != want {
			t.Errorf("%+v:\n got %s\nwant %s", tt.e, got, want)
		}
	}
}

// EventEncoder counts seq up in its digits: across every carry, after a
// jump, a repeat, a step back and negative numbers, its bytes are
// AppendEventJSON's.
func TestEventEncoderSeq(t *testing.T) {
	var enc EventEncoder
	seqs := []int64{0, 1, 2, 8, 9, 10, 11, 98, 99, 100, 101, 101, 50, 999, 1000, -2, -1, 0, 1, 9_999_999, 10_000_000, 1 << 62, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for s := int64(990); s < 1012; s++ {
		seqs = append(seqs, s)
	}
	for _, seq := range seqs {
		e := Event{Type: KindText, DialogID: "d", Seq: seq, Text: "x"}
		got, _ := enc.Append(nil, &e)
		if want, _ := AppendEventJSON(nil, &e); string(got) != string(want) {
			t.Fatalf("seq %d: got %s, want %s", seq, got, want)
		}
	}
}

// FuzzAppendEventJSON holds the fast encoder to encoding/json on any
// strings, valid UTF-8 or not.
func FuzzAppendEventJSON(f *testing.F) {
	f.Add("d", "t", "The loop \"x\"\n\u2028\xff", "text", "start", "", int64(5), false)
	f.Add("", "", "", "reasoning", "end", "id", int64(-1), true)
	f.Fuzz(func(t *testing.T, dialog, turn, text, block, phase, id string, seq int64, segment bool) {
		e := Event{Type: KindText, DialogID: dialog, TurnID: turn, Seq: seq, Text: text}
		if segment {
			e.Type, e.Segment = KindSegment, &Segment{Block: block, Phase: phase, ID: id}
		}
		got, ok := AppendEventJSON(nil, &e)
		if !ok {
			t.Fatal("no fast path for a text or segment event")
		}
		if want := stdEventJSON(t, &e); string(got) != want {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
		// An EventEncoder after another event, then again (its head kept).
		var enc EventEncoder
		enc.Append(nil, &Event{Type: KindText, DialogID: "other", Seq: 1, Text: "x"})
		for range 2 {
			got, ok := enc.Append(nil, &e)
			if want := stdEventJSON(t, &e); !ok || string(got) != want {
				t.Fatalf("EventEncoder:\n got %s\nwant %s", got, want)
			}
			e.Seq++
		}
	})
}

func stdSummaryJSON(t testing.TB, s *Summary) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func TestAppendSummaryJSON(t *testing.T) {
	v2 := "v2"
	score := 0.5
	sums := []Summary{
		{Type: "summary", Dialect: DialectAgentSmithy, Protocol: &v2, DialogID: `d"1`, TurnID: "t", Outcome: OutcomeCompleted,
			Text: "line with \"quotes\"\n<&> \u2028 \xff", Reasoning: "hmm,\"text\":\"\"",
			Citations:  []Citation{{Title: `,"text":"","reasoning":""`, Score: &score}},
			ToolCalls:  []ToolCall{{Name: "x", Args: json.RawMessage(`{"a": "<b>"}`)}},
			Changes:    []ChangeSummary{{ID: "c1", Path: "/p", Kind: ChangeModify, Status: "proposed"}},
			Violations: []Violation{}, TextTruncated: true},
		{Type: "summary", Outcome: OutcomeError},
		{},
		{Type: "summary", Text: strings.Repeat("é✓\xe2\x82 \"\u2028x\xff\x00", 5000), Reasoning: strings.Repeat("ab", 40000)},
	}
	for _, s := range sums {
		got, err := AppendSummaryJSON([]byte("x"), &s)
		if err != nil {
			t.Fatal(err)
		}
		want := stdSummaryJSON(t, &s)
		if string(got) != "x"+want {
			t.Errorf("\n got %s\nwant x%s", got, want)
		}
		checkWriteSummaryJSON(t, &s, want)
	}
}

// checkWriteSummaryJSON holds WriteSummaryJSON to want (encoding/json's
// bytes for s), with pieces of every small size so that cuts fall inside
// and around escapes and multi-byte sequences.
func checkWriteSummaryJSON(t *testing.T, s *Summary, want string) {
	t.Helper()
	for _, piece := range []int{1, 2, 3, 4, 5, 7, 64, summaryPiece} {
		var b bytes.Buffer
		if err := writeSummaryJSON(&b, s, piece); err != nil {
			t.Fatal(err)
		}
		if b.String() != want+"\n" {
			t.Fatalf("WriteSummaryJSON, pieces of %d bytes:\n got %s\nwant %s", piece, b.String(), want)
		}
	}
}

func FuzzAppendSummaryJSON(f *testing.F) {
	f.Add("d", "text \"q\"\n", "reasoning \xff", "title <&>")
	f.Fuzz(func(t *testing.T, dialog, text, reasoning, title string) {
		s := Summary{Type: "summary", DialogID: dialog, Outcome: OutcomeCompleted, Text: text, Reasoning: reasoning,
			Citations: []Citation{{Title: title}}}
		got, err := AppendSummaryJSON(nil, &s)
		if err != nil {
			t.Fatal(err)
		}
		want := stdSummaryJSON(t, &s)
		if string(got) != want {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
		checkWriteSummaryJSON(t, &s, want)
	})
}

// plainWord must agree with the byte table on every word, and notPlain and
// specialBits must mark exactly the first byte that needs a look: each byte
// value at each position among plain bytes, pairs of bytes (a borrow from
// one byte must not hide or fake another), and random words.
func TestPlainWord(t *testing.T) {
	plainBytes := func(w [8]byte) bool {
		for _, b := range w {
			if jsonSafeASCII[b] != '1' {
				return false
			}
		}
		return true
	}
	// The offset of the first byte the table does not pass, and of the
	// first '"', '\\' or control byte; 8 for none.
	first := func(w [8]byte, needsLook func(b byte) bool) int {
		for i, b := range w {
			if needsLook(b) {
				return i
			}
		}
		return 8
	}
	check := func(w [8]byte) {
		t.Helper()
		x := load64(string(w[:]), 0)
		if got, want := plainWord(x), plainBytes(w); got != want {
			t.Fatalf("plainWord(%q) = %v, the byte table says %v", w[:], got, want)
		}
		if got, want := firstMarked(notPlain(x)), first(w, func(b byte) bool { return jsonSafeASCII[b] != '1' }); got != want {
			t.Fatalf("notPlain(%q) marks byte %d first, the byte table says %d", w[:], got, want)
		}
		if got, want := firstMarked(specialBits(x)), first(w, func(b byte) bool { return b == '"' || b == '\\' || b < 0x20 }); got != want {
			t.Fatalf("specialBits(%q) marks byte %d first, want %d", w[:], got, want)
		}
	}
	for _, fill := range []byte{'a', ' ', '~', '!', '#', '[', ']'} {
		for i := range 8 {
			for b := range 256 {
				w := [8]byte{fill, fill, fill, fill, fill, fill, fill, fill}
				w[i] = byte(b)
				check(w)
				for j := i + 1; j < 8; j++ {
					for _, c := range []byte{0, 0x1f, 0x20, 0x21, '"', '\\', 0x7f, 0x80, 0xff} {
						w2 := w
						w2[j] = c
						check(w2)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		var w [8]byte
		for i := range w {
			w[i] = byte(rng.IntN(256))
			if rng.IntN(2) == 0 {
				w[i] = byte(0x20 + rng.IntN(0x60)) // mostly printable
			}
		}
		check(w)
	}
}
