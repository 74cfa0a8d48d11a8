package editor

import (
	"context"
	"path/filepath"

	"go.lsp.dev/jsonrpc2"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

// ChatParams of smith/chat.
type ChatParams struct {
	DialogID string       `json:"dialogId,omitempty"`
	Message  string       `json:"message"`
	Context  *ChatContext `json:"context,omitempty"`
	// WorkDoneToken, when set, gets $/progress begin/report/end for the turn.
	WorkDoneToken ProgressToken `json:"workDoneToken,omitzero"`
}

// ChatContext is what the user is looking at: a document and optionally a
// selection in it (in the negotiated position encoding).
type ChatContext struct {
	URI       DocumentURI `json:"uri,omitempty"`
	Selection *Range      `json:"selection,omitempty"`
}

// EventParams of smith/event: one normalized event of a running turn.
type EventParams struct {
	DialogID string         `json:"dialogId"`
	TurnID   string         `json:"turnId"`
	Seq      int64          `json:"seq"`
	Event    protocol.Event `json:"event"`
}

// chat runs one turn. The request stays pending for the whole turn while
// smith/event notifications stream; $/cancelRequest ends the turn with
// outcome "cancelled" and the partial text, which is still a result, not
// an error. When the engine refuses to start the turn, or the upstream
// cannot be reached, the answer is an error whose data is the ended turn
// (when there is one).
func (c *client) chat(ctx context.Context, p *ChatParams) (any, error) {
	if p.Message == "" {
		return nil, invalidParams("message is empty")
	}
	eng, peer, err := c.session()
	if err != nil {
		return nil, err
	}
	req := daemon.ChatRequest{DialogID: p.DialogID, Message: p.Message, Context: c.chatContext(p.Context)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prog := c.startProgress(ctx, p.WorkDoneToken, "smith: "+firstLine(p.Message, 60), cancel)
	var buf []byte // eventParams' buffer: emit runs on one goroutine
	emit := func(ev protocol.Event) {
		prog.event(ev)
		params := &EventParams{DialogID: ev.DialogID, TurnID: ev.TurnID, Seq: ev.Seq, Event: ev}
		var err error
		if raw, ok := eventParams(buf, params); ok {
			buf = raw
			err = c.conn.Notify(context.Background(), MethodEvent, jsonrpc2.RawMessage(raw))
		} else {
			err = c.conn.Notify(context.Background(), MethodEvent, params)
		}
		if err != nil {
			c.log.Debug("sending smith/event", "err", err)
		}
	}
	res, err := eng.Chat(daemon.WithPeer(ctx, peer), req, emit)
	prog.end(res)
	c.turnEnded(ctx, p.Message, prog, res, err)
	if err != nil {
		return nil, wireError(err, res)
	}
	return res, nil
}

// chatContext turns the editor's context into the upstream's: the file's
// path, language and text (the open buffer when mirrored, else the disk)
// and the selected text.
func (c *client) chatContext(cc *ChatContext) *protocol.ChatContext {
	if cc == nil || cc.URI == "" {
		return nil
	}
	path, err := uriToPath(cc.URI)
	if err != nil {
		return nil
	}
	cf := &protocol.CurrentFile{Path: path}
	text := []byte(nil)
	if doc, ok := c.docs.get(path); ok {
		cf.Language, text = doc.languageID, doc.seen()
	} else if b, err := diffapply.ReadRegularFile(path); err == nil { // a FIFO must not hang the turn
		text = b
	}
	cf.Content = string(text)
	if cc.Selection != nil {
		if s, e, err := rangeOffsets(text, *cc.Selection, c.encoding()); err == nil {
			cf.Selection = string(text[s:e])
		}
	}
	if cf.Language == "" {
		cf.Language = languageOf(path)
	}
	return &protocol.ChatContext{CurrentFile: cf}
}

// languageOf guesses an LSP language id from a file name for a file that
// is not open (the editor names the language of open ones).
func languageOf(path string) string {
	switch filepath.Ext(path) {
	case ".go":
		return "go"
	case ".py":
		return "python"
	case ".js":
		return "javascript"
	case ".ts":
		return "typescript"
	case ".lua":
		return "lua"
	case ".rs":
		return "rust"
	case ".md":
		return "markdown"
	}
	return ""
}

// firstLine shortens a message to its first line and at most n runes.
func firstLine(s string, n int) string {
	r := []rune(s)
	for i, ch := range r {
		if ch == '\n' || i == n {
			return string(r[:i]) + "…"
		}
	}
	return s
}
