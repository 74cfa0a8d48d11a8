package main

import (
	"fmt"
	"testing"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// TestAdviceForABusyDialog: the engine's own busy dialog (a turn of this
// smith runs in it) gets the terminal's way out; the upstream's (a
// lifecycle server still answering an earlier message) says what to do
// itself, and the advice is not said twice.
func TestAdviceForABusyDialog(t *testing.T) {
	own := daemon.Errorf(daemon.ErrDialogBusy, "dialog d1 is running turn t1")
	if got := advice(own); got == "" {
		t.Errorf("advice for the engine's busy dialog is empty")
	}
	upstream := daemon.Errorf(daemon.ErrDialogBusy, "turn t2: %w", fmt.Errorf("lifecycle dialog d1 is still answering an earlier message: wait for that answer to end, or start a new dialog (%w)", protocol.ErrDialogBusy))
	if got := advice(upstream); got != "" {
		t.Errorf("advice for the upstream's busy dialog = %q, want none: its text says what to do", got)
	}
}
