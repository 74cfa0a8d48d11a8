package daemon

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/smith-dev/smith/protocol"
)

// TestServerWriteOutsideWorkspaceIsNotNothingWritten: a file the server
// wrote itself outside the workspace is reported as written by the server;
// "nothing was written" would be false.
func TestServerWriteOutsideWorkspaceIsNotNothingWritten(t *testing.T) {
	elsewhere := filepath.Join(t.TempDir(), "notes.md")
	replay := []byte(`data: {"dialog_id": "d1", "type": "user", "content": "x"}` + "\r\n\r\n" +
		`data: {"dialog_id": "d1", "type": "file_edit", "file": "` + elsewhere + `", "diff": "--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1 @@\n+hi\n"}` + "\r\n\r\n" +
		`data: {"dialog_id": "d1", "type": "done", "done": true}` + "\r\n\r\n")
	f := newFixture(t, fixtureOpts{protocol: "v2", replay: replay})
	res, evs := f.mustChat(f.e.Attach(nil), "anything")
	if len(res.Changes) != 1 {
		t.Fatalf("changes %v, want 1", res.Changes)
	}
	c, _ := f.e.Change(res.Changes[0])
	var told []string
	for _, ev := range evs {
		if ev.Type == protocol.KindViolation {
			told = append(told, ev.Violation.Message)
		}
	}
	told = append(told, c.Reason)
	for _, m := range told {
		if strings.Contains(m, "nothing was written") {
			t.Errorf("%q: the server did write the file", m)
		}
		if !strings.Contains(m, "the server itself wrote") {
			t.Errorf("%q does not say the server wrote the file", m)
		}
	}
}
