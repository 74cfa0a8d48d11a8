package acp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// Prompt runs one smith turn. The turn runs on the connection's context,
// not the request's: the SDK cancels a session's running prompt when a
// second prompt arrives, and smith refuses the second one instead. After
// session/cancel the answer is always exactly one stopReason "cancelled",
// whatever the turn or an open permission request was doing.
func (a *agent) Prompt(_ context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	msg, cctx, err := a.promptMessage(p.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	ctx, cancel := context.WithCancel(a.ctx)
	defer cancel()
	r := &run{cancel: cancel, seq: promptSeq(p.Meta)}
	s.mu.Lock()
	if s.run != nil {
		s.mu.Unlock()
		return sdk.PromptResponse{}, invalidRequest("session %s is already running a prompt; smith runs one prompt per session at a time: wait for its stopReason, or send session/cancel first", s.id)
	}
	s.run = r
	s.mu.Unlock()
	if r.seq > 0 && r.seq <= a.cancelledUpTo(s.id) {
		// The cancel was read after this prompt but handled before it
		// started: nothing runs.
		s.mu.Lock()
		s.run = nil
		s.mu.Unlock()
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	a.turns.Add(1)
	a.asking.open()
	defer func() {
		// The stopReason goes after the answers to every fs/* request
		// sent meanwhile, also the engine's own (its watcher's): a client
		// may close at end_turn.
		a.asking.shut()
		s.mu.Lock()
		s.run = nil
		s.mu.Unlock()
		a.turns.Done()
	}()
	a.mu.Lock()
	a.fsSession = s.id
	a.mu.Unlock()
	a.sendCommands(s)

	var stop sdk.StopReason
	if name, arg, ok := slashCommand(msg); ok {
		stop, err = a.command(ctx, s, name, arg)
	} else {
		stop, err = a.turn(ctx, s, msg, cctx)
	}
	s.mu.Lock()
	cancelled := r.cancelled
	s.mu.Unlock()
	if cancelled {
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	return sdk.PromptResponse{StopReason: stop}, nil
}

// turn runs the engine's Chat and maps its events (see docs/acp.md).
func (a *agent) turn(ctx context.Context, s *session, msg string, cctx *protocol.ChatContext) (sdk.StopReason, error) {
	if _, err := a.engine(ctx, s.cwd); err != nil {
		return "", err // the joined serve stopped, and the engine cannot be opened again
	}
	t := newTurnMapper(a, s, ctx)
	go t.work()
	emit, drained := t.emit, func() {}
	if a.joined {
		// The joined serve's events arrive on its connection's read
		// loop, which must go on reading: the answers to the calls made
		// for them (Changes, Preview) arrive there too.
		emit, drained = inOrder(t.emit)
	}
	res, err := a.eng.Chat(daemon.WithPeer(ctx, a.peer), daemon.ChatRequest{DialogID: s.id, Message: msg, Context: cctx}, emit)
	drained()
	if res != nil {
		t.turnID = res.TurnID
		t.scan()
		t.endTools(res.Outcome)
	}
	t.done()
	if res == nil && err != nil {
		return "", turnError(err)
	}
	if err != nil && !t.errorShown {
		t.text("\n\n**smith:** " + err.Error() + "\n")
	}
	return sdk.StopReasonEndTurn, nil
}

// turnError maps an engine refusal to start a turn.
func turnError(err error) error {
	switch {
	case errors.Is(err, daemon.ErrDialogBusy), errors.Is(err, daemon.ErrTooManyTurns):
		return invalidRequest("%v", err)
	case errors.Is(err, daemon.ErrMessageTooLong), errors.Is(err, daemon.ErrEmptyMessage), errors.Is(err, daemon.ErrUnknownDialog):
		return invalidParams("%v", err)
	}
	return internalError(err)
}

// promptMessage turns the prompt's content into the message and the chat
// context: text as it is; a resource link or an embedded resource as the
// file's workspace-relative path in the message, the first file also as
// the upstream's current_file (an embedded resource with its text, which
// may be an unsaved buffer; a link with the text the client or the disk
// has). A file outside the workspace is refused: smith sends the agent
// nothing from outside it.
func (a *agent) promptMessage(blocks []sdk.ContentBlock) (string, *protocol.ChatContext, error) {
	var b strings.Builder
	var cctx *protocol.ChatContext
	put := func(s string) {
		if b.Len() > 0 && s != "" {
			last := []rune(b.String())
			if !unicode.IsSpace(last[len(last)-1]) && !unicode.IsSpace([]rune(s)[0]) {
				b.WriteByte(' ')
			}
		}
		b.WriteString(s)
	}
	file := func(uri, name string, text *string) error {
		path, ok := fileURI(uri)
		if !ok {
			put(name)
			return nil
		}
		if _, err := a.confine(path); err != nil {
			return invalidParams("the prompt names %s, which smith does not send to the agent: %v (the workspace is %s)", path, err, a.eng.Workspace())
		}
		rel, _ := filepath.Rel(a.eng.Workspace(), path)
		put(filepath.ToSlash(rel))
		if cctx != nil {
			return nil
		}
		cf := &protocol.CurrentFile{Path: path}
		if text != nil {
			cf.Content = *text
		} else if t, _, open := (&fsEditor{a: a}).Document(path); open {
			cf.Content = string(t)
		} else if d, err := os.ReadFile(path); err == nil {
			cf.Content = string(d)
		}
		cctx = &protocol.ChatContext{CurrentFile: cf}
		return nil
	}
	for i, c := range blocks {
		switch {
		case c.Text != nil:
			put(c.Text.Text)
		case c.ResourceLink != nil:
			if err := file(c.ResourceLink.Uri, c.ResourceLink.Name, nil); err != nil {
				return "", nil, err
			}
		case c.Resource != nil:
			res := c.Resource.Resource
			switch {
			case res.TextResourceContents != nil:
				if err := file(res.TextResourceContents.Uri, res.TextResourceContents.Uri, &res.TextResourceContents.Text); err != nil {
					return "", nil, err
				}
			case res.BlobResourceContents != nil:
				return "", nil, invalidParams("prompt block %d is a binary resource (%s); smith sends text only", i, res.BlobResourceContents.Uri)
			}
		case c.Image != nil:
			return "", nil, invalidParams("prompt block %d is an image; smith does not take images (promptCapabilities.image is false)", i)
		case c.Audio != nil:
			return "", nil, invalidParams("prompt block %d is audio; smith does not take audio (promptCapabilities.audio is false)", i)
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", nil, invalidParams("the prompt has no text: type a message")
	}
	return b.String(), cctx, nil
}

// fileURI returns the path of a file: URI (or of an absolute path given
// as a URI, which some clients send).
func fileURI(uri string) (string, bool) {
	if filepath.IsAbs(uri) {
		return filepath.Clean(uri), true
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return "", false
	}
	return filepath.FromSlash(u.Path), true
}

// text sends an agent_message_chunk.
func (t *turnMapper) text(s string) {
	t.a.update(t.s.id, sdk.UpdateAgentMessageText(s))
}

// errorText formats an upstream error for the chat.
func errorText(code, msg string) string {
	if code != "" {
		return fmt.Sprintf("\n\n**upstream error** (%s): %s\n", code, msg)
	}
	return fmt.Sprintf("\n\n**upstream error:** %s\n", msg)
}

// inOrder runs fn on the values given to put, in order, on a goroutine of
// its own; put never blocks. wait waits until every value put before it
// is done, and ends the goroutine.
func inOrder[T any](fn func(T)) (put func(T), wait func()) {
	var mu sync.Mutex
	var q []T
	closed := false
	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(done)
		for {
			mu.Lock()
			batch, end := q, closed
			q = nil
			mu.Unlock()
			for _, v := range batch {
				fn(v)
			}
			if len(batch) == 0 {
				if end {
					return
				}
				<-wake
			}
		}
	}()
	put = func(v T) {
		mu.Lock()
		q = append(q, v)
		mu.Unlock()
		signal()
	}
	wait = func() {
		mu.Lock()
		closed = true
		mu.Unlock()
		signal()
		<-done
	}
	return put, wait
}
