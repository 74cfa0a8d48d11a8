package editor_test

// Integration tests: a real `smith serve` process (built once per run),
// spoken to over its stdin/stdout (or a Unix socket) by the fake editor of
// package editortest, against the embedded upstream on loopback.

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/editor/editortest"
	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// calcGo has "total" on lines far apart, so that renaming it gives a diff
// with two hunks.
const calcGo = `package calc

// Sum adds numbers.
func Sum(xs []int) int {
	total := 0
	for _, x := range xs {
		x = x
	}
	// padding
	// padding
	// padding
	// padding
	// padding
	// padding
	// padding
	// padding
	return total
}
`

// workspace writes files into a new temporary directory.
func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	ws := t.TempDir()
	for name, text := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// startUpstream serves the embedded upstream for ws on loopback.
func startUpstream(t *testing.T, opts upstream.Options) string {
	t.Helper()
	s, err := upstream.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	return hs.URL
}

// session is a fake editor attached to a smith serve process.
type session struct {
	*editortest.Editor
	t        *testing.T
	ws       string
	stateDir string
	served   <-chan struct{} // closed when the in-process server has ended the connection
}

// serveCalc serves a workspace holding calc.go against a legacy (v0)
// upstream, which proposes diffs rather than writing files: the setup of
// most tests here.
func serveCalc(t *testing.T) (ws string, s *session) {
	ws = workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV0})
	return ws, serve(t, ws, up, t.TempDir())
}

// openCalc opens the session workspace's calc.go with its text on disk and
// returns its path.
func (s *session) openCalc(ctx context.Context) string {
	s.t.Helper()
	path := filepath.Join(s.ws, "calc.go")
	if err := s.Open(ctx, path, calcGo); err != nil {
		s.t.Fatal(err)
	}
	return path
}

// serve starts smith serve for ws against up and initializes it.
func serve(t *testing.T, ws, up, stateDir string, extra ...string) *session {
	t.Helper()
	ed, done := startServeDone(t, up, stateDir, extra...)
	if _, err := ed.Initialize(testCtx(t), ws, nil); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return &session{Editor: ed, t: t, ws: ws, stateDir: stateDir, served: done}
}

type chatResult struct {
	DialogID string           `json:"dialogId"`
	TurnID   string           `json:"turnId"`
	Outcome  protocol.Outcome `json:"outcome"`
	Text     string           `json:"text"`
	Changes  []string         `json:"changes"`
}

func (s *session) chat(params map[string]any) (*chatResult, error) {
	var res chatResult
	err := s.Call(testCtx(s.t), editor.MethodChat, params, &res)
	return &res, err
}

func (s *session) mustChat(message string) *chatResult {
	s.t.Helper()
	res, err := s.chat(map[string]any{"message": message})
	if err != nil {
		s.t.Fatalf("smith/chat %q: %v", message, err)
	}
	if res.Outcome != protocol.OutcomeCompleted {
		s.t.Fatalf("smith/chat %q: outcome %s, text %q", message, res.Outcome, res.Text)
	}
	return res
}

func (s *session) change(id string) daemon.Change {
	s.t.Helper()
	var all []daemon.Change
	if err := s.Call(testCtx(s.t), editor.MethodChanges, map[string]any{}, &all); err != nil {
		s.t.Fatal(err)
	}
	for _, c := range all {
		if c.ID == id {
			return c
		}
	}
	s.t.Fatalf("change %s not listed in %+v", id, all)
	return daemon.Change{}
}

// events returns the smith/event notifications of a turn, in arrival order.
func (s *session) events(turnID string) []editor.EventParams {
	var out []editor.EventParams
	for _, n := range s.Notifications(editor.MethodEvent) {
		var ev editor.EventParams
		if err := json.Unmarshal(n.Params, &ev); err != nil {
			s.t.Fatalf("smith/event %s: %v", n.Params, err)
		}
		if ev.TurnID == turnID {
			out = append(out, ev)
		}
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTurnStreamsEvents(t *testing.T) {
	t.Parallel()
	ws, s := serveCalc(t)
	res := s.mustChat("rename total to sum in calc.go")

	evs := s.events(res.TurnID)
	if len(evs) < 3 {
		t.Fatalf("only %d events streamed", len(evs))
	}
	var text strings.Builder
	for i, ev := range evs {
		if ev.Seq != int64(i+1) || ev.Event.Seq != ev.Seq || ev.DialogID != res.DialogID {
			t.Errorf("event %d: seq %d (event seq %d), dialog %q; want seq %d, dialog %q", i, ev.Seq, ev.Event.Seq, ev.DialogID, i+1, res.DialogID)
		}
		if ev.Event.Type == protocol.KindText {
			text.WriteString(ev.Event.Text)
		}
	}
	last := evs[len(evs)-1].Event
	if last.Type != protocol.KindTurnEnd || last.TurnEnd.Outcome != protocol.OutcomeCompleted {
		t.Errorf("last event %+v, want turnEnd completed", last)
	}
	if text.String() != res.Text || res.Text == "" {
		t.Errorf("streamed text %q, result text %q", text.String(), res.Text)
	}
	if len(res.Changes) != 1 {
		t.Fatalf("changes %v, want one", res.Changes)
	}
	c := s.change(res.Changes[0])
	if c.Path != "calc.go" || c.Status != daemon.StatusPending || len(c.Hunks) != 2 {
		t.Errorf("change %+v, want calc.go pending with 2 hunks", c)
	}
	if got := readFile(t, filepath.Join(ws, "calc.go")); got != calcGo {
		t.Errorf("a proposal was written to disk:\n%s", got)
	}
}

// TestApplyToOpenBufferAndToDisk applies a legacy-v0 diff to a file open in
// the editor (with unsaved edits: the plan must follow the buffer, and the
// disk must stay as it was) and to a closed file (written on disk).
func TestApplyToOpenBufferAndToDisk(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"calc.go": calcGo, "other.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV0})
	s := serve(t, ws, up, t.TempDir())
	ctx := testCtx(t)
	calc := filepath.Join(ws, "calc.go")
	unsaved := "// unsaved line typed by the user 😀\n" + calcGo
	if err := s.Open(ctx, calc, calcGo); err != nil {
		t.Fatal(err)
	}
	if err := s.ChangeRange(ctx, calc, 0, 0, 0, 0, "// unsaved line typed by the user 😀\n"); err != nil {
		t.Fatal(err)
	}

	open := s.mustChat("rename total to sum in calc.go")
	var applied daemon.Change
	if err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": open.Changes[0]}, &applied); err != nil {
		t.Fatalf("apply to the open buffer: %v", err)
	}
	want := strings.ReplaceAll(unsaved, "total", "sum")
	if b, _ := s.Buffer(calc); b.Text != want || b.Version != 3 {
		t.Errorf("buffer (version %d):\n%s\nwant (version 3):\n%s", b.Version, b.Text, want)
	}
	if len(s.Edits()) != 1 {
		t.Errorf("%d workspace/applyEdit requests, want 1", len(s.Edits()))
	}
	if got := readFile(t, calc); got != calcGo {
		t.Errorf("the open file was written on disk:\n%s", got)
	}
	if applied.Status != daemon.StatusApplied {
		t.Errorf("status %s, want applied", applied.Status)
	}

	closed := s.mustChat("rename total to sum in other.go")
	if err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": closed.Changes[0]}, nil); err != nil {
		t.Fatalf("apply to a closed file: %v", err)
	}
	if got := readFile(t, filepath.Join(ws, "other.go")); got != strings.ReplaceAll(calcGo, "total", "sum") {
		t.Errorf("other.go on disk:\n%s", got)
	}
	if len(s.Edits()) != 1 {
		t.Errorf("a closed file went through workspace/applyEdit")
	}
}

func TestApplyOneHunkThenTheRest(t *testing.T) {
	t.Parallel()
	ws, s := serveCalc(t)
	ctx := testCtx(t)
	res := s.mustChat("rename total to sum in calc.go")
	c := s.change(res.Changes[0])
	if len(c.Hunks) != 2 {
		t.Fatalf("hunks %+v, want 2", c.Hunks)
	}
	var after daemon.Change
	if err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": c.ID, "hunks": []string{c.Hunks[0].ID}}, &after); err != nil {
		t.Fatal(err)
	}
	first := strings.Replace(calcGo, "total := 0", "sum := 0", 1)
	if got := readFile(t, filepath.Join(ws, "calc.go")); got != first {
		t.Errorf("after hunk 1:\n%s", got)
	}
	if after.Hunks[0].Status != daemon.StatusApplied || after.Hunks[1].Status != daemon.StatusPending {
		t.Errorf("hunk statuses %s, %s; want applied, pending", after.Hunks[0].Status, after.Hunks[1].Status)
	}
	if err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": c.ID}, &after); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(ws, "calc.go")); got != strings.ReplaceAll(calcGo, "total", "sum") {
		t.Errorf("after the rest:\n%s", got)
	}
}

func TestPreviewAndReject(t *testing.T) {
	t.Parallel()
	ws, s := serveCalc(t)
	ctx := testCtx(t)
	res := s.mustChat("rename total to sum in calc.go")
	var pv daemon.Preview
	if err := s.Call(ctx, editor.MethodChangePreview, map[string]any{"changeId": res.Changes[0]}, &pv); err != nil {
		t.Fatal(err)
	}
	if pv.Original != calcGo || pv.Result != strings.ReplaceAll(calcGo, "total", "sum") || !strings.Contains(pv.Diff, "+\tsum := 0") {
		t.Errorf("preview %+v", pv)
	}
	var rejected daemon.Change
	if err := s.Call(ctx, editor.MethodChangeReject, map[string]any{"changeId": res.Changes[0]}, &rejected); err != nil {
		t.Fatal(err)
	}
	if rejected.Status != daemon.StatusRejected {
		t.Errorf("status %s, want rejected", rejected.Status)
	}
	if got := readFile(t, filepath.Join(ws, "calc.go")); got != calcGo {
		t.Errorf("reject wrote the file:\n%s", got)
	}
	err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": res.Changes[0]}, nil)
	if err == nil {
		t.Error("a rejected change was applied")
	}
}

func TestUndoAfterRestart(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV0})
	state := t.TempDir()
	ctx := testCtx(t)

	s := serve(t, ws, up, state)
	res := s.mustChat("rename total to sum in calc.go")
	if err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": res.Changes[0]}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Call(ctx, editor.MethodShutdown, nil, nil); err != nil {
		t.Fatal(err)
	}
	s.Notify(ctx, editor.MethodExit, nil)
	select {
	case <-s.served:
	case <-ctx.Done():
		t.Fatal("the server did not end the connection after exit")
	}

	s2 := serve(t, ws, up, state)
	var undone daemon.Change
	if err := s2.Call(ctx, editor.MethodUndo, map[string]any{"changeId": res.Changes[0]}, &undone); err != nil {
		t.Fatalf("undo after restart: %v", err)
	}
	if got := readFile(t, filepath.Join(ws, "calc.go")); got != calcGo {
		t.Errorf("after undo:\n%s", got)
	}
	if undone.Status != daemon.StatusUndone {
		t.Errorf("status %s, want undone", undone.Status)
	}
}

func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, DeltaDelay: 40 * time.Millisecond})
	s := serve(t, ws, up, t.TempDir())
	ctx := testCtx(t)
	call, err := s.CallRaw(editor.MethodChat, map[string]any{"message": "add a comment to Sum in calc.go"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitNotification(ctx, editor.MethodEvent, isText); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, call.ID); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Result chatResult      `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	select {
	case raw := <-call.Response:
		if err := json.Unmarshal(raw, &resp); err != nil || resp.Error != nil {
			t.Fatalf("response %s: %v", raw, err)
		}
	case <-ctx.Done():
		t.Fatal("no response to the cancelled chat")
	}
	if resp.Result.Outcome != protocol.OutcomeCancelled || resp.Result.Text == "" {
		t.Errorf("result %+v, want outcome cancelled with the partial text", resp.Result)
	}
	evs := s.events(resp.Result.TurnID)
	if last := evs[len(evs)-1].Event; last.Type != protocol.KindTurnEnd || last.TurnEnd.Outcome != protocol.OutcomeCancelled {
		t.Errorf("last event %+v, want turnEnd cancelled", last)
	}
	// The daemon serves on: the next turn completes.
	s.mustChat("rename total to sum in calc.go")
}

func isText(raw json.RawMessage) bool {
	var ev editor.EventParams
	return json.Unmarshal(raw, &ev) == nil && ev.Event.Type == protocol.KindText
}

func TestDialogBusy(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, DeltaDelay: 40 * time.Millisecond})
	s := serve(t, ws, up, t.TempDir())
	ctx := testCtx(t)
	first, err := s.CallRaw(editor.MethodChat, map[string]any{"message": "add a comment to Sum in calc.go"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.WaitNotification(ctx, editor.MethodEvent, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ev editor.EventParams
	json.Unmarshal(n.Params, &ev)
	_, err = s.chat(map[string]any{"dialogId": ev.DialogID, "message": "rename total to sum in calc.go"})
	if got := rpcCode(t, err); got != editor.CodeDialogBusy {
		t.Errorf("second turn in a busy dialog: code %d, want %d (%v)", got, editor.CodeDialogBusy, err)
	}
	s.Cancel(ctx, first.ID)
	select {
	case <-first.Response:
	case <-ctx.Done():
		t.Fatal("the first turn did not end")
	}
}

func TestConflictWhenTheFileChangedBeforeApply(t *testing.T) {
	t.Parallel()
	ws, s := serveCalc(t)
	ctx := testCtx(t)
	res := s.mustChat("rename total to sum in calc.go")
	// Both hunks' lines are edited: the watcher may re-plan the change
	// before the apply arrives, and a change with one hunk still pending
	// would then apply that hunk (the documented "all pending hunks").
	changed := strings.Replace(calcGo, "total := 0", "total := 1 // edited meanwhile", 1)
	changed = strings.Replace(changed, "return total", "return total + 0 // edited meanwhile", 1)
	path := filepath.Join(ws, "calc.go")
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": res.Changes[0]}, nil)
	if got := rpcCode(t, err); got != editor.CodeConflict {
		t.Fatalf("apply after an edit: code %d, want %d (%v)", got, editor.CodeConflict, err)
	}
	if got := readFile(t, path); got != changed {
		t.Errorf("a conflicting apply wrote the file:\n%s", got)
	}
}

func TestConflictWhenTheBufferChangedBeforeApply(t *testing.T) {
	t.Parallel()
	_, s := serveCalc(t)
	ctx := testCtx(t)
	path := s.openCalc(ctx)
	res := s.mustChat("rename total to sum in calc.go")
	// The user rewrites the line the first hunk changes.
	if err := s.ChangeRange(ctx, path, 4, 1, 4, 11, "total := 1"); err != nil {
		t.Fatal(err)
	}
	err := s.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": res.Changes[0]}, nil)
	if got := rpcCode(t, err); got != editor.CodeConflict {
		t.Fatalf("apply after a buffer edit: code %d, want %d (%v)", got, editor.CodeConflict, err)
	}
	if b, _ := s.Buffer(path); !strings.Contains(b.Text, "total := 1") || len(s.Edits()) != 0 {
		t.Errorf("buffer touched by a conflicting apply (%d edits):\n%s", len(s.Edits()), b.Text)
	}
}

// TestServerWrittenChange: an AgentSmithy v2 server writes the file itself
// (file_edit); smith shows the change as applied upstream, and rejecting
// one hunk reverse-applies exactly that hunk.
func TestServerWrittenChange(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Protocol: upstream.ProtocolV2})
	s := serve(t, ws, up, t.TempDir())
	ctx := testCtx(t)
	res := s.mustChat("rename total to sum in calc.go")
	path := filepath.Join(ws, "calc.go")
	if got := readFile(t, path); got != strings.ReplaceAll(calcGo, "total", "sum") {
		t.Fatalf("the upstream did not write calc.go:\n%s", got)
	}
	c := s.change(res.Changes[0])
	if c.Status != daemon.StatusAppliedUpstream || len(c.Hunks) != 2 {
		t.Fatalf("change %+v, want appliedUpstream with 2 hunks", c)
	}
	// The editor is told to reload the file the server wrote.
	if _, err := s.WaitNotification(ctx, editor.MethodFileChanged, func(raw json.RawMessage) bool {
		var p editor.FileChangedParams
		return json.Unmarshal(raw, &p) == nil && p.Path == path && p.URI == editor.DocumentURI(editortest.FileURI(path))
	}); err != nil {
		t.Errorf("no smith/fileChanged for %s: %v", path, err)
	}
	var after daemon.Change
	if err := s.Call(ctx, editor.MethodChangeReject, map[string]any{"changeId": c.ID, "hunks": []string{c.Hunks[1].ID}}, &after); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(calcGo, "total := 0", "sum := 0", 1)
	if got := readFile(t, path); got != want {
		t.Errorf("after rejecting hunk 2:\n%s\nwant:\n%s", got, want)
	}
	if after.Hunks[1].Status != daemon.StatusRejected {
		t.Errorf("hunk 2 status %s, want rejected", after.Hunks[1].Status)
	}
}

// TestUpstreamFailures: each broken upstream ends the turn with the right
// outcome (or error) and the daemon keeps serving.
func TestUpstreamFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		faults  string // "" with refused: nothing listens
		refused bool
		code    int64            // expected JSON-RPC error code, 0 for a result
		outcome protocol.Outcome // of the result, or of the error's data
	}{
		{name: "refused", refused: true, code: int64(editor.CodeUpstreamUnreachable), outcome: protocol.OutcomeError},
		{name: "http 500", faults: "http-500", code: int64(editor.CodeUpstreamError), outcome: protocol.OutcomeError},
		{name: "cut mid-event", faults: "cut-mid-event", outcome: protocol.OutcomeInterrupted},
		{name: "stalled", faults: "stall=30", outcome: protocol.OutcomeInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t, map[string]string{"calc.go": calcGo})
			up := "http://127.0.0.1:1"
			if !tt.refused {
				faults, err := upstream.ParseFaults(tt.faults)
				if err != nil {
					t.Fatal(err)
				}
				up = startUpstream(t, upstream.Options{Workspace: ws, Faults: faults})
			}
			s := serve(t, ws, up, t.TempDir(), "--idle-timeout", "500ms")
			ctx := testCtx(t)
			var raw json.RawMessage
			err := s.Call(ctx, editor.MethodChat, map[string]any{"message": "add a comment to Sum in calc.go"}, &raw)
			var res chatResult
			if tt.code != 0 {
				if got := rpcCode(t, err); int64(got) != tt.code {
					t.Fatalf("code %d, want %d (%v)", got, tt.code, err)
				}
				res = errorData(t, err)
			} else {
				if err != nil {
					t.Fatalf("smith/chat: %v", err)
				}
				json.Unmarshal(raw, &res)
			}
			if res.Outcome != tt.outcome {
				t.Errorf("outcome %q, want %q", res.Outcome, tt.outcome)
			}
			var st daemon.Status
			if err := s.Call(ctx, editor.MethodStatus, nil, &st); err != nil {
				t.Fatalf("the daemon stopped serving: %v", err)
			}
			if st.RunningTurns != 0 {
				t.Errorf("%d turns still running", st.RunningTurns)
			}
		})
	}
}

// errorData decodes the turn attached to a smith/chat error.
func errorData(t *testing.T, err error) chatResult {
	t.Helper()
	var res chatResult
	rpcErr := asRPC(t, err)
	if len(rpcErr.Data) == 0 {
		t.Fatalf("error %v has no data", err)
	}
	if err := json.Unmarshal(rpcErr.Data, &res); err != nil {
		t.Fatalf("error data %s: %v", rpcErr.Data, err)
	}
	return res
}
