package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/smith-dev/smith/protocol"
)

// Dialogs live in one of two places. An upstream with a dialog API
// (AgentSmithy v1/v2) owns them: the engine lists, creates and selects them
// there and only remembers which one is current. Every other upstream gets
// local dialogs: ids made here, kept in the state file with their messages
// (sent as history to dialects whose server keeps none; of a long answer
// only the beginning and the end are kept, see MaxHistoryAnswer).

// localDialog is a dialog smith keeps itself.
type localDialog struct {
	Dialog
	Messages []protocol.HistoryMessage `json:"messages"`
	// UpstreamID is the upstream's own name for the conversation when it
	// assigns one: a lifecycle session id, an oracle context_id. It is
	// learnt from the first turn and sent with the next ones.
	UpstreamID string `json:"upstreamId,omitempty"`
}

func newDialogID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// turnDialog resolves the dialog of a turn: the requested one, else the
// current one, else a new one (created upstream when the upstream has a
// dialog API, so that its id is known before the stream). It returns ""
// only when the upstream has a dialog API that failed to answer: the turn
// then learns its dialog from the stream's first event.
func (e *Engine) turnDialog(ctx context.Context, requested string) (string, error) {
	switch e.dialogMode(ctx) {
	case modeUnknown:
		// The upstream did not answer; the turn will most likely fail the
		// same way. Do not invent a local dialog for a server that may have
		// its own: learn the id from the stream, if any.
		if requested == "" {
			e.dr.mu.Lock()
			requested = e.dr.st.CurrentDialog
			e.dr.mu.Unlock()
		}
		return requested, nil
	case modeUpstream:
		if requested != "" {
			return e.resolveDialog(ctx, requested)
		}
		e.dr.mu.Lock()
		cur := e.dr.st.CurrentDialog
		e.dr.mu.Unlock()
		if cur != "" {
			return cur, nil
		}
		id, err := e.upstreamCurrentOrNew(ctx)
		if err != nil {
			e.log.Warn("no dialog id before the stream; learning it from the first event", "err", err)
			return "", nil
		}
		e.setCurrent(id)
		return id, nil
	}
	if requested != "" {
		return e.resolveDialog(ctx, requested)
	}
	e.dr.mu.Lock()
	defer e.dr.mu.Unlock()
	if cur := e.dr.st.CurrentDialog; cur != "" && e.dr.localDialog(cur) != nil {
		return cur, nil
	}
	d := e.dr.newLocalDialog("")
	return d.ID, nil
}

func (e *Engine) setCurrent(id string) {
	if err := e.dr.setCurrent(id); err != nil {
		e.log.Error("save state", "err", err)
	}
}

// localTurn returns what a turn in local dialog id sends upstream: the
// earlier messages and the upstream's id of the conversation. ok is false
// when id is not a local dialog.
func (e *Engine) localTurn(id string) (history []protocol.HistoryMessage, upstreamID string, ok bool) {
	e.dr.mu.Lock()
	defer e.dr.mu.Unlock()
	d := e.dr.localDialog(id)
	if d == nil {
		return nil, "", false
	}
	return slices.Clone(d.Messages), d.UpstreamID, true
}

// learnUpstreamID remembers the upstream's id of local dialog id.
func (e *Engine) learnUpstreamID(id, upstreamID string) {
	e.dr.mu.Lock()
	defer e.dr.mu.Unlock()
	if d := e.dr.localDialog(id); d != nil && upstreamID != "" && upstreamID != id {
		d.UpstreamID = upstreamID
	}
}

// recordLocalTurn appends a finished turn to a local dialog.
func (e *Engine) recordLocalTurn(id, message, answer string) {
	e.dr.mu.Lock()
	defer e.dr.mu.Unlock()
	d := e.dr.localDialog(id)
	if d == nil {
		return
	}
	d.Messages = append(d.Messages, protocol.HistoryMessage{Role: "user", Content: message})
	if answer != "" {
		d.Messages = append(d.Messages, protocol.HistoryMessage{Role: "assistant", Content: historyAnswer(answer)})
	}
	d.UpdatedAt = now()
}

// MaxHistoryAnswer bounds, in bytes, what a local dialog keeps of one
// assistant answer. The answer went to the front in full as the turn
// streamed; the dialog keeps it only to send as history to servers that
// keep none, and a long answer kept whole would be written to the state
// file on every save and held in memory for the engine's life.
const MaxHistoryAnswer = 16 << 10

// historyAnswer is answer as a local dialog keeps it: whole when short,
// else its beginning and its end (half of MaxHistoryAnswer each, cut at
// UTF-8 boundaries) around a note saying how much was left out. The result
// is a new string, so that the whole answer is not kept alive by it.
func historyAnswer(answer string) string {
	if len(answer) <= MaxHistoryAnswer {
		return answer
	}
	half := MaxHistoryAnswer / 2
	head := answer[:half]
	for len(head) > 0 && !utf8.RuneStart(answer[len(head)]) {
		head = head[:len(head)-1]
	}
	tail := answer[len(answer)-half:]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s\n[… %d bytes of this answer left out by smith …]\n%s", head, len(answer)-len(head)-len(tail), tail)
}

// Dialogs lists dialogs: the upstream's when it has a dialog API
// (AgentSmithy), else smith's local ones, most recently updated first.
func (e *Engine) Dialogs(ctx context.Context) (_ []Dialog, err error) {
	defer wrapUpstream(&err)
	var ds []Dialog
	if e.dialogMode(ctx) != modeLocal {
		var err error
		if ds, err = e.upstreamDialogs(ctx); err != nil {
			return nil, err
		}
	} else {
		e.dr.mu.Lock()
		for _, d := range e.dr.st.Dialogs {
			ds = append(ds, d.Dialog)
		}
		e.dr.mu.Unlock()
		slices.SortStableFunc(ds, func(a, b Dialog) int { return -compareStrings(a.UpdatedAt, b.UpdatedAt) })
	}
	e.dr.mu.Lock()
	for i := range ds {
		ds[i].Current = ds[i].ID == e.dr.st.CurrentDialog
		_, ds[i].Busy = e.dr.busy[ds[i].ID]
	}
	e.dr.mu.Unlock()
	return ds, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// NewDialog creates a dialog and makes it current.
func (e *Engine) NewDialog(ctx context.Context, title string) (_ Dialog, err error) {
	defer wrapUpstream(&err)
	if e.dialogMode(ctx) != modeLocal {
		d, err := e.upstreamNewDialog(ctx, title)
		if err != nil {
			return Dialog{}, err
		}
		e.setCurrent(d.ID)
		d.Current = true
		return d, nil
	}
	e.dr.mu.Lock()
	d := e.dr.newLocalDialog(title)
	err = e.dr.saveLocked()
	e.dr.mu.Unlock()
	out := d.Dialog
	out.Current = true
	return out, err
}

// SelectDialog makes id the current dialog.
func (e *Engine) SelectDialog(ctx context.Context, id string) (err error) {
	defer wrapUpstream(&err)
	if id, err = e.resolveDialog(ctx, id); err != nil {
		return err
	}
	if e.dialogMode(ctx) != modeLocal {
		if err := e.upstreamSelectDialog(ctx, id); err != nil {
			return err
		}
		e.setCurrent(id)
		return nil
	}
	e.dr.mu.Lock()
	defer e.dr.mu.Unlock()
	if e.dr.localDialog(id) == nil {
		return fmt.Errorf("%w: %s", ErrUnknownDialog, id)
	}
	e.dr.st.CurrentDialog = id
	return e.dr.saveLocked()
}

// RenameDialog sets a dialog's title.
func (e *Engine) RenameDialog(ctx context.Context, id, title string) (err error) {
	defer wrapUpstream(&err)
	// Resolved before anything is sent: the server creates a dialog for
	// an unknown id on PATCH.
	if id, err = e.resolveDialog(ctx, id); err != nil {
		return err
	}
	if e.dialogMode(ctx) != modeLocal {
		return e.upstreamRenameDialog(ctx, id, title)
	}
	e.dr.mu.Lock()
	defer e.dr.mu.Unlock()
	d := e.dr.localDialog(id)
	if d == nil {
		return fmt.Errorf("%w: %s", ErrUnknownDialog, id)
	}
	d.Title, d.UpdatedAt = title, now()
	return e.dr.saveLocked()
}

// DeleteDialog deletes a dialog (refused with ErrDialogBusy while a turn
// runs in it). The changes recorded for it stay in the journal: undo must
// keep working.
func (e *Engine) DeleteDialog(ctx context.Context, id string) (err error) {
	defer wrapUpstream(&err)
	if id, err = e.resolveDialog(ctx, id); err != nil {
		return err
	}
	e.dr.mu.Lock()
	_, busy := e.dr.busy[id]
	e.dr.mu.Unlock()
	if busy {
		return Errorf(ErrDialogBusy, "cannot delete dialog %s while a turn runs in it (cancel the turn first)", id)
	}
	if e.dialogMode(ctx) != modeLocal {
		if err := e.upstreamDeleteDialog(ctx, id); err != nil {
			return err
		}
		e.dr.mu.Lock()
		if e.dr.st.CurrentDialog == id {
			e.dr.st.CurrentDialog = ""
		}
		err := e.dr.saveLocked()
		e.dr.mu.Unlock()
		return err
	}
	e.dr.mu.Lock()
	defer e.dr.mu.Unlock()
	i := slices.IndexFunc(e.dr.st.Dialogs, func(d *localDialog) bool { return d.ID == id })
	if i < 0 {
		return fmt.Errorf("%w: %s", ErrUnknownDialog, id)
	}
	e.dr.st.Dialogs = slices.Delete(e.dr.st.Dialogs, i, i+1)
	if e.dr.st.CurrentDialog == id {
		e.dr.st.CurrentDialog = ""
	}
	return e.dr.saveLocked()
}

// History returns a page of a dialog's history, newest last. before < 0
// means the latest page. AgentSmithy's page is returned as it comes; a
// local dialog's has the same shape with "user" and "chat" events.
func (e *Engine) History(ctx context.Context, id string, limit, before int) (_ *protocol.HistoryPage, err error) {
	defer wrapUpstream(&err)
	if limit <= 0 {
		limit = 20
	}
	if id, err = e.resolveDialog(ctx, id); err != nil {
		return nil, err
	}
	if e.dialogMode(ctx) != modeLocal {
		return e.upstreamHistory(ctx, id, limit, before)
	}
	e.dr.mu.Lock()
	d := e.dr.localDialog(id)
	var msgs []protocol.HistoryMessage
	if d != nil {
		msgs = slices.Clone(d.Messages)
	}
	e.dr.mu.Unlock()
	if d == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownDialog, id)
	}
	return localHistoryPage(id, msgs, limit, before)
}

func localHistoryPage(id string, msgs []protocol.HistoryMessage, limit, before int) (*protocol.HistoryPage, error) {
	end := len(msgs)
	if before >= 0 && before < end {
		end = before
	}
	start := max(0, end-limit)
	p := &protocol.HistoryPage{DialogID: id, Events: []protocol.HistoryEvent{}, TotalEvents: len(msgs), HasMore: start > 0}
	for i := start; i < end; i++ {
		typ := "chat"
		if msgs[i].Role == "user" {
			typ = "user"
		}
		p.Events = append(p.Events, protocol.HistoryEvent{Type: typ, Idx: &i, Content: msgs[i].Content})
	}
	if len(p.Events) > 0 {
		p.FirstIdx, p.LastIdx = start, end-1
	}
	return p, nil
}
