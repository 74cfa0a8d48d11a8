package protocol

import (
	"context"
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
