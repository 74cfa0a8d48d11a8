package editor

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.lsp.dev/jsonrpc2"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/wire")

// TestWireGolden pins the exact JSON smith sends, encoded by the codec
// the connection uses: field names, nulls that must not be omitted
// (a text document edit of a new file has "version": null), and empty
// lists that must be [] rather than absent.
func TestWireGolden(t *testing.T) {
	v7 := int32(7)
	cases := map[string]any{
		"applyedit.json": &ApplyWorkspaceEditParams{Label: "smith: apply c1 to a.go", Edit: WorkspaceEdit{DocumentChanges: []DocumentChange{
			{TextDocumentEdit: &TextDocumentEdit{
				TextDocument: OptionalVersionedTextDocumentIdentifier{URI: "file:///w/a.go", Version: &v7},
				Edits:        []TextEdit{{Range: Range{Start: Position{4, 1}, End: Position{4, 6}}, NewText: "sum"}},
			}},
			{CreateFile: &CreateFile{Kind: ResourceCreate, URI: "file:///w/new.go", Options: &CreateFileOptions{}}},
			{TextDocumentEdit: &TextDocumentEdit{
				TextDocument: OptionalVersionedTextDocumentIdentifier{URI: "file:///w/new.go"},
				Edits:        []TextEdit{{NewText: "package w\n"}},
			}},
			{DeleteFile: &DeleteFile{Kind: ResourceDelete, URI: "file:///w/old.go"}},
		}}},
		"event.json": &EventParams{DialogID: "d1", TurnID: "t1", Seq: 3, Event: protocol.Event{
			Type: protocol.KindText, DialogID: "d1", TurnID: "t1", Seq: 3, Text: "Hel",
		}},
		"chatresult.json": &daemon.ChatResult{DialogID: "d1", TurnID: "t1", Outcome: protocol.OutcomeCompleted, Text: "done"},
		"changeupdated.json": &ChangeUpdatedParams{Change: daemon.Change{
			ID: "c1", DialogID: "d1", TurnID: "t1", Path: "a.go", Kind: protocol.ChangeModify, Status: daemon.StatusPending,
			Diff: "--- a/a.go\n+++ b/a.go\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
			Hunks: []daemon.Hunk{{ID: "h1", Header: "@@ -1,3 +1,3 @@", Status: daemon.StatusPending, Match: "exact",
				OldStart: 1, OldLines: 3, NewStart: 1, NewLines: 3, Text: "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"}},
		}},
		"progress.json": &ProgressParams{Token: ProgressToken(`"smith-1"`), Value: WorkDoneProgress{Kind: "begin", Title: "smith: hi", Cancellable: true}},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			raw, err := (codec{}).Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := json.Indent(&got, raw, "", "  "); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			got.WriteByte('\n')
			path := filepath.Join("testdata", "wire", name)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("%s (-golden +got):\n%s", name, diff)
			}
		})
	}
}

// TestCodecInvalidUTF8: text that is not UTF-8 is carried with U+FFFD in
// both directions instead of failing the message.
func TestCodecInvalidUTF8(t *testing.T) {
	raw, err := (codec{}).Marshal(&daemon.Preview{Path: "l1.txt", Original: "caf\xe9\n"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("caf\uFFFD\\n")) {
		t.Errorf("encoded %s", raw)
	}
	var p DidOpenTextDocumentParams
	if err := (codec{}).Unmarshal([]byte("{\"textDocument\":{\"uri\":\"file:///a\",\"text\":\"caf\xe9\"}}"), &p); err != nil {
		t.Fatal(err)
	}
	if p.TextDocument.Text != "caf\uFFFD" {
		t.Errorf("decoded %q", p.TextDocument.Text)
	}
	var r jsonrpc2.RawMessage
	if err := (codec{}).Unmarshal([]byte(`{"a": 1}`), &r); err != nil || string(r) != `{"a": 1}` {
		t.Errorf("raw message: %s, %v", r, err)
	}
}
