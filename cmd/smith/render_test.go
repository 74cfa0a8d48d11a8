package main

import (
	"strings"
	"testing"

	"github.com/smith-dev/smith/protocol"
)

// TestRendererShowsAToolCallOnce: status updates of one Oracle tool call
// (same id) are one line; a failure is still told.
func TestRendererShowsAToolCallOnce(t *testing.T) {
	var out, errw strings.Builder
	r := &turnRenderer{out: &out, errw: &errw}
	for _, st := range []string{"pending", "running", "done"} {
		r.Event(protocol.Event{Type: protocol.KindToolCall, ToolCall: &protocol.ToolCall{ID: "c1", Name: "search_code", Status: st}})
	}
	r.Event(protocol.Event{Type: protocol.KindToolCall, ToolCall: &protocol.ToolCall{ID: "c2", Name: "read_file", Status: "running"}})
	r.Event(protocol.Event{Type: protocol.KindToolCall, ToolCall: &protocol.ToolCall{ID: "c2", Name: "read_file", Status: "error"}})
	if n := strings.Count(errw.String(), "search_code"); n != 1 {
		t.Errorf("search_code shown %d times, want once:\n%s", n, errw.String())
	}
	if !strings.Contains(errw.String(), "tool read_file failed") {
		t.Errorf("the failed call is not told:\n%s", errw.String())
	}
}
