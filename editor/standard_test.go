package editor_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/editor/editortest"
	"github.com/smith-dev/smith/protocol/upstream"
)

// An editor that reports its edits late (eglot: didChange from an idle
// timer) accepts two hunks in a row: the second apply is planned against
// the text the first one left, not refused for the old version.
func TestApplyBeforeTheEditorReportsThePreviousEdit(t *testing.T) {
	t.Parallel()
	_, s := serveCalc(t)
	ctx := testCtx(t)
	path := s.openCalc(ctx)
	s.DeferChanges(true)
	res := s.mustChat("rename total to sum in calc.go")
	c := s.change(res.Changes[0])
	if len(c.Hunks) != 2 {
		t.Fatalf("want 2 hunks, got %+v", c.Hunks)
	}
	for _, h := range c.Hunks {
		var after daemon.Change
		if err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": c.ID, "hunks": []string{h.ID}}, &after); err != nil {
			t.Fatalf("apply %s before the editor reported the previous edit: %v", h.ID, err)
		}
	}
	want := strings.ReplaceAll(calcGo, "total", "sum")
	if b, _ := s.Buffer(path); b.Text != want {
		t.Fatalf("buffer after both applies:\n%s\nwant:\n%s", b.Text, want)
	}
	// The late reports then bring the mirror to the same text: undo works on it.
	if err := s.FlushChanges(ctx); err != nil {
		t.Fatal(err)
	}
	var undone daemon.Change
	if err := s.Call(ctx, editor.MethodUndo, map[string]any{"changeId": c.ID}, &undone); err != nil {
		t.Fatalf("undo after the late didChange: %v", err)
	}
	if b, _ := s.Buffer(path); strings.Count(b.Text, "sum") != 1 {
		t.Fatalf("buffer after undoing the last apply:\n%s", b.Text)
	}
}

// eglotCaps are the client capabilities of Emacs eglot 1.9 that matter to
// smith: versioned workspace edits, no workDoneProgress, no showDocument,
// no positionEncodings.
func eglotCaps() map[string]any {
	return map[string]any{
		"workspace": map[string]any{"applyEdit": true, "workspaceEdit": map[string]any{"documentChanges": true}},
		"textDocument": map[string]any{
			"codeAction":         map[string]any{"codeActionLiteralSupport": map[string]any{"codeActionKind": map[string]any{"valueSet": []string{"quickfix", "source"}}}},
			"publishDiagnostics": map[string]any{"relatedInformation": false},
		},
	}
}

// plainServe starts smith serve for ws against up and initializes it as a
// plain LSP client with caps: it never calls smith/* methods, only
// workspace/executeCommand.
func plainServe(t *testing.T, ws, up string, caps map[string]any) *session {
	t.Helper()
	ed := startServe(t, up, t.TempDir())
	ed.Capabilities(caps)
	if _, err := ed.Initialize(testCtx(t), ws, nil); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return &session{Editor: ed, t: t, ws: ws}
}

// command runs a smith command through workspace/executeCommand, as a
// plain LSP client does (no arguments when params is nil).
func (s *session) command(name string, params any, result any) error {
	args := []any{}
	if params != nil {
		args = append(args, params)
	}
	return s.Call(testCtx(s.t), editor.MethodExecuteCommand, map[string]any{"command": name, "arguments": args}, result)
}

// plainCalc serves a workspace holding calc.go, against an upstream that
// speaks proto, to a plain LSP client that announced caps.
func plainCalc(t *testing.T, proto string, caps map[string]any) *session {
	t.Helper()
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: proto})
	return plainServe(t, ws, up, caps)
}

// mustCommandChat runs a turn through the smith.chat command, as a plain
// LSP client does, and fails the test if it does not succeed.
func (s *session) mustCommandChat(message string) chatResult {
	s.t.Helper()
	var res chatResult
	if err := s.command("smith.chat", map[string]any{"message": message}, &res); err != nil {
		s.t.Fatal(err)
	}
	return res
}

// A file the upstream writes itself (AgentSmithy v2) reaches the open
// buffer of a plain LSP client as a workspace/applyEdit: it does not know
// smith/fileChanged.
func TestUpstreamWriteUpdatesThePlainClientsBuffer(t *testing.T) {
	t.Parallel()
	s := plainCalc(t, upstream.ProtocolV2, eglotCaps())
	ctx := testCtx(t)
	path := s.openCalc(ctx)
	s.mustCommandChat("rename total to sum in calc.go")
	want := strings.ReplaceAll(calcGo, "total", "sum")
	if got := readFile(t, path); got != want {
		t.Fatalf("the upstream did not write calc.go:\n%s", got)
	}
	if err := s.WaitBuffer(ctx, path, func(text string) bool { return text == want }); err != nil {
		b, _ := s.Buffer(path)
		t.Fatalf("the open buffer was not brought to the text on disk: %v\n%s", err, b.Text)
	}
}

// smith's own plugins reload on smith/fileChanged: they get no edit for it.
func TestUpstreamWriteLeavesAPluginsBufferToIt(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV2})
	s := serve(t, ws, up, t.TempDir())
	ctx := testCtx(t)
	s.openCalc(ctx)
	s.mustChat("rename total to sum in calc.go")
	if _, err := s.WaitNotification(ctx, editor.MethodFileChanged, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Edits()); n != 0 {
		t.Fatalf("a plugin got %d workspace edits for a file written on disk", n)
	}
}

// showDocCaps are eglotCaps plus window.showDocument.
func showDocCaps() map[string]any {
	caps := eglotCaps()
	caps["window"] = map[string]any{"showDocument": map[string]any{"support": true}}
	return caps
}

type showDocument struct {
	URI       string `json:"uri"`
	TakeFocus bool   `json:"takeFocus"`
}

func (s *session) shownDocuments(n int) []showDocument {
	s.t.Helper()
	raw, err := s.WaitRequest(testCtx(s.t), "window/showDocument", n)
	if err != nil {
		s.t.Fatal(err)
	}
	out := make([]showDocument, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			s.t.Fatal(err)
		}
	}
	return out
}

type shownMessage struct {
	Type    int    `json:"type"`
	Message string `json:"message"`
}

func (s *session) waitMessage(match func(shownMessage) bool) shownMessage {
	s.t.Helper()
	var got shownMessage
	_, err := s.WaitNotification(testCtx(s.t), "window/showMessage", func(p json.RawMessage) bool {
		var m shownMessage
		json.Unmarshal(p, &m)
		if match(m) {
			got = m
			return true
		}
		return false
	})
	if err != nil {
		s.t.Fatalf("no matching window/showMessage among %v: %v", s.Notifications("window/showMessage"), err)
	}
	return got
}

// A plain client that can show documents gets the transcript of a turn (a
// Markdown file under the state folder) and a change's preview (a .diff)
// opened with window/showDocument, and the turn's end as a message (it
// announced no workDoneProgress).
func TestPlainClientIsShownTranscriptAndPreview(t *testing.T) {
	t.Parallel()
	s := plainCalc(t, upstream.ProtocolV0, showDocCaps())
	res := s.mustCommandChat("rename total to sum in calc.go")
	docs := s.shownDocuments(1)
	transcript := editortest.PathOf(docs[0].URI)
	if filepath.Ext(transcript) != ".md" || docs[0].TakeFocus {
		t.Errorf("transcript shown as %+v, want a .md without focus", docs[0])
	}
	if got := readFile(t, transcript); !strings.Contains(got, "rename total to sum in calc.go") || !strings.Contains(got, strings.TrimSpace(res.Text)[:20]) {
		t.Errorf("transcript %s:\n%s", transcript, got)
	}
	s.waitMessage(func(m shownMessage) bool {
		return m.Type == 3 && strings.Contains(m.Message, "turn completed") && strings.Contains(m.Message, "1 change proposed")
	})

	var pv daemon.Preview
	if err := s.command("smith.change.preview", map[string]any{"changeId": res.Changes[0]}, &pv); err != nil {
		t.Fatal(err)
	}
	docs = s.shownDocuments(2)
	diff := editortest.PathOf(docs[1].URI)
	if filepath.Ext(diff) != ".diff" || !docs[1].TakeFocus {
		t.Errorf("preview shown as %+v, want a .diff with focus", docs[1])
	}
	if got := readFile(t, diff); got != pv.Diff || !strings.Contains(got, "+\tsum := 0") {
		t.Errorf("preview file %s:\n%s\nwant the preview's diff:\n%s", diff, got, pv.Diff)
	}
}

// A plain client without showDocument or progress (eglot) is told the
// end of a turn and a failure with window/showMessage.
func TestPlainClientIsToldTurnEndAndErrors(t *testing.T) {
	t.Parallel()
	s := plainCalc(t, upstream.ProtocolV0, eglotCaps())
	res := s.mustCommandChat("rename total to sum in calc.go")
	s.waitMessage(func(m shownMessage) bool { return m.Type == 3 && strings.Contains(m.Message, "turn completed") })

	down := plainServe(t, s.ws, "http://127.0.0.1:9", eglotCaps())
	if err := down.command("smith.chat", map[string]any{"message": "hello"}, &res); err == nil {
		t.Fatal("a turn against an upstream that is down succeeded")
	}
	down.waitMessage(func(m shownMessage) bool { return m.Type == 1 && strings.Contains(m.Message, "failed") })
	if n := len(down.Requests("window/showDocument")); n != 0 {
		t.Errorf("%d documents shown to a client without showDocument", n)
	}
}

type publishedDiagnostics struct {
	URI         string `json:"uri"`
	Diagnostics []struct {
		Range struct {
			Start struct{ Line int } `json:"start"`
			End   struct{ Line int } `json:"end"`
		} `json:"range"`
		Severity int    `json:"severity"`
		Source   string `json:"source"`
		Message  string `json:"message"`
	} `json:"diagnostics"`
}

// waitDiagnostics waits for a publishDiagnostics of path whose diagnostics
// start at the given 0-based lines, in order.
func (s *session) waitDiagnostics(path string, lines ...int) publishedDiagnostics {
	s.t.Helper()
	var got publishedDiagnostics
	_, err := s.WaitNotification(testCtx(s.t), editor.MethodPublishDiagnostics, func(p json.RawMessage) bool {
		var d publishedDiagnostics
		if json.Unmarshal(p, &d) != nil || editortest.PathOf(d.URI) != path || len(d.Diagnostics) != len(lines) {
			return false
		}
		for i, l := range lines {
			if d.Diagnostics[i].Range.Start.Line != l {
				return false
			}
		}
		got = d
		return true
	})
	if err != nil {
		s.t.Fatalf("no diagnostics of %s at lines %v; published: %v", path, lines, s.Notifications(editor.MethodPublishDiagnostics))
	}
	return got
}

type codeAction struct {
	Title   string `json:"title"`
	Kind    string `json:"kind"`
	Command struct {
		Command   string            `json:"command"`
		Arguments []json.RawMessage `json:"arguments"`
	} `json:"command"`
}

func (s *session) codeActions(path string, line int) map[string]codeAction {
	s.t.Helper()
	var actions []codeAction
	pos := map[string]any{"line": line, "character": 2}
	err := s.Call(testCtx(s.t), editor.MethodCodeAction, map[string]any{
		"textDocument": map[string]any{"uri": editortest.FileURI(path)},
		"range":        map[string]any{"start": pos, "end": pos},
		"context":      map[string]any{"diagnostics": []any{}},
	}, &actions)
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string]codeAction{}
	for _, a := range actions {
		out[a.Title] = a
	}
	return out
}

// A plain LSP client reviews a change with standard LSP only: a
// diagnostic on each hunk (following the user's edits), code actions at a
// hunk, commands without arguments acting on the hunk of the last code
// action, and "Undo change" on the applied hunk.
func TestPlainClientReviewsWithDiagnosticsAndCodeActions(t *testing.T) {
	t.Parallel()
	s := plainCalc(t, upstream.ProtocolV0, eglotCaps())
	ctx := testCtx(t)
	path := s.openCalc(ctx)
	res := s.mustCommandChat("rename total to sum in calc.go")
	// "total := 0" is line 4, "return total" line 16.
	d := s.waitDiagnostics(path, 4, 16)
	for i, dg := range d.Diagnostics {
		if dg.Source != "smith" || dg.Severity != 3 || !strings.Contains(dg.Message, fmt.Sprintf("hunk %d of 2", i+1)) || !strings.Contains(dg.Message, res.Changes[0]) {
			t.Errorf("diagnostic %d: %+v", i, dg)
		}
		if dg.Range.End.Line != dg.Range.Start.Line+1 {
			t.Errorf("diagnostic %d spans lines %d-%d, want the one changed line", i, dg.Range.Start.Line, dg.Range.End.Line)
		}
	}
	// A line typed above moves both.
	note := "// note\n"
	if err := s.ChangeRange(ctx, path, 0, 0, 0, 0, note); err != nil {
		t.Fatal(err)
	}
	s.waitDiagnostics(path, 5, 17)

	acts := s.codeActions(path, 5)
	for _, title := range []string{"Accept hunk", "Reject hunk", "Accept change (all hunks)", "Reject change", "Preview change"} {
		if _, ok := acts[title]; !ok {
			t.Errorf("no %q among the code actions at hunk 1: %v", title, acts)
		}
	}
	if a := acts["Accept hunk"]; a.Kind != "quickfix" || a.Command.Command != "smith.change.apply" || !strings.Contains(string(a.Command.Arguments[0]), `"hunks"`) {
		t.Errorf("Accept hunk: %+v", a)
	}
	s.DeferChanges(true) // as eglot: didChange comes late
	// Helix: the command without arguments applies the hunk of the last code action.
	var after daemon.Change
	if err := s.command("smith.change.apply", nil, &after); err != nil {
		t.Fatal(err)
	}
	hunk1 := note + strings.Replace(calcGo, "total := 0", "sum := 0", 1)
	if b, _ := s.Buffer(path); b.Text != hunk1 {
		t.Fatalf("buffer after smith.change.apply without arguments:\n%s", b.Text)
	}
	s.waitDiagnostics(path, 17)

	s.codeActions(path, 17)
	if err := s.command("smith.change.reject", nil, &after); err != nil {
		t.Fatal(err)
	}
	if after.Hunks[1].Status != daemon.StatusRejected || after.Hunks[0].Status != daemon.StatusApplied {
		t.Fatalf("after smith.change.reject without arguments at hunk 2: %+v", after.Hunks)
	}
	s.waitDiagnostics(path)

	undo, ok := s.codeActions(path, 5)["Undo change"]
	if !ok {
		t.Fatal("no Undo change at the applied hunk")
	}
	var args any
	json.Unmarshal(undo.Command.Arguments[0], &args)
	if err := s.command(undo.Command.Command, args, &after); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Buffer(path); b.Text != note+calcGo {
		t.Fatalf("buffer after Undo change:\n%s", b.Text)
	}
}

// A hunk whose lines the user edited away stays a diagnostic, saying it
// conflicts and why; a preview for a client that cannot show documents
// comes as a message; away from any hunk the change-level actions are
// offered as source actions.
func TestPlainClientSeesConflictsAndChangeActions(t *testing.T) {
	t.Parallel()
	s := plainCalc(t, upstream.ProtocolV0, eglotCaps())
	ctx := testCtx(t)
	path := s.openCalc(ctx)
	s.mustCommandChat("rename total to sum in calc.go")
	s.waitDiagnostics(path, 4, 16)

	acts := s.codeActions(path, 10) // padding, no hunk's changed line
	if _, ok := acts["Accept hunk"]; ok {
		t.Errorf("Accept hunk offered away from the hunks: %v", acts)
	}
	if a, ok := acts["Accept change (all hunks)"]; !ok || a.Kind != "source" || a.Command.Command != "smith.change.apply" {
		t.Errorf("Accept change (all hunks) away from the hunks: %+v in %v", a, acts)
	}

	var pv daemon.Preview
	if err := s.command("smith.change.preview", nil, &pv); err != nil {
		t.Fatal(err)
	}
	s.waitMessage(func(m shownMessage) bool { return strings.Contains(m.Message, "-\ttotal := 0") })

	// The user rewrites hunk 1's line: it no longer applies there.
	if err := s.ChangeRange(ctx, path, 4, 1, 4, 6, "count"); err != nil {
		t.Fatal(err)
	}
	var conflict string
	_, err := s.WaitNotification(ctx, editor.MethodPublishDiagnostics, func(p json.RawMessage) bool {
		var d publishedDiagnostics
		json.Unmarshal(p, &d)
		for _, dg := range d.Diagnostics {
			if strings.Contains(dg.Message, "hunk 1 of 2") && strings.Contains(dg.Message, ": conflict") {
				conflict = dg.Message
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no conflict diagnostic after editing hunk 1 away: %v", s.Notifications(editor.MethodPublishDiagnostics))
	}
	t.Logf("conflict diagnostic: %s", conflict)
}

// A client that did not announce textDocument.publishDiagnostics (smith's
// terminal commands, the fake editor's defaults) is sent none.
func TestNoDiagnosticsWithoutTheCapability(t *testing.T) {
	t.Parallel()
	_, s := serveCalc(t)
	res := s.mustChat("rename total to sum in calc.go")
	var after daemon.Change
	// An apply publishes before it answers (diagnostics.go: decided).
	if err := s.Call(testCtx(t), editor.MethodChangeApply, map[string]any{"changeId": res.Changes[0], "hunks": []string{"h1"}}, &after); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Notifications(editor.MethodPublishDiagnostics)); n != 0 {
		t.Fatalf("%d publishDiagnostics sent to a client without the capability", n)
	}
}

// A plain client that announced window.workDoneProgress follows the turn in
// $/progress (begin … end), and its end is not repeated as a message.
func TestPlainClientWithProgress(t *testing.T) {
	t.Parallel()
	caps := eglotCaps()
	caps["window"] = map[string]any{"workDoneProgress": true}
	s := plainCalc(t, upstream.ProtocolV0, caps)
	s.mustCommandChat("rename total to sum in calc.go")
	var kinds []string
	for _, n := range s.Notifications(editor.MethodProgress) {
		var p struct {
			Value struct{ Kind, Message string } `json:"value"`
		}
		json.Unmarshal(n.Params, &p)
		kinds = append(kinds, p.Value.Kind)
	}
	if len(kinds) < 2 || kinds[0] != "begin" || kinds[len(kinds)-1] != "end" {
		t.Fatalf("$/progress kinds %v, want begin … end", kinds)
	}
	for _, n := range s.Notifications("window/showMessage") {
		if strings.Contains(string(n.Params), "turn completed") {
			t.Errorf("the turn's end repeated as a message: %s", n.Params)
		}
	}
}
