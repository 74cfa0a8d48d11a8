package editortest

import (
	"context"
	"encoding/json"
	"fmt"
)

// Plain LSP clients. These knobs make the fake editor behave like an editor
// that knows nothing of smith's own methods (Emacs eglot, Helix, Kate):
// other capabilities, didChange sent late, and the window/* requests such a
// client answers.

// Capabilities replaces the client capabilities Initialize announces (by
// default full workspace edits, workDoneProgress and the offered position
// encodings). Call it before Initialize.
func (e *Editor) Capabilities(caps map[string]any) {
	e.mu.Lock()
	e.caps = caps
	e.mu.Unlock()
}

// DeferChanges makes the editor keep the didChange of the workspace edits
// it applies until FlushChanges, as eglot does (it reports changes from an
// idle timer): the buffer and its version move on at once, the server
// hears of it later.
func (e *Editor) DeferChanges(deferred bool) {
	e.mu.Lock()
	e.deferChanges = deferred
	e.mu.Unlock()
}

// FlushChanges sends the didChange notifications DeferChanges held back,
// one per buffer with its current text and version.
func (e *Editor) FlushChanges(ctx context.Context) error {
	e.mu.Lock()
	paths := e.unsent
	e.unsent = nil
	type sync struct {
		path, text string
		version    int32
	}
	var out []sync
	for _, p := range paths {
		if b, ok := e.bufs[p]; ok {
			out = append(out, sync{p, b.Text, b.Version})
		}
	}
	e.mu.Unlock()
	for _, s := range out {
		if err := e.didChangeFull(ctx, s.path, s.text, s.version); err != nil {
			return err
		}
	}
	return nil
}

// editDeferred applies text to an open buffer without telling the server,
// when DeferChanges is on; it reports whether it did.
func (e *Editor) editDeferred(path, text string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	b, ok := e.bufs[path]
	if !e.deferChanges || !ok {
		return false
	}
	b.Text, b.Version = text, b.Version+1
	e.cond.Broadcast()
	for _, p := range e.unsent {
		if p == path {
			return true
		}
	}
	e.unsent = append(e.unsent, path)
	return true
}

// Requests returns the params of the server's requests of method
// (window/showDocument, window/showMessageRequest, ...) in arrival order.
// workspace/applyEdit has Edits.
func (e *Editor) Requests(method string) []json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []json.RawMessage
	for _, r := range e.requests {
		if r.Method == method {
			out = append(out, r.Params)
		}
	}
	return out
}

// WaitRequest waits until the server has sent n requests of method.
func (e *Editor) WaitRequest(ctx context.Context, method string, n int) ([]json.RawMessage, error) {
	err := e.waitFor(ctx, func() bool {
		c := 0
		for _, r := range e.requests {
			if r.Method == method {
				c++
			}
		}
		return c >= n
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %d %s requests: %w", n, method, err)
	}
	return e.Requests(method), nil
}

// recordRequest keeps a window/* request and answers it as a plain client
// would: showDocument succeeds, showMessageRequest picks no action.
func (e *Editor) recordRequest(method string, params json.RawMessage) (any, bool) {
	switch method {
	case "window/showDocument", "window/showMessageRequest":
	default:
		return nil, false
	}
	e.mu.Lock()
	e.requests = append(e.requests, Notification{Method: method, Params: params})
	e.cond.Broadcast()
	e.mu.Unlock()
	if method == "window/showDocument" {
		return map[string]any{"success": true}, true
	}
	return nil, true
}

// WaitBuffer waits until the open buffer of path satisfies ok.
func (e *Editor) WaitBuffer(ctx context.Context, path string, ok func(text string) bool) error {
	return e.waitFor(ctx, func() bool {
		b, open := e.bufs[path]
		return open && ok(b.Text)
	})
}
