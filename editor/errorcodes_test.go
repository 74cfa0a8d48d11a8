package editor_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/protocol"
)

// TestOrdinaryRefusalsHaveTheirCodes: refusals that are no bug of smith's
// get their documented code and a message saying what happened, never
// -32603 (InternalError): nothing to undo, applying a change that is not
// pending, and a state file that cannot be read at initialize. The code
// carries the kind; the message, which editors show, does not repeat it
// ("not possible in this state: ", "change conflict: ").
func TestOrdinaryRefusalsHaveTheirCodes(t *testing.T) {
	t.Parallel()
	ed, _ := startInProcess(t)
	ctx := testCtx(t)
	ws := workspace(t, map[string]string{"a.txt": "one\ntwo\n"})
	if _, err := ed.Initialize(ctx, ws, initOpts(t)); err != nil {
		t.Fatal(err)
	}
	err := ed.Call(ctx, editor.MethodUndo, map[string]any{}, nil)
	if got := rpcCode(t, err); got != editor.CodeInvalidState || rpcMessage(t, err) != "nothing to undo: smith has written no change in this workspace" {
		t.Errorf("undo with nothing written: %v (code %d), want %d", err, got, editor.CodeInvalidState)
	}
	// A patch that does not match is recorded rejected; applying it then
	// is a refusal of that state.
	bad := protocol.Change{Path: "a.txt", Kind: protocol.ChangeModify, Diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n zero\n-nine\n+ten\n"}
	err = ed.Call(ctx, editor.MethodPatchApply, &editor.PatchApplyParams{Changes: []protocol.Change{bad}}, nil)
	if got := rpcCode(t, err); got != editor.CodeConflict || strings.Contains(rpcMessage(t, err), "change conflict") || !strings.Contains(rpcMessage(t, err), "a.txt") {
		t.Errorf("a patch that does not match: %v (code %d), want %d and a message naming a.txt", err, got, editor.CodeConflict)
	}
	err = ed.Call(ctx, editor.MethodChangeApply, &editor.ChangeParams{ChangeID: "c1"}, nil)
	if got := rpcCode(t, err); got != editor.CodeInvalidState || !strings.HasPrefix(rpcMessage(t, err), "change c1 is rejected") {
		t.Errorf("apply a rejected change: %v (code %d), want %d", err, got, editor.CodeInvalidState)
	}
}

func TestCorruptStateFileAtInitialize(t *testing.T) {
	t.Parallel()
	ed, _ := startInProcess(t)
	ctx := testCtx(t)
	ws := workspace(t, nil)
	opts := initOpts(t)
	dir, err := daemon.StateDirOf(daemon.Config{Workspace: ws, StateDir: opts["stateDir"].(string)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ed.Initialize(ctx, ws, opts)
	if got := rpcCode(t, err); got != editor.CodeStateUnusable || !strings.Contains(err.Error(), "state.json") {
		t.Errorf("initialize over a corrupt state file: %v (code %d), want %d naming the file", err, got, editor.CodeStateUnusable)
	}
}

// TestRefusedPathSaysWhatToDo: a patch naming a path smith may not write
// (outside the workspace, inside .git) is refused with InvalidParams and
// a message that says what happened to which path and what to do next,
// in the words smith apply and smith changes use.
func TestRefusedPathSaysWhatToDo(t *testing.T) {
	t.Parallel()
	ed, _ := startInProcess(t)
	ctx := testCtx(t)
	ws := workspace(t, map[string]string{"a.txt": "one\n"})
	if _, err := ed.Initialize(ctx, ws, initOpts(t)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, rule string }{
		{"../evil.txt", "it contains a '..' component"},
		{".git/hooks/pre-commit", "it is inside .git"},
	} {
		ch := protocol.Change{Path: tt.path, Kind: protocol.ChangeCreate, Content: "x\n"}
		err := ed.Call(ctx, editor.MethodPatchApply, &editor.PatchApplyParams{Changes: []protocol.Change{ch}}, nil)
		want := "refusing path \"" + tt.path + "\": " + tt.rule + "; nothing was written: fix the change's path (smith writes only regular files under the workspace, outside .git and its own state)"
		if got := rpcCode(t, err); got != -32602 || rpcMessage(t, err) != want {
			t.Errorf("%s: code %d, message\n got %s\nwant %s", tt.path, got, rpcMessage(t, err), want)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ws), "evil.txt")); err == nil {
		t.Error("evil.txt was written outside the workspace")
	}
}
