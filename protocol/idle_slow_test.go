package protocol

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// The idle timeout of the slow-consumer tests and how long their emit
// blocks: well above scheduling noise on a loaded machine, and a block
// well above the timeout.
const (
	slowIdle  = 150 * time.Millisecond
	slowBlock = 400 * time.Millisecond
)

// slowEmit records events and blocks in the first n text deltas for d: an
// editor slow to read its notifications.
func slowEmit(evs *[]Event, n int, d time.Duration) func(Event) {
	return func(e Event) {
		*evs = append(*evs, e)
		if e.Type == KindText && n > 0 {
			n--
			time.Sleep(d)
		}
	}
}

// longV2 is an AgentSmithy v2 answer of n chat deltas of about 1 KiB each,
// ended by done.
func longV2(n int) string {
	var b strings.Builder
	pad := strings.Repeat("x", 1000)
	for i := range n {
		b.WriteString(v2(fmt.Sprintf(`"type": "chat", "content": "%d%s "}`, i, pad)))
	}
	b.WriteString(v2(`"type": "done"}`))
	return b.String()
}

// A consumer blocked in emit for longer than the idle timeout, while the
// upstream has bytes ready, is not a silent upstream: the turn completes.
func TestReadTurnSlowEmitIsNotIdle(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	answer := longV2(300)
	go func() {
		io.WriteString(pw, answer)
		pw.Close()
	}()
	var evs []Event
	sum := ReadTurn(context.Background(), pr, StreamOptions{TurnID: "t1", IdleTimeout: slowIdle}, slowEmit(&evs, 3, slowBlock))
	if sum.Outcome != OutcomeCompleted {
		t.Fatalf("outcome %s (%s), want completed: the slow emit counted as upstream silence", sum.Outcome, evs[len(evs)-1].TurnEnd.Reason)
	}
	if want := 300; strings.Count(sum.Text, " ") != want {
		t.Errorf("text has %d deltas, want %d", strings.Count(sum.Text, " "), want)
	}
	checkTurnInvariants(t, evs)
}
