package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/smith-dev/smith/protocol"
)

func TestHistoryAnswer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", MaxHistoryAnswer) // 2 bytes a rune: cuts fall inside runes
	tests := []struct {
		name   string
		answer string
		whole  bool
	}{
		{"empty", "", true},
		{"short", "a short answer", true},
		{"at the bound", strings.Repeat("x", MaxHistoryAnswer), true},
		{"long ascii", "BEGIN" + strings.Repeat("x", 3*MaxHistoryAnswer) + "END", false},
		{"long multibyte", "BEGIN" + long + "x" + long + "END", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := historyAnswer(tt.answer)
			if tt.whole {
				if got != tt.answer {
					t.Fatalf("a short answer was changed")
				}
				return
			}
			if len(got) > MaxHistoryAnswer+100 || !utf8.ValidString(got) {
				t.Fatalf("kept %d bytes (valid UTF-8: %v), want about %d", len(got), utf8.ValidString(got), MaxHistoryAnswer)
			}
			if !strings.HasPrefix(got, "BEGIN") || !strings.HasSuffix(got, "END") || !strings.Contains(got, "bytes of this answer left out by smith") {
				t.Fatalf("kept %q…%q, want the beginning, a note and the end", got[:20], got[len(got)-20:])
			}
			// The note counts exactly what was left out.
			var left int
			i := strings.Index(got, "\n[… ")
			fmt.Sscanf(got[i+len("\n[… "):], "%d", &left)
			if kept := len(got) - len(got[i:strings.Index(got, "…]\n")+len("…]\n")]); kept+left != len(tt.answer) {
				t.Errorf("kept %d + left out %d bytes, want %d", kept, left, len(tt.answer))
			}
		})
	}
}

// TestLongAnswerStateStaysSmall: a 1.2 MB answer on a dialect whose server
// keeps no history goes to the front whole, but the state file keeps a
// bounded part of it (and the next turn sends that part as history).
func TestLongAnswerStateStaysSmall(t *testing.T) {
	t.Parallel()
	const n = 20000 // about 1.2 MB of text
	var body strings.Builder
	for i := range n {
		fmt.Fprintf(&body, "data: {\"type\":\"delta\",\"content\":\"%06d lorem ipsum dolor sit amet, consectetur adipiscing elit \"}\n\n", i)
	}
	body.WriteString("data: {\"type\":\"done\",\"citations\":[]}\n\n")
	e := textbookEngine(t, []byte(body.String()))
	p := e.Attach(nil)
	var streamed strings.Builder
	res, err := e.Chat(WithPeer(context.Background(), p), ChatRequest{Message: "tell me everything"}, func(ev protocol.Event) {
		if ev.Type == protocol.KindText {
			streamed.WriteString(ev.Text)
		}
	})
	if err != nil || res.Outcome != protocol.OutcomeCompleted {
		t.Fatalf("chat: %v, %+v", err, res)
	}
	if streamed.Len() < n*50 || res.Text != streamed.String() {
		t.Fatalf("streamed %d bytes, result %d: want the whole answer in both", streamed.Len(), len(res.Text))
	}
	st, err := os.Stat(filepath.Join(e.StateDir(), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 4*MaxHistoryAnswer {
		t.Errorf("state.json is %d bytes after a %d-byte answer, want it bounded (about %d)", st.Size(), len(res.Text), MaxHistoryAnswer)
	}
	e.mu.Lock()
	msgs := e.dr.localDialog(res.DialogID).Messages
	e.mu.Unlock()
	if len(msgs) != 2 || msgs[1].Role != "assistant" || !strings.HasPrefix(msgs[1].Content, "000000 lorem") || !strings.HasSuffix(msgs[1].Content, fmt.Sprintf("%06d lorem ipsum dolor sit amet, consectetur adipiscing elit ", n-1)) {
		t.Errorf("the dialog keeps %d messages; the answer's beginning and end should be kept", len(msgs))
	}
}
