package main

import (
	"strings"
	"testing"

	"github.com/smith-dev/smith/protocol"
)

func TestInvertDiff(t *testing.T) {
	in := "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@ func x\n a\n-old\n+new\n c\n@@ -9 +9,2 @@\n-z\n\\ No newline at end of file\n+z\n+w\n"
	want := "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@ func x\n a\n-new\n+old\n c\n@@ -9,2 +9 @@\n-z\n-w\n+z\n\\ No newline at end of file\n"
	if got := invertDiff(in); got != want {
		t.Errorf("invertDiff:\n%s\nwant:\n%s", got, want)
	}
	if got := invertDiff(invertDiff(want)); got != want {
		t.Errorf("invert twice changed the diff:\n%s", got)
	}
	create := "--- /dev/null\n+++ b/new\n@@ -0,0 +1 @@\n+x\n"
	if got, want := invertDiff(create), "--- a/new\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"; got != want {
		t.Errorf("invertDiff(create) = %q, want %q", got, want)
	}
}

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
