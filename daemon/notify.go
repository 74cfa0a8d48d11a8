package daemon

import (
	"log/slog"
	"sync"
)

// NotifyQueueLen bounds the notifications waiting for one Peer's Editor
// (docs/engine.md, "Notifications").
const NotifyQueueLen = 256

// mailbox delivers one Peer's notifications in order, on a goroutine of its
// own, so that an Editor that stops reading (its Notify blocks on a full
// pipe) holds up neither the turns nor the other Peers: the engine only
// ever appends to the queue.
//
// The queue is bounded by NotifyQueueLen. When it is full, a changeUpdated
// replaces the queued changeUpdated of the same change (the newest status
// is what the editor needs), else it is dropped and counted; a fileChanged
// is never dropped — a queued one for the same path makes it redundant, and
// otherwise it is queued beyond the bound (at most one per file).
type mailbox struct {
	ed  Editor
	log *slog.Logger

	mu      sync.Mutex
	q       []Notification
	closed  bool
	dropped int
	wake    chan struct{} // buffered 1
	quit    chan struct{} // closed by close
}

func newMailbox(ed Editor, log *slog.Logger) *mailbox {
	m := &mailbox{ed: ed, log: log, wake: make(chan struct{}, 1), quit: make(chan struct{})}
	go m.run()
	return m
}

// push queues n; it never blocks on the Editor.
func (m *mailbox) push(n Notification) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if len(m.q) >= NotifyQueueLen && m.coalesce(n) {
		return
	}
	m.q = append(m.q, n)
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// coalesce handles n on a full queue and reports whether it was absorbed
// (merged or dropped); false means queue it anyway. Called with mu held.
func (m *mailbox) coalesce(n Notification) bool {
	switch {
	case n.Kind == NoteChangeUpdated && n.Change != nil:
		for i, q := range m.q {
			if q.Kind == NoteChangeUpdated && q.Change != nil && q.Change.ID == n.Change.ID {
				m.q[i] = n
				return true
			}
		}
		m.dropped++
		if m.dropped == 1 || m.dropped%NotifyQueueLen == 0 {
			m.log.Warn("an editor is not reading its notifications; changeUpdated dropped (it can list the changes again)", "dropped", m.dropped, "change", n.Change.ID)
		}
		return true
	case n.Kind == NoteFileChanged:
		for _, q := range m.q {
			if q.Kind == NoteFileChanged && (q.Path == n.Path || q.Path == "") {
				return true
			}
		}
	}
	return false
}

func (m *mailbox) run() {
	for {
		select {
		case <-m.quit:
			return
		case <-m.wake:
		}
		for {
			m.mu.Lock()
			if m.closed || len(m.q) == 0 {
				m.mu.Unlock()
				break
			}
			n := m.q[0]
			m.q[0] = Notification{}
			m.q = m.q[1:]
			m.mu.Unlock()
			m.ed.Notify(n)
		}
	}
}

// close drops what is queued and stops the goroutine once a Notify in
// progress returns (a Notify blocked on a dead connection returns when the
// front closes it).
func (m *mailbox) close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	m.q = nil
	close(m.quit)
}
