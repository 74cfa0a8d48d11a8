package editor

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/smith-dev/smith/daemon"
)

// Diagnostics: every pending or conflicting hunk is published as an
// Information diagnostic (source "smith") over the lines it changes in the
// text the user sees, so that any LSP editor marks it where it is and
// offers its code actions there (codeaction.go). The ranges come from the
// engine's hunks (Hunk.OldStart and Text, computed against the buffer when
// the change is read); smith re-publishes a file's diagnostics whenever a
// change of it is updated and after the user edits it, so they follow the
// document, and publishes an empty list when the last one is gone.

// MethodPublishDiagnostics is LSP's server → client diagnostics notification.
const MethodPublishDiagnostics = "textDocument/publishDiagnostics"

// Diagnostic is LSP's Diagnostic (the fields smith sets).
type Diagnostic struct {
	Range    Range          `json:"range"`
	Severity int            `json:"severity"`
	Code     string         `json:"code,omitempty"`
	Source   string         `json:"source"`
	Message  string         `json:"message"`
	Data     *diagnosticRef `json:"data,omitempty"`
}

// diagnosticRef names the hunk a diagnostic stands for.
type diagnosticRef struct {
	ChangeID string `json:"changeId"`
	HunkID   string `json:"hunkId"`
}

// PublishDiagnosticsParams of textDocument/publishDiagnostics.
type PublishDiagnosticsParams struct {
	URI         DocumentURI  `json:"uri"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// LSP DiagnosticSeverity values.
const (
	severityInformation = 3
	severityHint        = 4
)

// review is a connection's state of the standard LSP review surface: which
// files have smith diagnostics, and where the last code action was asked
// (the "current thing" of commands sent without arguments).
type review struct {
	mu        sync.Mutex // serializes publishing: the last one reflects the newest state
	published map[string]bool

	posMu   sync.Mutex
	at      string // absolute path of the last textDocument/codeAction
	atLine  int    // its 0-based start line
	atValid bool
}

func newReview() *review { return &review{published: map[string]bool{}} }

// hunkPlace is where a hunk is in the text the user sees, 0-based lines.
type hunkPlace struct {
	change daemon.Change
	hunk   daemon.Hunk
	index  int // 0-based position of the hunk in its change
	// changed: the lines the hunk removes, or the empty range where it
	// inserts ([start, end)); whole: the hunk with its context.
	changedStart, changedEnd int
	wholeStart, wholeEnd     int
}

// placeOf locates h: pending and conflicting hunks on their old side (the
// text now), written ones on their new side.
func placeOf(c daemon.Change, i int) hunkPlace {
	h := c.Hunks[i]
	p := hunkPlace{change: c, hunk: h, index: i}
	if p.written() {
		start := max(h.NewStart-1, 0)
		if h.NewLines == 0 {
			start = h.NewStart
		}
		p.wholeStart, p.wholeEnd = start, start+max(h.NewLines, 1)
		p.changedStart, p.changedEnd = p.wholeStart, p.wholeEnd
		return p
	}
	// line is the 1-based old line the next body line of the hunk is at.
	line := h.OldStart
	if h.OldLines == 0 {
		line = h.OldStart + 1
	}
	p.wholeStart, p.wholeEnd = line-1, line-1+max(h.OldLines, 1)
	first, last, insertAt := 0, 0, 0
	body := h.Text
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:] // the header
	}
	for _, l := range strings.Split(body, "\n") {
		if l == "" {
			continue
		}
		switch l[0] {
		case ' ':
			line++
		case '-':
			if first == 0 {
				first = line
			}
			last = line
			line++
		case '+':
			if insertAt == 0 {
				insertAt = line
			}
		}
	}
	switch {
	case first > 0:
		p.changedStart, p.changedEnd = first-1, last
	case insertAt > 0:
		p.changedStart, p.changedEnd = insertAt-1, insertAt-1
	default:
		p.changedStart, p.changedEnd = p.wholeStart, p.wholeEnd
	}
	return p
}

// open reports whether the hunk awaits a decision.
func (p hunkPlace) open() bool { return awaitsDecision(p.hunk) }

// awaitsDecision reports whether h is pending or conflicting.
func awaitsDecision(h daemon.Hunk) bool {
	return h.Status == daemon.StatusPending || h.Status == daemon.StatusConflict
}

// written reports whether the hunk is in the file now.
func (p hunkPlace) written() bool {
	return p.hunk.Status == daemon.StatusApplied || p.hunk.Status == daemon.StatusAppliedUpstream
}

// summary is the one line that says what a hunk of a change does.
func (p hunkPlace) summary() string {
	minus, plus := 0, 0
	for _, l := range strings.Split(p.hunk.Text, "\n")[1:] {
		switch {
		case strings.HasPrefix(l, "-"):
			minus++
		case strings.HasPrefix(l, "+"):
			plus++
		}
	}
	c := p.change
	msg := fmt.Sprintf("%s %s, hunk %d of %d (-%d +%d lines) of change %s", verbOf(c), filepath.Base(filepath.FromSlash(c.Path)), p.index+1, len(c.Hunks), minus, plus, c.ID)
	if p.hunk.Status == daemon.StatusConflict {
		reason := p.hunk.Reason
		if reason == "" {
			reason = c.Reason
		}
		msg += ": conflict"
		if reason != "" {
			msg += ": " + firstLine(reason, 200)
		}
	}
	return msg
}

func verbOf(c daemon.Change) string {
	switch c.Kind {
	case "create":
		return "create"
	case "delete":
		return "delete"
	case "rename":
		return "rename"
	}
	return "edit"
}

// placesIn returns the hunks of the changes of path (absolute), in the
// engine's order (oldest change first).
func (c *client) placesIn(path string) []hunkPlace { return c.placesOf(c.allChanges(), path) }

// allChanges lists the engine's changes; nil when there is no engine yet
// or it cannot list them.
func (c *client) allChanges() []daemon.Change {
	eng, _, err := c.session()
	if err != nil {
		return nil
	}
	all, err := eng.Changes(context.Background(), daemon.ChangeFilter{})
	if err != nil {
		return nil
	}
	return all
}

// placesOf returns the hunks of the changes in all of path (absolute).
func (c *client) placesOf(all []daemon.Change, path string) []hunkPlace {
	key := canonicalPath(path)
	var out []hunkPlace
	for _, ch := range all {
		if canonicalPath(c.absPath(ch.Path)) != key {
			continue
		}
		for i := range ch.Hunks {
			out = append(out, placeOf(ch, i))
		}
	}
	return out
}

// publishDiagnostics sends the diagnostics of the given files (absolute
// paths) as they are now, to a client that announced
// textDocument.publishDiagnostics; a file that had some and has none gets
// an empty list.
func (c *client) publishDiagnostics(paths ...string) {
	c.mu.Lock()
	wanted := c.caps.diagnostics
	c.mu.Unlock()
	if !wanted || len(paths) == 0 { // a terminal, say: nothing would show them
		return
	}
	c.review.mu.Lock()
	defer c.review.mu.Unlock()
	all := c.allChanges() // once for every path, not once per path
	for _, path := range paths {
		key := canonicalPath(path)
		diags := []Diagnostic{}
		for _, p := range c.placesOf(all, path) {
			if !p.open() {
				continue
			}
			diags = append(diags, Diagnostic{
				Range:    Range{Start: Position{Line: uint32(p.changedStart)}, End: Position{Line: uint32(p.changedEnd)}},
				Severity: severityInformation,
				Code:     p.hunk.ID,
				Source:   "smith",
				Message:  p.summary(),
				Data:     &diagnosticRef{ChangeID: p.change.ID, HunkID: p.hunk.ID},
			})
		}
		if len(diags) == 0 && !c.review.published[key] {
			continue
		}
		c.review.published[key] = len(diags) > 0
		uri := pathToURI(path)
		if doc, ok := c.docs.get(path); ok {
			uri = doc.uri // as the editor spelled it
		}
		if err := c.conn.Notify(context.Background(), MethodPublishDiagnostics, &PublishDiagnosticsParams{URI: uri, Diagnostics: diags}); err != nil {
			c.log.Debug("publishing diagnostics", "err", err)
		}
	}
}

// changePaths are the absolute paths a change touches.
func (c *client) changePaths(ch *daemon.Change) []string {
	if ch == nil {
		return nil
	}
	out := []string{c.absPath(ch.Path)}
	if ch.OldPath != "" {
		out = append(out, c.absPath(ch.OldPath))
	}
	return out
}

// decided publishes the diagnostics of a change an apply, reject or undo
// has just decided, before its response goes out. The engine's
// changeUpdated publishes them too, but from the notification queue,
// usually after the response: Emacs 28's jsonrpc stops reading a batch of
// messages at the response its request waits for, and leaves what follows
// unread until the server writes again, so eglot would keep showing the
// decided hunk.
func (c *client) decided(ch *daemon.Change, err error) (*daemon.Change, error) {
	if ch != nil {
		c.publishDiagnostics(c.changePaths(ch)...)
	}
	return ch, err
}
