package protocol

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
)

// MaxText bounds the summary's text (cut at a UTF-8 boundary) while the
// events carry every delta.
func TestReadTurnMaxText(t *testing.T) {
	in := v2(`"type": "chat", "content": "ab"}`) + v2(`"type": "chat", "content": "cdé"}`) + v2(`"type": "chat", "content": "fg"}`) + v2(`"type": "done"}`)
	tests := []struct {
		max       int
		text      string
		truncated bool
	}{
		{0, "abcdéfg", false},
		{100, "abcdéfg", false},
		{8, "abcdéfg", false}, // exactly the 8 bytes
		{5, "abcd", true},     // é would be cut in half
		{6, "abcdé", true},
		{1, "a", true},
	}
	for _, tt := range tests {
		var evs []Event
		sum := ReadTurn(context.Background(), strings.NewReader(in), StreamOptions{TurnID: "t1", IdleTimeout: -1, MaxText: tt.max}, record(&evs))
		if sum.Text != tt.text || sum.TextTruncated != tt.truncated {
			t.Errorf("MaxText %d: text %q truncated %v, want %q %v", tt.max, sum.Text, sum.TextTruncated, tt.text, tt.truncated)
		}
		var streamed strings.Builder
		for _, e := range evs {
			if e.Type == KindText {
				streamed.WriteString(e.Text)
			}
		}
		if streamed.String() != "abcdéfg" {
			t.Errorf("MaxText %d: events carried %q, want every delta", tt.max, streamed.String())
		}
	}
}

// textBuf gives back exactly what was written, over writes of every size
// (empty, within a chunk, across chunks, larger than a chunk).
func TestTextBuf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var b textBuf
	var want strings.Builder
	if b.String() != "" || b.Len() != 0 {
		t.Fatalf("empty textBuf: %q, %d", b.String(), b.Len())
	}
	for i := range 3000 {
		n := rng.IntN(40)
		if i%500 == 0 {
			n = rng.IntN(3 * textChunk)
		}
		s := strings.Repeat(string(rune('a'+i%26)), n)
		b.WriteString(s)
		want.WriteString(s)
		if b.Len() != want.Len() {
			t.Fatalf("after %d writes: Len %d, want %d", i+1, b.Len(), want.Len())
		}
	}
	if b.String() != want.String() {
		t.Fatalf("String differs from the bytes written (%d bytes, want %d)", len(b.String()), want.Len())
	}
}
