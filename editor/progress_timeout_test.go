package editor_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// TestServeEndsATurnWithoutProgress: through smith serve, an upstream
// that sends only keep-alives (every 100 ms, well inside --idle-timeout)
// no longer holds the turn and its dialog for good: --progress-timeout
// ends it interrupted with the reason, and the dialog takes the next
// message.
func TestServeEndsATurnWithoutProgress(t *testing.T) {
	t.Parallel()
	ws := workspace(t, map[string]string{"calc.go": calcGo})
	up := startUpstream(t, upstream.Options{Workspace: ws, Faults: []upstream.Fault{{Name: "pings-only", Arg: "0.1"}}})
	s := serve(t, ws, up, t.TempDir(), "--idle-timeout", "500ms", "--progress-timeout", "1500ms")
	ctx := testCtx(t)
	first, err := s.chat(map[string]any{"message": "add a comment to Sum in calc.go"})
	if err != nil {
		t.Fatalf("smith/chat: %v", err)
	}
	if first.Outcome != protocol.OutcomeInterrupted {
		t.Fatalf("outcome %s, want interrupted", first.Outcome)
	}
	end, err := s.WaitNotification(ctx, editor.MethodEvent, func(raw json.RawMessage) bool {
		return strings.Contains(string(raw), `"turnEnd"`)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(end.Params), "no event for 1.5s") {
		t.Errorf("turnEnd does not give the reason: %s", end.Params)
	}
	var st daemon.Status
	if err := s.Call(ctx, editor.MethodStatus, nil, &st); err != nil {
		t.Fatal(err)
	}
	if st.RunningTurns != 0 {
		t.Errorf("%d turns still running", st.RunningTurns)
	}
	second, err := s.chat(map[string]any{"message": "and again", "dialogId": first.DialogID})
	if err != nil {
		t.Fatalf("the dialog is still busy: %v", err)
	}
	if second.Outcome != protocol.OutcomeInterrupted {
		t.Errorf("second turn: outcome %s", second.Outcome)
	}
}
