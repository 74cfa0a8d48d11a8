package editor

import (
	"testing"

	"github.com/smith-dev/smith/protocol"
)

// TestEventParamsMatchCodec: the fast encoding of text and reasoning
// deltas is byte for byte what the codec writes, for the strings that
// make JSON quoting interesting; other events are left to the codec.
func TestEventParamsMatchCodec(t *testing.T) {
	texts := []string{"", "Hel", "a \"quoted\" \\ back\\slash", "tab\tnew\nline\r\x00\x1f\x7f", "<html>&amp;</html>",
		"caf\xe9 invalid", "\xff\xfe", "日本語 ✓ 😀", "\u2028\u2029", "\xed\xa0\x80 surrogate"}
	var buf []byte
	for _, kind := range []protocol.Kind{protocol.KindText, protocol.KindReasoning} {
		for _, text := range texts {
			for _, ids := range [][2]string{{"d1", "t1"}, {"", ""}, {"dé\"", "t\n"}} {
				ev := protocol.Event{Type: kind, DialogID: ids[0], TurnID: ids[1], Seq: 1 << 40, Text: text}
				p := &EventParams{DialogID: ids[0], TurnID: ids[1], Seq: ev.Seq, Event: ev}
				want, err := (codec{}).Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				got, ok := eventParams(buf, p)
				if !ok {
					t.Fatalf("%s %q: not taken by the fast path", kind, text)
				}
				buf = got
				if string(got) != string(want) {
					t.Errorf("%s %q:\n got %s\nwant %s", kind, text, got, want)
				}
			}
		}
	}
	for _, ev := range []protocol.Event{
		{Type: protocol.KindTurnEnd, TurnEnd: &protocol.TurnEnd{Outcome: protocol.OutcomeCompleted}},
		{Type: protocol.KindText, Text: "x", Raw: []byte(`{}`)},
		{Type: protocol.KindSegment, Segment: &protocol.Segment{Block: "text", Phase: "start"}},
	} {
		if _, ok := eventParams(nil, &EventParams{Event: ev}); ok {
			t.Errorf("%+v took the fast path", ev)
		}
	}
}
