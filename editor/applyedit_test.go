package editor

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.lsp.dev/jsonrpc2"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// clientWith builds a bare client (no connection) with a mirror and caps,
// enough for the edit builder.
func clientWith(caps clientCaps, enc PositionEncoding, docs map[string]document) *client {
	c := &client{docs: newDocuments(), enc: enc, caps: caps}
	for p, d := range docs {
		d := d
		c.docs.byPath[p] = &d
	}
	return c
}

func fullCaps() clientCaps {
	return clientCaps{applyEdit: true, documentChanges: true, resourceOps: map[string]bool{"create": true, "delete": true}}
}

func TestWorkspaceEdit(t *testing.T) {
	const path = "/w/a.go"
	open := map[string]document{path: {uri: "file:///w/a.go", version: 4, text: []byte("x := \"😀\"; total\n")}}
	v4 := int32(4)
	tests := []struct {
		name    string
		caps    clientCaps
		enc     PositionEncoding
		docs    map[string]document
		edits   []daemon.FileEdit
		want    []DocumentChange
		wantErr error
		// wantMsg is the error's text: it reaches the user inside the
		// engine's, which names files relative to the workspace (/w).
		wantMsg string
	}{
		{
			name:  "versioned edit in utf-16",
			caps:  fullCaps(),
			enc:   EncodingUTF16,
			docs:  open,
			edits: []daemon.FileEdit{{Path: path, Version: 4, OldText: []byte("x := \"😀\"; total\n"), NewText: []byte("x := \"😀\"; sum\n")}},
			want: []DocumentChange{{TextDocumentEdit: &TextDocumentEdit{
				TextDocument: OptionalVersionedTextDocumentIdentifier{URI: "file:///w/a.go", Version: &v4},
				Edits:        []TextEdit{{Range: Range{Start: Position{0, 11}, End: Position{0, 16}}, NewText: "sum"}},
			}}},
		},
		{
			name:  "the same in utf-8",
			caps:  fullCaps(),
			enc:   EncodingUTF8,
			docs:  open,
			edits: []daemon.FileEdit{{Path: path, Version: 4, OldText: []byte("x := \"😀\"; total\n"), NewText: []byte("x := \"😀\"; sum\n")}},
			want: []DocumentChange{{TextDocumentEdit: &TextDocumentEdit{
				TextDocument: OptionalVersionedTextDocumentIdentifier{URI: "file:///w/a.go", Version: &v4},
				Edits:        []TextEdit{{Range: Range{Start: Position{0, 13}, End: Position{0, 18}}, NewText: "sum"}},
			}}},
		},
		{
			name:    "stale version is a conflict",
			caps:    fullCaps(),
			docs:    open,
			edits:   []daemon.FileEdit{{Path: path, Version: 3, OldText: []byte("x := \"😀\"; total\n"), NewText: []byte("y\n")}},
			wantErr: daemon.ErrConflict,
			wantMsg: "a.go changed in the editor since the plan (version 4, planned against 3)",
		},
		{
			name:    "other text at the same version is a conflict",
			caps:    fullCaps(),
			docs:    open,
			edits:   []daemon.FileEdit{{Path: path, Version: 4, OldText: []byte("something else\n"), NewText: []byte("y\n")}},
			wantErr: daemon.ErrConflict,
		},
		{
			name:  "create with content",
			caps:  fullCaps(),
			edits: []daemon.FileEdit{{Path: "/w/new.txt", Create: true, NewText: []byte("hi\n")}},
			want: []DocumentChange{
				{CreateFile: &CreateFile{Kind: "create", URI: "file:///w/new.txt", Options: &CreateFileOptions{}}},
				{TextDocumentEdit: &TextDocumentEdit{TextDocument: OptionalVersionedTextDocumentIdentifier{URI: "file:///w/new.txt"}, Edits: []TextEdit{{NewText: "hi\n"}}}},
			},
		},
		{
			name:    "create without the capability",
			caps:    clientCaps{applyEdit: true, documentChanges: true},
			edits:   []daemon.FileEdit{{Path: "/w/new.txt", Create: true}},
			wantErr: daemon.ErrUnsupported,
			wantMsg: "the editor cannot create files (new.txt)",
		},
		{
			name:  "delete",
			caps:  fullCaps(),
			edits: []daemon.FileEdit{{Path: path, Delete: true}},
			want:  []DocumentChange{{DeleteFile: &DeleteFile{Kind: "delete", URI: "file:///w/a.go"}}},
		},
		{
			name:    "no applyEdit at all",
			caps:    clientCaps{},
			edits:   []daemon.FileEdit{{Path: path}},
			wantErr: daemon.ErrUnsupported,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clientWith(tt.caps, tt.enc, tt.docs)
			c.workspace = "/w"
			we, err := c.workspaceEdit(tt.edits)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if tt.wantMsg != "" && err.Error() != tt.wantMsg {
					t.Errorf("err says %q, want %q", err, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, we.DocumentChanges); diff != "" {
				t.Errorf("documentChanges (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDocumentHiddenWithoutVersionedEdits(t *testing.T) {
	docs := map[string]document{"/w/a.go": {version: 2, text: []byte("x")}}
	if _, _, open := clientWith(clientCaps{}, EncodingUTF16, docs).Document("/w/a.go"); open {
		t.Error("a client without applyEdit reports open buffers: the engine would try to edit them")
	}
	if text, v, open := clientWith(fullCaps(), EncodingUTF16, docs).Document("/w/a.go"); !open || v != 2 || string(text) != "x" {
		t.Errorf("Document = %q, %d, %v", text, v, open)
	}
}

func TestWireErrorCodes(t *testing.T) {
	tests := []struct {
		err  error
		code jsonrpc2.Code
	}{
		{fmt.Errorf("turn: %w", daemon.ErrDialogBusy), CodeDialogBusy},
		{daemon.ErrTooManyTurns, CodeTooManyTurns},
		{daemon.ErrMessageTooLong, CodeMessageTooLong},
		{daemon.ErrUnknownChange, CodeUnknownChange},
		{daemon.ErrUnknownDialog, CodeUnknownDialog},
		{fmt.Errorf("x: %w", daemon.ErrConflict), CodeConflict},
		{&EditRefusedError{Reason: "version"}, CodeConflict},
		{daemon.ErrUnsupported, CodeUnsupported},
		{fmt.Errorf("%w: %w", daemon.ErrUpstreamUnreachable, &protocol.UnreachableError{Method: "POST", URL: "http://x", Err: errors.New("refused")}), CodeUpstreamUnreachable},
		{daemon.ErrNoUpstream, CodeUpstreamUnreachable},
		{fmt.Errorf("%w: %w", daemon.ErrUpstream, &protocol.HTTPError{Status: 500, StatusMsg: "500 Internal Server Error"}), CodeUpstreamError},
		// The engine wraps the upstream client's errors; editor maps
		// only the engine's, so a bare one is a bug of smith's.
		{&protocol.HTTPError{Status: 500, StatusMsg: "500 Internal Server Error"}, jsonrpc2.InternalError},
		{fmt.Errorf("x: %w", daemon.ErrInvalidState), CodeInvalidState},
		{fmt.Errorf("x: %w", daemon.ErrStateCorrupt), CodeStateUnusable},
		{daemon.ErrStateLocked, CodeStateUnusable},
		{daemon.ErrEmptyMessage, jsonrpc2.InvalidParams},
		{invalidParams("bad"), jsonrpc2.InvalidParams},
		{errors.New("something else"), jsonrpc2.InternalError},
	}
	for _, tt := range tests {
		var e *jsonrpc2.Error
		if !errors.As(wireError(tt.err, nil), &e) || e.Code != tt.code {
			t.Errorf("wireError(%v) = %v, want code %d", tt.err, e, tt.code)
		}
	}
	e := wireError(daemon.ErrConflict, map[string]string{"outcome": "error"}).(*jsonrpc2.Error)
	if string(e.Data) != `{"outcome":"error"}` {
		t.Errorf("data = %s", e.Data)
	}
}
