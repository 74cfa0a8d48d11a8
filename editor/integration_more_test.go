package editor_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// uniGo has non-ASCII text before "total" on the renamed lines, so that
// the edit's character offsets differ between utf-16 and utf-8.
const uniGo = `package uni

func F() int {
	s := "😀é"; total := len(s)
	return total
}

// padding
// padding
// padding
// 😀 é
`

// TestApplyInEachEncoding: the edit of an open buffer lands in the right
// place whichever position encoding was negotiated.
func TestApplyInEachEncoding(t *testing.T) {
	t.Parallel()
	for _, enc := range []string{"utf-16", "utf-8"} {
		t.Run(enc, func(t *testing.T) {
			ws := workspace(t, map[string]string{"uni.go": uniGo})
			up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV0})
			ed := startServe(t, up, t.TempDir())
			ctx := testCtx(t)
			if _, err := ed.Initialize(ctx, ws, nil, enc); err != nil {
				t.Fatal(err)
			}
			if ed.Encoding != enc {
				t.Fatalf("negotiated %s, want %s", ed.Encoding, enc)
			}
			s := &session{Editor: ed, t: t, ws: ws}
			path := filepath.Join(ws, "uni.go")
			if err := s.Open(ctx, path, uniGo); err != nil {
				t.Fatal(err)
			}
			// An incremental change after an emoji, in the negotiated units, on
			// the last line (away from the hunks): "é" → "ü".
			from := map[string]int{"utf-16": 6, "utf-8": 8}[enc]
			to := map[string]int{"utf-16": 7, "utf-8": 10}[enc]
			if err := s.ChangeRange(ctx, path, 10, from, 10, to, "ü"); err != nil {
				t.Fatal(err)
			}
			typed := strings.Replace(uniGo, "😀 é", "😀 ü", 1)
			res := s.mustChat("rename total to sum in uni.go")
			// The plan was made against the mirrored buffer, typed change included.
			var pv daemon.Preview
			if err := s.Call(ctx, editor.MethodChangePreview, map[string]any{"changeId": res.Changes[0]}, &pv); err != nil {
				t.Fatal(err)
			}
			if pv.Original != typed {
				t.Errorf("planned against:\n%s\nwant the buffer:\n%s", pv.Original, typed)
			}
			if err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": res.Changes[0]}, nil); err != nil {
				t.Fatal(err)
			}
			if b, _ := s.Buffer(path); b.Text != strings.ReplaceAll(typed, "total", "sum") {
				t.Errorf("buffer:\n%s", b.Text)
			}
		})
	}
}

// TestDeleteOpenFileAndCreate: deleting a file open in the editor goes
// through a DeleteFile resource operation; creating a file that is not
// open is written on disk.
func TestDeleteOpenFileAndCreate(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"old.go": "package old\n"})
	up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV0})
	s := serve(t, ws, up, t.TempDir())
	ctx := testCtx(t)
	old := filepath.Join(ws, "old.go")
	if err := s.Open(ctx, old, "package old\n"); err != nil {
		t.Fatal(err)
	}
	del := s.mustChat("delete old.go")
	if err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": del.Changes[0]}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("old.go still exists: %v", err)
	}
	edits := s.Edits()
	if len(edits) != 1 || !strings.Contains(string(edits[0]), `"kind":"delete"`) {
		t.Errorf("workspace/applyEdit requests: %s", edits)
	}
	cre := s.mustChat(`create notes/todo.md with "# Todo"`)
	if c := s.change(cre.Changes[0]); c.Kind != protocol.ChangeCreate {
		t.Errorf("kind %s, want create", c.Kind)
	}
	if err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": cre.Changes[0]}, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(ws, "notes", "todo.md")); got != "# Todo\n" {
		t.Errorf("todo.md = %q", got)
	}
}

// TestDialogsAndSession walks the dialog methods and a session approval
// on an AgentSmithy v2 upstream, through smith/* and executeCommand.
func TestDialogsAndSession(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV2})
	s := serve(t, ws, up, t.TempDir())
	ctx := testCtx(t)
	var d daemon.Dialog
	if err := s.Call(ctx, editor.MethodDialogNew, map[string]any{"title": "first"}, &d); err != nil {
		t.Fatal(err)
	}
	if err := s.Call(ctx, editor.MethodDialogRename, map[string]any{"dialogId": d.ID, "title": "renamed"}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := s.chat(map[string]any{"dialogId": d.ID, "message": "add a comment to Sum in calc.go"})
	if err != nil || res.DialogID != d.ID {
		t.Fatalf("chat in %s: %+v, %v", d.ID, res, err)
	}
	var list []daemon.Dialog
	if err := s.Call(ctx, editor.MethodExecuteCommand, map[string]any{"command": "smith.dialogs"}, &list); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, x := range list {
		found = found || (x.ID == d.ID && x.Title == "renamed")
	}
	if !found {
		t.Errorf("dialog %s (renamed) not in %+v", d.ID, list)
	}
	var hist json.RawMessage
	if err := s.Call(ctx, editor.MethodHistory, map[string]any{"dialogId": d.ID}, &hist); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hist), "add a comment to Sum") {
		t.Errorf("history has not the message: %.300s", hist)
	}
	var approved json.RawMessage
	if err := s.Call(ctx, editor.MethodSessionApprove, map[string]any{"dialogId": d.ID}, &approved); err != nil {
		t.Fatalf("approve: %v", err)
	}
	if err := s.Call(ctx, editor.MethodDialogDelete, map[string]any{"dialogId": d.ID}, nil); err != nil {
		t.Fatal(err)
	}
	err = s.Call(ctx, editor.MethodDialogSelect, map[string]any{"dialogId": d.ID}, nil)
	if got := rpcCode(t, err); got != editor.CodeUnknownDialog {
		t.Errorf("selecting a deleted dialog: code %d, want %d (%v)", got, editor.CodeUnknownDialog, err)
	}
}

// TestSessionUnsupported: approve on an upstream without a session API.
func TestSessionUnsupported(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Dialect: protocol.DialectTextbook})
	s := serve(t, ws, up, t.TempDir(), "--dialect", "textbook")
	err := s.Call(testCtx(t), editor.MethodSessionApprove, map[string]any{"dialogId": "x"}, nil)
	if got := rpcCode(t, err); got != editor.CodeUnsupported {
		t.Errorf("code %d, want %d (%v)", got, editor.CodeUnsupported, err)
	}
}

// TestProgress: a turn run through executeCommand with a workDoneToken
// reports begin and end on that token; a smith/chat without one gets a
// token smith created (the fake editor announces window.workDoneProgress).
func TestProgress(t *testing.T) {
	t.Parallel()
	_, s := serveCalc(t)
	ctx := testCtx(t)
	var res chatResult
	if err := s.Call(ctx, editor.MethodExecuteCommand, map[string]any{
		"command": "smith.chat", "arguments": []any{map[string]any{"message": "add a comment to Sum in calc.go"}}, "workDoneToken": "tok-1",
	}, &res); err != nil {
		t.Fatal(err)
	}
	s.mustChat("add a comment to Sum in calc.go")
	kinds := map[string][]string{}
	for _, n := range s.Notifications(editor.MethodProgress) {
		var p struct {
			Token json.RawMessage `json:"token"`
			Value struct {
				Kind    string `json:"kind"`
				Message string `json:"message"`
			} `json:"value"`
		}
		json.Unmarshal(n.Params, &p)
		kinds[string(p.Token)] = append(kinds[string(p.Token)], p.Value.Kind+":"+p.Value.Message)
	}
	if len(kinds) != 2 {
		t.Fatalf("progress tokens %v, want tok-1 and one smith created", kinds)
	}
	for tok, ks := range kinds {
		if ks[0] != "begin:" || ks[len(ks)-1] != "end:completed" {
			t.Errorf("token %s: %v, want begin … end:completed", tok, ks)
		}
	}
	if _, ok := kinds[`"tok-1"`]; !ok {
		t.Errorf("the client's token was not used: %v", kinds)
	}
}

// TestCancelPropagatesToTheEditor: cancelling an apply while the editor
// still holds the workspace/applyEdit makes smith cancel that request too
// ($/cancelRequest server → client), and nothing is applied.
func TestCancelPropagatesToTheEditor(t *testing.T) {
	t.Parallel()
	_, s := serveCalc(t)
	ctx := testCtx(t)
	path := s.openCalc(ctx)
	res := s.mustChat("rename total to sum in calc.go")
	s.HoldEdits(true)
	call, err := s.CallRaw(editor.MethodChangeApply, map[string]any{"changeId": res.Changes[0]})
	if err != nil {
		t.Fatal(err)
	}
	for len(s.Edits()) == 0 { // the editor holds the edit now
		select {
		case <-ctx.Done():
			t.Fatal("no workspace/applyEdit arrived")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := s.Cancel(ctx, call.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitNotification(ctx, "$/cancelRequest", nil); err != nil {
		t.Fatalf("smith did not cancel its workspace/applyEdit: %v", err)
	}
	raw := <-call.Response
	if !strings.Contains(string(raw), `"error"`) {
		t.Errorf("a cancelled apply answered %s", raw)
	}
	if b, _ := s.Buffer(path); b.Text != calcGo {
		t.Errorf("the buffer changed:\n%s", b.Text)
	}
	if c := s.change(res.Changes[0]); c.Status != daemon.StatusPending {
		t.Errorf("status %s after a cancelled apply, want pending", c.Status)
	}
}

// TestEditorRefusesTheEdit: applied=false from the editor is a conflict
// and the change stays pending.
func TestEditorRefusesTheEdit(t *testing.T) {
	t.Parallel()
	ws, s := serveCalc(t)
	ctx := testCtx(t)
	if err := s.Open(ctx, filepath.Join(ws, "calc.go"), calcGo); err != nil {
		t.Fatal(err)
	}
	res := s.mustChat("rename total to sum in calc.go")
	s.RefuseEdits(true)
	err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": res.Changes[0]}, nil)
	if got := rpcCode(t, err); got != editor.CodeConflict {
		t.Fatalf("code %d, want %d (%v)", got, editor.CodeConflict, err)
	}
	if c := s.change(res.Changes[0]); c.Status != daemon.StatusPending {
		t.Errorf("status %s, want pending", c.Status)
	}
	s.RefuseEdits(false)
	if err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": res.Changes[0]}, nil); err != nil {
		t.Errorf("apply after the editor accepts again: %v", err)
	}
}

// TestProgressCancel: cancelling the turn's progress in the editor
// (window/workDoneProgress/cancel) cancels the turn.
func TestProgressCancel(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, DeltaDelay: 40 * time.Millisecond})
	s := serve(t, ws, up, t.TempDir())
	ctx := testCtx(t)
	call, err := s.CallRaw(editor.MethodChat, map[string]any{"message": "add a comment to Sum in calc.go", "workDoneToken": "tok-c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitNotification(ctx, editor.MethodEvent, isText); err != nil {
		t.Fatal(err)
	}
	if err := s.Notify(ctx, editor.MethodProgressCancel, map[string]any{"token": "tok-c"}); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Result chatResult `json:"result"`
	}
	select {
	case raw := <-call.Response:
		json.Unmarshal(raw, &resp)
	case <-ctx.Done():
		t.Fatal("the turn did not end")
	}
	if resp.Result.Outcome != protocol.OutcomeCancelled {
		t.Errorf("outcome %q, want cancelled", resp.Result.Outcome)
	}
}

// TestWatcherUpdatesTheEditor: a file edited behind smith's back makes the
// pending change a conflict, and the editor hears of it.
func TestWatcherUpdatesTheEditor(t *testing.T) {
	t.Parallel()
	ws, s := serveCalc(t)
	ctx := testCtx(t)
	res := s.mustChat("rename total to sum in calc.go")
	if err := os.WriteFile(filepath.Join(ws, "calc.go"), []byte("package calc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitNotification(ctx, editor.MethodChangeUpdated, func(raw json.RawMessage) bool {
		var p editor.ChangeUpdatedParams
		return json.Unmarshal(raw, &p) == nil && p.Change.ID == res.Changes[0] && p.Change.Status == daemon.StatusConflict
	}); err != nil {
		t.Fatalf("no smith/changeUpdated with status conflict: %v", err)
	}
}

// TestLimits: the per-editor limits of initializationOptions answer with
// their documented codes, and nothing is sent upstream for them.
func TestLimits(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, DeltaDelay: 40 * time.Millisecond})
	ed := startServe(t, up, t.TempDir())
	ctx := testCtx(t)
	if _, err := ed.Initialize(ctx, ws, map[string]any{"maxTurns": 1, "maxMessage": 40}); err != nil {
		t.Fatal(err)
	}
	s := &session{Editor: ed, t: t, ws: ws}
	_, err := s.chat(map[string]any{"message": strings.Repeat("long ", 20)})
	if got := rpcCode(t, err); got != editor.CodeMessageTooLong {
		t.Errorf("long message: code %d, want %d (%v)", got, editor.CodeMessageTooLong, err)
	}
	first, err := s.CallRaw(editor.MethodChat, map[string]any{"message": "add a comment to Sum in calc.go"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitNotification(ctx, editor.MethodEvent, nil); err != nil {
		t.Fatal(err)
	}
	var d daemon.Dialog
	if err := s.Call(ctx, editor.MethodDialogNew, map[string]any{}, &d); err != nil {
		t.Fatal(err)
	}
	_, err = s.chat(map[string]any{"dialogId": d.ID, "message": "rename total to sum in calc.go"})
	if got := rpcCode(t, err); got != editor.CodeTooManyTurns {
		t.Errorf("second turn with maxTurns 1: code %d, want %d (%v)", got, editor.CodeTooManyTurns, err)
	}
	s.Cancel(ctx, first.ID)
	<-first.Response
}
