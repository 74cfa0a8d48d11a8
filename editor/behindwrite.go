package editor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"time"
)

// Files written behind the editor. When the upstream writes a file itself
// (AgentSmithy v1/v2), or an undo or a session reset writes one on disk,
// smith's own plugins get smith/fileChanged and reload the buffer. A
// plain LSP client ignores that notification, and its buffer would stay
// stale (and a later save would write the old text back). So such a client
// also gets a workspace/applyEdit that brings each open buffer of the file
// to the text on disk: the buffer is current and the editor's undo takes
// the write back.

// reloadTimeout bounds the wait for the editor's answer; Notify runs on
// the connection's notification queue, which must not stall for long.
const reloadTimeout = 10 * time.Second

// speaksSmith reports whether the editor has called one of smith's own
// methods (smith/*) rather than only standard LSP and
// workspace/executeCommand: such an editor is one of smith's plugins and
// handles smith/fileChanged itself.
func (c *client) speaksSmith() bool { return c.smithAware.Load() }

// reloadBehind brings the open buffers of path (all of them when path is
// empty: a session reset may have written anything) to the text on disk,
// for a client that does not handle smith/fileChanged.
func (c *client) reloadBehind(path string) {
	if c.speaksSmith() {
		return
	}
	c.mu.Lock()
	editable := c.caps.applyEdit && c.caps.documentChanges
	c.mu.Unlock()
	if !editable {
		return
	}
	var paths []string
	if path != "" {
		paths = []string{c.absPath(path)}
	} else {
		c.docs.mu.RLock()
		for p := range c.docs.byPath {
			paths = append(paths, p)
		}
		c.docs.mu.RUnlock()
	}
	for _, p := range paths {
		c.reloadDocument(p)
	}
}

// reloadDocument sends the edit that turns the open buffer of path into the
// file's text on disk; nothing when it is not open or already equal.
func (c *client) reloadDocument(path string) {
	doc, open := c.docs.get(path)
	if !open {
		return
	}
	disk, err := os.ReadFile(path)
	if err != nil {
		c.log.Debug("reading a file written behind the editor", "path", path, "err", err)
		return
	}
	if bytes.Equal(doc.seen(), disk) {
		return
	}
	var edits []TextEdit
	if e := minimalEdit(doc.seen(), disk, c.encoding()); e != nil {
		edits = []TextEdit{*e}
	}
	params := &ApplyWorkspaceEditParams{
		Label: "smith: " + filepath.Base(path) + " was written on disk",
		Edit: WorkspaceEdit{DocumentChanges: []DocumentChange{{TextDocumentEdit: &TextDocumentEdit{
			TextDocument: OptionalVersionedTextDocumentIdentifier{URI: doc.uri, Version: doc.knownVersion()},
			Edits:        edits,
		}}}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
	defer cancel()
	var res ApplyWorkspaceEditResult
	if err := c.call(ctx, MethodApplyEdit, params, &res); err != nil || !res.Applied {
		c.log.Info("the editor did not take the text written on disk", "path", path, "err", err, "reason", res.FailureReason)
	}
}
