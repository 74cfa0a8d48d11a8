package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/smith-dev/smith/protocol"
)

// stalledTurn starts a turn that stalls after its first event and returns
// once that event arrived; cancel ends it, and done yields its result.
func stalledTurn(t *testing.T, f *fixture, p *Peer, dialog string) (cancel func(), done <-chan error) {
	t.Helper()
	ctx, cancelCtx := context.WithCancel(withFault(context.Background(), "stall=60"))
	first := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		seen := false
		_, err := f.e.Chat(WithPeer(ctx, p), ChatRequest{DialogID: dialog, Message: "hello there"}, func(protocol.Event) {
			if !seen {
				seen = true
				close(first)
			}
		})
		if !seen {
			close(first)
		}
		errc <- err
	}()
	<-first
	return cancelCtx, errc
}

func TestDialogBusy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2"})
	p := f.e.Attach(nil)
	q := f.e.Attach(nil)
	d, err := f.e.NewDialog(context.Background(), "busy")
	if err != nil {
		t.Fatal(err)
	}
	cancel, done := stalledTurn(t, f, p, d.ID)

	// Another peer, same dialog: refused at once, no event emitted.
	_, evs, err := f.chat(context.Background(), q, ChatRequest{DialogID: d.ID, Message: "me too"})
	if !errors.Is(err, ErrDialogBusy) || len(evs) != 0 {
		t.Fatalf("second turn in a busy dialog: %v (%d events), want ErrDialogBusy", err, len(evs))
	}
	// The current dialog (no id given) is the busy one too.
	if _, _, err := f.chat(context.Background(), q, ChatRequest{Message: "me too"}); !errors.Is(err, ErrDialogBusy) {
		t.Fatalf("turn in the current (busy) dialog: %v, want ErrDialogBusy", err)
	}
	ds, err := f.e.Dialogs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	busy := false
	for _, x := range ds {
		busy = busy || (x.ID == d.ID && x.Busy && x.Current)
	}
	if !busy {
		t.Fatalf("dialog list does not show %s busy and current: %+v", d.ID, ds)
	}
	if err := f.e.DeleteDialog(context.Background(), d.ID); !errors.Is(err, ErrDialogBusy) {
		t.Fatalf("deleting a busy dialog: %v", err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("cancelled turn: %v", err)
	}
	// The lock is released: the dialog serves the next turn.
	if _, _, err := f.chat(context.Background(), q, ChatRequest{DialogID: d.ID, Message: "me too"}); err != nil {
		t.Fatalf("turn after the busy one ended: %v", err)
	}
}

func TestTooManyTurnsPerPeer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2"})
	p := f.e.Attach(nil)
	var cancels []func()
	var dones []<-chan error
	for range DefaultMaxTurns {
		d, err := f.e.NewDialog(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		c, done := stalledTurn(t, f, p, d.ID)
		cancels, dones = append(cancels, c), append(dones, done)
	}
	d, err := f.e.NewDialog(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.chat(context.Background(), p, ChatRequest{DialogID: d.ID, Message: "one more"}); !errors.Is(err, ErrTooManyTurns) {
		t.Fatalf("fourth turn: %v, want ErrTooManyTurns", err)
	}
	// The limit is per peer: another front may still chat.
	other := f.e.Attach(nil)
	if _, _, err := f.chat(context.Background(), other, ChatRequest{DialogID: d.ID, Message: "one more"}); err != nil {
		t.Fatalf("another peer: %v", err)
	}
	// Detach cancels the peer's turns.
	f.e.Detach(p)
	for _, done := range dones {
		if err := <-done; err != nil {
			t.Fatalf("detached turn: %v", err)
		}
	}
	for _, c := range cancels {
		c()
	}
}

func TestUpstreamFailuresEndTheTurnAndTheEngineGoesOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2", mutate: func(c *Config) { c.IdleTimeout = 300 * time.Millisecond }})
	p := f.e.Attach(nil)
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		outcome protocol.Outcome
		wantErr error // nil: the turn started, its outcome tells
	}{
		{"refused", context.WithValue(context.Background(), refuseKey{}, true), protocol.OutcomeError, protocol.ErrUnreachable},
		{"http 500", withFault(context.Background(), "http-500"), protocol.OutcomeError, errAny},
		{"cut mid-event", withFault(context.Background(), "cut-mid-event"), protocol.OutcomeInterrupted, nil},
		{"stalled", withFault(context.Background(), "stall=30"), protocol.OutcomeInterrupted, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, evs, err := f.chat(tc.ctx, p, ChatRequest{Message: "hello there"})
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr == errAny && err == nil, tc.wantErr != nil && tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if res == nil || res.Outcome != tc.outcome {
				t.Fatalf("result %+v, want outcome %s", res, tc.outcome)
			}
			last := evs[len(evs)-1]
			if last.Type != protocol.KindTurnEnd || last.TurnEnd.Outcome != tc.outcome {
				t.Fatalf("last event %+v, want turnEnd %s", last, tc.outcome)
			}
			if tc.outcome == protocol.OutcomeError && !hasKind(evs, protocol.KindError) {
				t.Fatalf("no error event before turnEnd: %+v", evs)
			}
			// The engine serves the next turn.
			next, _, err := f.chat(context.Background(), p, ChatRequest{Message: "hello there"})
			if err != nil || next.Outcome != protocol.OutcomeCompleted {
				t.Fatalf("next turn: %v %+v", err, next)
			}
		})
	}
}

var errAny = errors.New("any error")

func hasKind(evs []protocol.Event, k protocol.Kind) bool {
	for _, ev := range evs {
		if ev.Type == k {
			return true
		}
	}
	return false
}
