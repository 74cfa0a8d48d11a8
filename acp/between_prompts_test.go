package acp_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/smith-dev/smith/protocol/upstream"
)

// TestNoClientRequestBetweenPrompts: smith acp sent fs/read_text_file
// after it had answered a prompt with end_turn: the engine's watcher,
// re-validating the change of a file the prompt wrote (or the user saved
// later), read the file through the client. A client may be gone by then
// (acpx exits at end_turn and printed "Request cancelled"). smith talks
// to the client only while it answers one of its requests; between
// prompts the watcher reads the disk.
func TestNoClientRequestBetweenPrompts(t *testing.T) {
	f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
	var prompting atomic.Int32
	var mu sync.Mutex
	var outside []string
	c := &client{fs: true, save: true}
	c.onRead = func(p sdk.ReadTextFileRequest) error {
		// Before the answer to this read, so before the prompt's own
		// answer, which smith sends only after it has this one.
		if prompting.Load() == 0 {
			mu.Lock()
			outside = append(outside, p.Path)
			mu.Unlock()
		}
		return nil
	}
	c.onWrite = func(p sdk.WriteTextFileRequest) error {
		if prompting.Load() == 0 {
			mu.Lock()
			outside = append(outside, "write "+p.Path)
			mu.Unlock()
		}
		return nil
	}
	p := start(t, f, c)
	sid := p.session(t, f)
	prompt := func(text string) {
		t.Helper()
		prompting.Add(1)
		defer prompting.Add(-1)
		if r := p.prompt(t, sid, text); r.StopReason != sdk.StopReasonEndTurn {
			t.Fatalf("%s: stopReason %q", text, r.StopReason)
		}
	}
	prompt("rename total to subtotal in main.go")
	if got := f.read(t, "main.go"); got != renamed {
		t.Fatalf("the rename was not written:\n%s", got)
	}
	prompt("/undo")
	if got := f.read(t, "main.go"); got != mainGo {
		t.Fatalf("/undo did not restore main.go:\n%s", got)
	}

	// The user edits main.go in the editor and saves it: the watcher
	// re-validates the undone change c1 against it, with no prompt running.
	abs := filepath.Join(f.ws, "main.go")
	edited := mainGo + "// edited\n"
	if err := c.edit(abs, edited); err != nil {
		t.Fatal(err)
	}
	p.waitStderr(t, fmt.Sprintf("change=c1 path=main.go bytes=%d", len(edited)))

	mu.Lock()
	defer mu.Unlock()
	if len(outside) > 0 {
		t.Errorf("smith sent fs/* requests while no prompt was running: %v", slices.Compact(outside))
	}
}
