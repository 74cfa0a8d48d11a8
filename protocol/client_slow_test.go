package protocol_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// An editor slow to read (emit blocked longer than the idle timeout) while
// the upstream keeps sending must not end the turn interrupted: the idle
// watchdog counts only the time spent waiting on the upstream. The answer
// is larger than the reader's buffers, so the upstream is still sending
// while emit blocks.
func TestChatSlowEmitIsNotIdle(t *testing.T) {
	const deltas = 2000 // about 2 MB
	var body strings.Builder
	pad := strings.Repeat("x", 1000)
	for i := range deltas {
		fmt.Fprintf(&body, "data: {\"dialog_id\": \"d1\", \"type\": \"chat\", \"content\": \"%d%s \"}\r\n\r\n", i, pad)
	}
	body.WriteString("data: {\"dialog_id\": \"d1\", \"type\": \"done\"}\r\n\r\n")
	tests := []struct {
		name string
		opts upstream.Options
	}{
		{"sse", upstream.Options{Replay: []byte(body.String()), ChunkSizes: []int{8 << 10}}},
		{"lifecycle", upstream.Options{Dialect: protocol.DialectLifecycle}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, base := startUpstream(t, tt.opts)
			c := protocol.NewClient(protocol.ClientConfig{BaseURL: base, Dialect: tt.opts.Dialect, IdleTimeout: 150 * time.Millisecond})
			defer c.Close()
			blocks := 3
			var last protocol.Event
			sum, err := c.Chat(context.Background(), protocol.ChatRequest{Message: "hello", TurnID: "t1"}, func(e protocol.Event) {
				last = e
				if e.Type == protocol.KindText && blocks > 0 {
					blocks--
					time.Sleep(400 * time.Millisecond) // well above the idle timeout
				}
			})
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if sum.Outcome != protocol.OutcomeCompleted {
				t.Fatalf("outcome %s (%s), want completed: the slow emit counted as upstream silence", sum.Outcome, last.TurnEnd.Reason)
			}
			if tt.name == "sse" && strings.Count(sum.Text, " ") != deltas {
				t.Errorf("text has %d deltas, want %d", strings.Count(sum.Text, " "), deltas)
			}
		})
	}
}
