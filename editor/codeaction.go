package editor

import (
	"context"
	"slices"
	"strings"

	"github.com/smith-dev/smith/daemon"
)

// Code actions: at a pending hunk any LSP editor offers "Accept hunk",
// "Reject hunk", "Accept change (all hunks)", "Reject change" and "Preview
// change"; on a written hunk "Undo change". Each is a Command naming one
// of smith's executeCommand commands with its params, so the editor runs
// it with workspace/executeCommand and the edit comes back as a versioned
// workspace/applyEdit, as for every apply.
//
// Commands sent without arguments (Helix's command picker sends none) act
// on "the current thing": the hunk at the place of the last
// textDocument/codeAction request, else the newest pending change.

// MethodCodeAction is LSP's textDocument/codeAction request.
const MethodCodeAction = "textDocument/codeAction"

// LSP CodeActionKind values smith offers.
const (
	codeActionQuickFix = "quickfix"
	codeActionSource   = "source"
)

// Titles of smith's code actions.
const (
	titleAcceptHunk   = "Accept hunk"
	titleRejectHunk   = "Reject hunk"
	titleAcceptChange = "Accept change (all hunks)"
	titleRejectChange = "Reject change"
	titlePreview      = "Preview change"
	titleUndo         = "Undo change"
)

// CodeActionParams of textDocument/codeAction.
type CodeActionParams struct {
	TextDocument TextDocumentIdentifier `json:"textDocument"`
	Range        Range                  `json:"range"`
	Context      struct {
		Only []string `json:"only,omitempty"`
	} `json:"context"`
}

// Command is LSP's Command.
type Command struct {
	Title     string `json:"title"`
	Command   string `json:"command"`
	Arguments []any  `json:"arguments,omitempty"`
}

// CodeAction is LSP's CodeAction (with a command, never an edit: smith's
// edits go through its apply, which checks the buffer's version).
type CodeAction struct {
	Title       string       `json:"title"`
	Kind        string       `json:"kind"`
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	IsPreferred bool         `json:"isPreferred,omitzero"`
	Command     *Command     `json:"command"`
}

// codeActionOptions is the codeActionProvider smith announces.
func codeActionOptions() map[string]any {
	return map[string]any{"codeActionKinds": []string{codeActionQuickFix, codeActionSource}}
}

// codeAction lists smith's actions at the requested range and remembers the
// place for commands sent without arguments.
func (c *client) codeAction(_ context.Context, p *CodeActionParams) ([]CodeAction, error) {
	path, err := uriToPath(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	first, last := int(p.Range.Start.Line), int(p.Range.End.Line)
	c.review.posMu.Lock()
	c.review.at, c.review.atLine, c.review.atValid = path, first, true
	c.review.posMu.Unlock()

	places := c.placesIn(path)
	var out []CodeAction
	offered := map[string]bool{} // change ids with change-level actions
	changeActions := func(ch daemon.Change, kind string) {
		if offered[ch.ID] {
			return
		}
		offered[ch.ID] = true
		id := map[string]any{"changeId": ch.ID}
		out = append(out,
			action(titleAcceptChange, kind, MethodChangeApply, id),
			action(titleRejectChange, kind, MethodChangeReject, id),
			action(titlePreview, kind, MethodChangePreview, id))
	}
	for _, pl := range placesAt(places, first, last, hunkPlace.open) {
		hunk := map[string]any{"changeId": pl.change.ID, "hunks": []string{pl.hunk.ID}}
		accept := action(titleAcceptHunk, codeActionQuickFix, MethodChangeApply, hunk)
		accept.IsPreferred = true
		out = append(out, accept, action(titleRejectHunk, codeActionQuickFix, MethodChangeReject, hunk))
		changeActions(pl.change, codeActionQuickFix)
	}
	undone := map[string]bool{}
	for _, pl := range placesAt(places, first, last, hunkPlace.written) {
		if !undone[pl.change.ID] {
			undone[pl.change.ID] = true
			out = append(out, action(titleUndo, codeActionQuickFix, MethodUndo, map[string]any{"changeId": pl.change.ID}))
		}
	}
	// Anywhere in the file: the newest change still awaiting a decision.
	for i := len(places) - 1; i >= 0; i-- {
		if places[i].open() {
			changeActions(places[i].change, codeActionSource)
			break
		}
	}
	return only(out, p.Context.Only), nil
}

// placesAt returns the hunks that keep and whose lines meet [first, last],
// those whose changed lines do before those that only meet by context.
func placesAt(places []hunkPlace, first, last int, keep func(hunkPlace) bool) []hunkPlace {
	meets := func(start, end int) bool {
		if end <= start {
			end = start + 1 // an insertion point is its line
		}
		return first < end && last >= start
	}
	var near, wide []hunkPlace
	for _, p := range places {
		switch {
		case !keep(p):
		case meets(p.changedStart, p.changedEnd):
			near = append(near, p)
		case meets(p.wholeStart, p.wholeEnd):
			wide = append(wide, p)
		}
	}
	return append(near, wide...)
}

func action(title, kind, method string, params map[string]any) CodeAction {
	return CodeAction{Title: title, Kind: kind, Command: &Command{Title: title, Command: CommandFor(method), Arguments: []any{params}}}
}

// only keeps the actions of the kinds asked for (all when none is).
func only(actions []CodeAction, kinds []string) []CodeAction {
	if len(kinds) == 0 {
		return actions
	}
	out := actions[:0]
	for _, a := range actions {
		for _, k := range kinds {
			if a.Kind == k || strings.HasPrefix(a.Kind, k+".") {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// currentChange picks the target of a change command sent without a
// change id: the hunk at the place of the last code action request when
// one awaits a decision there (only that hunk when hunks is true), else
// the newest change awaiting one.
func (c *client) currentChange(hunks bool) (changeID string, hunkIDs []string, err error) {
	c.review.posMu.Lock()
	at, line, ok := c.review.at, c.review.atLine, c.review.atValid
	c.review.posMu.Unlock()
	if ok {
		if here := placesAt(c.placesIn(at), line, line, hunkPlace.open); len(here) > 0 {
			if hunks {
				return here[0].change.ID, []string{here[0].hunk.ID}, nil
			}
			return here[0].change.ID, nil, nil
		}
	}
	eng, _, err := c.session()
	if err != nil {
		return "", nil, err
	}
	all, err := eng.Changes(context.Background(), daemon.ChangeFilter{})
	if err != nil {
		return "", nil, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if slices.ContainsFunc(all[i].Hunks, awaitsDecision) {
			return all[i].ID, nil, nil
		}
	}
	return "", nil, invalidParams("no change awaits a decision: pass {\"changeId\": ...} (smith.changes lists them)")
}
