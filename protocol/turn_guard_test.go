package protocol_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// TestTurnWithoutProgressEnds: keep-alive comments and a byte now and
// then keep the idle watchdog (which counts bytes) from ever firing, so
// before the progress timeout and the turn limit such a turn ran forever
// and held its dialog. Each now ends the turn interrupted, saying why.
func TestTurnWithoutProgressEnds(t *testing.T) {
	tests := []struct {
		name    string
		server  upstream.Options
		client  protocol.ClientConfig
		because string
	}{
		{"pings only", upstream.Options{Faults: []upstream.Fault{{Name: "pings-only", Arg: "0.05"}}},
			protocol.ClientConfig{IdleTimeout: 400 * time.Millisecond, ProgressTimeout: 1200 * time.Millisecond, TurnLimit: -1}, "no event for 1.2s"},
		{"pings only, lifecycle", upstream.Options{Dialect: protocol.DialectLifecycle, Faults: []upstream.Fault{{Name: "pings-only", Arg: "0.05"}}},
			protocol.ClientConfig{Dialect: protocol.DialectLifecycle, IdleTimeout: 5 * time.Second, ProgressTimeout: 1200 * time.Millisecond, TurnLimit: -1}, "no event for 1.2s"},
		{"a byte every 0.5 s", upstream.Options{Faults: []upstream.Fault{{Name: "drip", Arg: "0.5"}}},
			protocol.ClientConfig{IdleTimeout: 2 * time.Second, ProgressTimeout: 1500 * time.Millisecond, TurnLimit: -1}, "no event for 1.5s"},
		{"turn limit", upstream.Options{Faults: []upstream.Fault{{Name: "drip", Arg: "0.005"}}},
			protocol.ClientConfig{IdleTimeout: 2 * time.Second, ProgressTimeout: -1, TurnLimit: 1500 * time.Millisecond}, "turn limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, base := startUpstream(t, tt.server)
			cfg := tt.client
			cfg.BaseURL = base
			c := protocol.NewClient(cfg)
			defer c.Close()
			type result struct {
				sum *protocol.Summary
				evs []protocol.Event
				err error
			}
			// Registered after the upstream's cleanup, so it runs first: a
			// turn that never ends must not hold the server's Close.
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			done := make(chan result, 1)
			go func() {
				var evs []protocol.Event
				sum, err := c.Chat(ctx, protocol.ChatRequest{Message: "hello", TurnID: "t1"}, func(e protocol.Event) { evs = append(evs, e) })
				done <- result{sum, evs, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the turn never ended")
			}
			if r.err != nil {
				t.Fatalf("Chat: %v", r.err)
			}
			last := r.evs[len(r.evs)-1]
			if r.sum.Outcome != protocol.OutcomeInterrupted || last.Type != protocol.KindTurnEnd || !strings.Contains(last.TurnEnd.Reason, tt.because) {
				t.Errorf("outcome %s, last event %+v; want interrupted because of %q", r.sum.Outcome, last.TurnEnd, tt.because)
			}
			if len(r.evs) < 2 {
				t.Errorf("want the first event before the stall, got %d events", len(r.evs))
			}
		})
	}
}
