package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// noEditor is an Editor without buffers, to embed.
type noEditor struct{}

func (noEditor) Document(string) ([]byte, int32, bool) { return nil, 0, false }
func (noEditor) ApplyEdit(context.Context, string, []FileEdit) error {
	return errors.New("no editor attached")
}
func (noEditor) Notify(Notification) {}

// stalledEditor is an editor that has stopped reading: every Notify blocks
// until release is closed.
type stalledEditor struct {
	noEditor
	release chan struct{}
	mu      sync.Mutex
	notes   []Notification
}

func (ed *stalledEditor) Notify(n Notification) {
	<-ed.release
	ed.mu.Lock()
	ed.notes = append(ed.notes, n)
	ed.mu.Unlock()
}

func (ed *stalledEditor) notifications() []Notification {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	return slices.Clone(ed.notes)
}

// TestStalledEditorBlocksNoOne: one attached editor stops reading its
// notifications; another one's turns and applies go on, and it gets its
// notifications. When the first reads again, it gets them too, in order.
func TestStalledEditorBlocksNoOne(t *testing.T) {
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo}})
	stalled := &stalledEditor{release: make(chan struct{})}
	f.e.Attach(stalled)
	ed := newTestEditor()
	p := f.e.Attach(ed)

	done := make(chan error, 1)
	var id string
	go func() {
		res, _, err := f.chat(context.Background(), p, ChatRequest{Message: "rename Foo to Bar in main.go"})
		if err == nil && len(res.Changes) != 1 {
			err = fmt.Errorf("turn %s with changes %v, want one", res.Outcome, res.Changes)
		}
		if err == nil {
			id = res.Changes[0]
			_, err = f.e.Apply(WithPeer(context.Background(), p), id, nil)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(stalled.release)
		t.Fatal("a turn and an apply of one editor waited for another editor that does not read")
	}
	waitFor(t, "changeUpdated applied for the editor that reads", func() bool {
		return slices.ContainsFunc(ed.notifications(), func(n Notification) bool {
			return n.Kind == NoteChangeUpdated && n.Change.ID == id && n.Change.Status == StatusApplied
		})
	})
	close(stalled.release)
	waitFor(t, "the stalled editor catching up", func() bool {
		notes := stalled.notifications()
		return len(notes) > 0 && notes[len(notes)-1].Kind == NoteFileChanged
	})
	var kinds []string
	for _, n := range stalled.notifications() {
		kinds = append(kinds, n.Kind)
	}
	// proposed (pending), applied, then the file written behind it.
	if want := []string{NoteChangeUpdated, NoteChangeUpdated, NoteFileChanged}; !slices.Equal(kinds, want) {
		t.Errorf("the stalled editor got %v, want %v", kinds, want)
	}
}

// TestMailboxFull: a peer that does not read gets at most NotifyQueueLen
// queued notifications; past that, changeUpdated is coalesced per change
// (the newest status kept, in the older one's place) or dropped, and
// fileChanged is never dropped (one per path).
func TestMailboxFull(t *testing.T) {
	ed := &stalledEditor{release: make(chan struct{})}
	m := newMailbox(ed, slog.New(slog.DiscardHandler))
	defer m.close()
	cu := func(id, status string) Notification {
		return Notification{Kind: NoteChangeUpdated, Change: &Change{ID: id, Status: status}}
	}
	m.push(cu("first", StatusPending)) // taken by the delivery goroutine, which then blocks
	waitFor(t, "the first notification in delivery", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.q) == 0
	})
	for i := range NotifyQueueLen {
		m.push(cu(fmt.Sprintf("c%d", i), StatusPending))
	}
	m.push(cu("c7", StatusConflict))                             // full: replaces c7's queued update
	m.push(cu("new", StatusPending))                             // full: dropped
	m.push(Notification{Kind: NoteFileChanged, Path: "/w/a.go"}) // never dropped
	m.push(Notification{Kind: NoteFileChanged, Path: "/w/a.go"}) // already queued
	m.push(Notification{Kind: NoteFileChanged, Path: "/w/b.go"})
	close(ed.release)
	want := 1 + NotifyQueueLen + 2
	waitFor(t, "every queued notification", func() bool { return len(ed.notifications()) >= want })
	got := ed.notifications()
	if len(got) != want {
		t.Fatalf("%d notifications delivered, want %d", len(got), want)
	}
	if c := got[1+7].Change; c.ID != "c7" || c.Status != StatusConflict {
		t.Errorf("c7's update: %+v, want its newest status (conflict) in its place", c)
	}
	if slices.ContainsFunc(got, func(n Notification) bool { return n.Change != nil && n.Change.ID == "new" }) {
		t.Error("an update past the bound was queued")
	}
	if tail := got[len(got)-2:]; tail[0].Path != "/w/a.go" || tail[1].Path != "/w/b.go" {
		t.Errorf("fileChanged delivered: %+v, want a.go then b.go", tail)
	}
}
