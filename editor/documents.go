package editor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// Progress, messages and documents for plain LSP clients. smith's plugins
// render smith/event and the results of smith/* requests; a plain client
// (it only reaches smith through workspace/executeCommand) shows neither,
// so smith tells it with what every LSP client renders:
//   - the end of a turn and its errors as window/showMessage when the turn
//     had no $/progress (the client lacks window.workDoneProgress);
//   - the chat transcript, as a Markdown file under the state folder, and
//     a change's preview, as a unified diff (.diff, so that editors
//     highlight it), opened with window/showDocument when the client
//     supports it.

// showDocumentParams is LSP's ShowDocumentParams.
type showDocumentParams struct {
	URI       DocumentURI `json:"uri"`
	External  bool        `json:"external,omitzero"`
	TakeFocus bool        `json:"takeFocus,omitzero"`
}

// LSP MessageType values.
const (
	messageError = 1
	messageInfo  = 3
)

// plainClient reports whether the editor is a plain LSP client: it never
// called a smith/* method itself.
func (c *client) plainClient() bool { return !c.speaksSmith() }

func (c *client) canShowDocument() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.caps.showDocument
}

func (c *client) showMessage(typ int, msg string) {
	if err := c.conn.Notify(context.Background(), "window/showMessage", &showMessageParams{Type: typ, Message: msg}); err != nil {
		c.log.Debug("sending window/showMessage", "err", err)
	}
}

// showDocument asks the editor to open path; failures are only logged (the
// file is there for the user to open).
func (c *client) showDocument(ctx context.Context, path string, focus bool) {
	var res struct {
		Success bool `json:"success"`
	}
	if err := c.call(ctx, "window/showDocument", &showDocumentParams{URI: pathToURI(path), TakeFocus: focus}, &res); err != nil || !res.Success {
		c.log.Debug("the editor did not show a document", "path", path, "err", err)
	}
}

// turnEnded tells a plain client how a turn ended: the transcript opened as
// a document when it can show one, and a message when the turn had no
// progress to end or failed.
func (c *client) turnEnded(ctx context.Context, message string, prog *progress, res *daemon.ChatResult, err error) {
	if !c.plainClient() {
		return
	}
	// A cancelled turn still ends with its transcript and message.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reloadTimeout)
	defer cancel()
	if res != nil && c.canShowDocument() {
		if path, werr := c.appendTranscript(message, res); werr != nil {
			c.log.Warn("writing the chat transcript", "err", werr)
		} else {
			c.showDocument(ctx, path, false)
		}
	}
	switch {
	case err != nil:
		c.showMessage(messageError, "smith: the turn failed: "+err.Error())
	case res != nil && res.Outcome == protocol.OutcomeError:
		c.showMessage(messageError, "smith: the turn ended with an error: "+firstLine(res.Text, 200))
	case prog.c == nil && res != nil:
		c.showMessage(messageInfo, turnSummary(res))
	}
}

// turnSummary is the one-line message of a turn's end.
func turnSummary(res *daemon.ChatResult) string {
	msg := fmt.Sprintf("smith: turn %s", res.Outcome)
	if t := strings.TrimSpace(res.Text); t != "" {
		msg += ": " + firstLine(t, 120)
	}
	switch n := len(res.Changes); n {
	case 0:
	case 1:
		msg += " (1 change proposed: see its diagnostics and code actions)"
	default:
		msg += fmt.Sprintf(" (%d changes proposed: see their diagnostics and code actions)", n)
	}
	return msg
}

// appendTranscript adds the turn to the dialog's transcript,
// <state>/transcripts/<dialog>.md, and returns its path.
func (c *client) appendTranscript(message string, res *daemon.ChatResult) (string, error) {
	eng, _, err := c.session()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(eng.StateDir(), "transcripts")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fileSafe(res.DialogID)+".md")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## You\n\n%s\n\n## smith (%s)\n\n%s\n\n", message, res.Outcome, strings.TrimRight(res.Text, "\n"))
	for _, id := range res.Changes {
		fmt.Fprintf(&b, "- change `%s` proposed\n", id)
	}
	if len(res.Changes) > 0 {
		b.WriteString("\n")
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// previewShown opens a change's preview for a plain client: the unified
// diff written to <state>/previews/<change>.diff and shown as a document,
// or, for a client that cannot show documents, the diff as a message.
func (c *client) previewShown(ctx context.Context, changeID string, pv *daemon.Preview) {
	if pv == nil || !c.plainClient() {
		return
	}
	if !c.canShowDocument() {
		c.showMessage(messageInfo, "smith: preview of "+pv.Path+"\n"+pv.Diff)
		return
	}
	eng, _, err := c.session()
	if err != nil {
		return
	}
	dir := filepath.Join(eng.StateDir(), "previews")
	path := filepath.Join(dir, fileSafe(changeID)+".diff")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.log.Warn("writing a preview", "err", err)
		return
	}
	if err := os.WriteFile(path, []byte(pv.Diff), 0o600); err != nil {
		c.log.Warn("writing a preview", "err", err)
		return
	}
	c.showDocument(ctx, path, true)
}

// fileSafe makes an id usable as a file name.
func fileSafe(id string) string {
	if id == "" {
		return "dialog"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, id)
}
