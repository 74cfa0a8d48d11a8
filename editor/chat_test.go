package editor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/smith-dev/smith/protocol"
)

// TestChatContext: the editor's context becomes the upstream's
// current_file, from the open buffer when there is one (unsaved text
// included), else from disk, with the selection cut in the negotiated
// encoding.
func TestChatContext(t *testing.T) {
	dir := t.TempDir()
	onDisk := filepath.Join(dir, "disk.py")
	if err := os.WriteFile(onDisk, []byte("print('hi')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open.go")
	c := clientWith(fullCaps(), EncodingUTF16, map[string]document{
		canonicalPath(open): {languageID: "go", version: 3, text: []byte("a := \"😀\" + unsaved\n")},
	})
	tests := []struct {
		name string
		in   *ChatContext
		want *protocol.ChatContext
	}{
		{"none", nil, nil},
		{"open buffer with a selection after an emoji", &ChatContext{
			URI:       pathToURI(open),
			Selection: &Range{Start: Position{0, 12}, End: Position{0, 19}},
		}, &protocol.ChatContext{CurrentFile: &protocol.CurrentFile{
			Path: open, Language: "go", Content: "a := \"😀\" + unsaved\n", Selection: "unsaved",
		}}},
		{"file on disk", &ChatContext{URI: pathToURI(onDisk)}, &protocol.ChatContext{CurrentFile: &protocol.CurrentFile{
			Path: onDisk, Language: "python", Content: "print('hi')\n",
		}}},
		{"not a file URI", &ChatContext{URI: "untitled:1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, c.chatContext(tt.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8765":             "http://127.0.0.1:8765",
		"https://me:secret@example.com/api": "https://me:xxxxx@example.com/api",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
