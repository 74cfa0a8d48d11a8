package editor

import (
	"encoding/json"
	"fmt"
)

// The LSP types smith speaks, written by hand because go.lsp.dev/protocol
// cannot be built against jsonrpc2 v1 (it needs the v0.10 API under the
// same module path). Field names and JSON tags follow the LSP 3.17
// specification exactly; only the fields smith reads or writes are here.
// Payloads are encoded with jsonrpc2's default codec (encoding/json/v2):
// names match case-sensitively and a nil slice encodes as [].

// DocumentURI is a "file://" URI.
type DocumentURI string

// Position is a zero-based line and character offset. Character counts
// code units of the negotiated PositionEncoding (UTF-16 by default).
type Position struct {
	Line      uint32 `json:"line"`
	Character uint32 `json:"character"`
}

// Range is a half-open range [Start, End).
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// PositionEncoding names how Position.Character counts.
type PositionEncoding string

const (
	EncodingUTF16 PositionEncoding = "utf-16"
	EncodingUTF8  PositionEncoding = "utf-8"
	EncodingUTF32 PositionEncoding = "utf-32"
)

// TextEdit replaces Range with NewText.
type TextEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// TextDocumentIdentifier names a document.
type TextDocumentIdentifier struct {
	URI DocumentURI `json:"uri"`
}

// VersionedTextDocumentIdentifier names a document at a version.
type VersionedTextDocumentIdentifier struct {
	URI     DocumentURI `json:"uri"`
	Version int32       `json:"version"`
}

// OptionalVersionedTextDocumentIdentifier names a document at a version,
// or at any version when Version is nil (encoded as null, never omitted).
type OptionalVersionedTextDocumentIdentifier struct {
	URI     DocumentURI `json:"uri"`
	Version *int32      `json:"version"`
}

// TextDocumentItem is a document as didOpen transfers it.
type TextDocumentItem struct {
	URI        DocumentURI `json:"uri"`
	LanguageID string      `json:"languageId"`
	Version    int32       `json:"version"`
	Text       string      `json:"text"`
}

// TextDocumentEdit is a set of edits to one document at one version. The
// client refuses it when its buffer is at another version, which is the
// stale-buffer check smith relies on.
type TextDocumentEdit struct {
	TextDocument OptionalVersionedTextDocumentIdentifier `json:"textDocument"`
	Edits        []TextEdit                              `json:"edits"`
}

// Resource operation kinds.
const (
	ResourceCreate = "create"
	ResourceRename = "rename"
	ResourceDelete = "delete"
)

// CreateFile creates a file.
type CreateFile struct {
	Kind    string             `json:"kind"` // "create"
	URI     DocumentURI        `json:"uri"`
	Options *CreateFileOptions `json:"options,omitempty"`
}

// CreateFileOptions: Overwrite wins over IgnoreIfExists.
type CreateFileOptions struct {
	Overwrite      bool `json:"overwrite,omitzero"`
	IgnoreIfExists bool `json:"ignoreIfExists,omitzero"`
}

// RenameFile renames a file.
type RenameFile struct {
	Kind   string      `json:"kind"` // "rename"
	OldURI DocumentURI `json:"oldUri"`
	NewURI DocumentURI `json:"newUri"`
}

// DeleteFile deletes a file.
type DeleteFile struct {
	Kind    string             `json:"kind"` // "delete"
	URI     DocumentURI        `json:"uri"`
	Options *DeleteFileOptions `json:"options,omitempty"`
}

// DeleteFileOptions for DeleteFile.
type DeleteFileOptions struct {
	Recursive         bool `json:"recursive,omitzero"`
	IgnoreIfNotExists bool `json:"ignoreIfNotExists,omitzero"`
}

// DocumentChange is one element of WorkspaceEdit.documentChanges: exactly
// one of its fields is set. It encodes as that element alone, since LSP
// distinguishes the union's members by shape (a "kind" field or not).
type DocumentChange struct {
	TextDocumentEdit *TextDocumentEdit
	CreateFile       *CreateFile
	RenameFile       *RenameFile
	DeleteFile       *DeleteFile
}

// MarshalJSON encodes the one member that is set.
func (d DocumentChange) MarshalJSON() ([]byte, error) {
	switch {
	case d.TextDocumentEdit != nil:
		return json.Marshal(d.TextDocumentEdit)
	case d.CreateFile != nil:
		return json.Marshal(d.CreateFile)
	case d.RenameFile != nil:
		return json.Marshal(d.RenameFile)
	case d.DeleteFile != nil:
		return json.Marshal(d.DeleteFile)
	}
	return nil, fmt.Errorf("editor: empty DocumentChange")
}

// UnmarshalJSON decodes a member by its "kind" (absent for a text edit).
func (d *DocumentChange) UnmarshalJSON(b []byte) error {
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	*d = DocumentChange{}
	switch k.Kind {
	case "":
		d.TextDocumentEdit = new(TextDocumentEdit)
		return json.Unmarshal(b, d.TextDocumentEdit)
	case ResourceCreate:
		d.CreateFile = new(CreateFile)
		return json.Unmarshal(b, d.CreateFile)
	case ResourceRename:
		d.RenameFile = new(RenameFile)
		return json.Unmarshal(b, d.RenameFile)
	case ResourceDelete:
		d.DeleteFile = new(DeleteFile)
		return json.Unmarshal(b, d.DeleteFile)
	}
	return fmt.Errorf("editor: unknown document change kind %q", k.Kind)
}

// WorkspaceEdit is a set of changes to many documents. smith always uses
// DocumentChanges (versioned, ordered, with resource operations).
type WorkspaceEdit struct {
	DocumentChanges []DocumentChange `json:"documentChanges"`
}

// ApplyWorkspaceEditParams is the workspace/applyEdit request.
type ApplyWorkspaceEditParams struct {
	Label string        `json:"label,omitempty"`
	Edit  WorkspaceEdit `json:"edit"`
}

// ApplyWorkspaceEditResult is the client's answer to workspace/applyEdit.
type ApplyWorkspaceEditResult struct {
	Applied       bool    `json:"applied"`
	FailureReason string  `json:"failureReason,omitempty"`
	FailedChange  *uint32 `json:"failedChange,omitempty"`
}

// ClientInfo / ServerInfo name the two sides.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// WorkspaceFolder is one root folder of the client.
type WorkspaceFolder struct {
	URI  DocumentURI `json:"uri"`
	Name string      `json:"name"`
}

// InitializeParams is the subset of the initialize request smith reads.
type InitializeParams struct {
	ProcessID             *int32             `json:"processId"`
	ClientInfo            *ClientInfo        `json:"clientInfo,omitempty"`
	RootPath              *string            `json:"rootPath,omitempty"`
	RootURI               *DocumentURI       `json:"rootUri"`
	Capabilities          ClientCapabilities `json:"capabilities"`
	InitializationOptions *InitOptions       `json:"initializationOptions,omitempty"`
	WorkspaceFolders      []WorkspaceFolder  `json:"workspaceFolders,omitempty"`
}

// ClientCapabilities is the subset of the client's capabilities smith
// looks at.
type ClientCapabilities struct {
	Workspace *struct {
		ApplyEdit     bool `json:"applyEdit,omitzero"`
		WorkspaceEdit *struct {
			DocumentChanges    bool     `json:"documentChanges,omitzero"`
			ResourceOperations []string `json:"resourceOperations,omitempty"`
		} `json:"workspaceEdit,omitempty"`
	} `json:"workspace,omitempty"`
	Window *struct {
		WorkDoneProgress bool `json:"workDoneProgress,omitzero"`
		ShowDocument     *struct {
			Support bool `json:"support"`
		} `json:"showDocument,omitempty"`
	} `json:"window,omitempty"`
	TextDocument *struct {
		PublishDiagnostics *struct{} `json:"publishDiagnostics,omitempty"`
	} `json:"textDocument,omitempty"`
	General *struct {
		PositionEncodings []PositionEncoding `json:"positionEncodings,omitempty"`
	} `json:"general,omitempty"`
}

// InitOptions are smith's initializationOptions. Every field is optional;
// serve's flags override them and they override the config files.
type InitOptions struct {
	Upstream    string `json:"upstream,omitempty"`
	Dialect     string `json:"dialect,omitempty"`
	Workspace   string `json:"workspace,omitempty"`
	StateDir    string `json:"stateDir,omitempty"`
	IdleTimeout string `json:"idleTimeout,omitempty"` // a Go duration such as "60s"
	MaxTurns    int    `json:"maxTurns,omitzero"`
	MaxMessage  int    `json:"maxMessage,omitzero"`
	AutoApply   *bool  `json:"autoApply,omitempty"`
}

// InitializeResult answers initialize.
type InitializeResult struct {
	Capabilities ServerCapabilities `json:"capabilities"`
	ServerInfo   ClientInfo         `json:"serverInfo"`
}

// ServerCapabilities is what smith announces.
type ServerCapabilities struct {
	PositionEncoding       PositionEncoding      `json:"positionEncoding"`
	TextDocumentSync       TextDocumentSyncOpts  `json:"textDocumentSync"`
	ExecuteCommandProvider ExecuteCommandOptions `json:"executeCommandProvider"`
	CodeActionProvider     any                   `json:"codeActionProvider,omitempty"`
	Experimental           map[string]any        `json:"experimental,omitempty"`
}

// TextDocumentSyncOpts asks for open/close and incremental changes.
type TextDocumentSyncOpts struct {
	OpenClose bool        `json:"openClose"`
	Change    int         `json:"change"` // 2 = incremental
	Save      SaveOptions `json:"save"`
}

// SaveOptions for didSave.
type SaveOptions struct {
	IncludeText bool `json:"includeText"`
}

// TextDocumentSyncKind values.
const (
	SyncNone        = 0
	SyncFull        = 1
	SyncIncremental = 2
)

// ExecuteCommandOptions lists the commands of workspace/executeCommand.
type ExecuteCommandOptions struct {
	Commands []string `json:"commands"`
}

// DidOpenTextDocumentParams of textDocument/didOpen.
type DidOpenTextDocumentParams struct {
	TextDocument TextDocumentItem `json:"textDocument"`
}

// TextDocumentContentChangeEvent is an incremental change when Range is
// set, else the whole new text.
type TextDocumentContentChangeEvent struct {
	Range *Range `json:"range,omitempty"`
	Text  string `json:"text"`
}

// DidChangeTextDocumentParams of textDocument/didChange.
type DidChangeTextDocumentParams struct {
	TextDocument   VersionedTextDocumentIdentifier  `json:"textDocument"`
	ContentChanges []TextDocumentContentChangeEvent `json:"contentChanges"`
}

// DidSaveTextDocumentParams of textDocument/didSave.
type DidSaveTextDocumentParams struct {
	TextDocument TextDocumentIdentifier `json:"textDocument"`
	Text         *string                `json:"text,omitempty"`
}

// DidCloseTextDocumentParams of textDocument/didClose.
type DidCloseTextDocumentParams struct {
	TextDocument TextDocumentIdentifier `json:"textDocument"`
}

// ExecuteCommandParams of workspace/executeCommand.
type ExecuteCommandParams struct {
	Command       string            `json:"command"`
	Arguments     []json.RawMessage `json:"arguments,omitempty"`
	WorkDoneToken ProgressToken     `json:"workDoneToken,omitzero"`
}

// CancelParams of $/cancelRequest: id is a number or a string.
type CancelParams struct {
	ID json.RawMessage `json:"id"`
}

// ProgressToken is a number or a string, kept as its JSON text.
type ProgressToken = json.RawMessage

// ProgressParams of $/progress.
type ProgressParams struct {
	Token ProgressToken `json:"token"`
	Value any           `json:"value"`
}

// WorkDoneProgressCreateParams of window/workDoneProgress/create.
type WorkDoneProgressCreateParams struct {
	Token ProgressToken `json:"token"`
}

// WorkDoneProgressCancelParams of window/workDoneProgress/cancel.
type WorkDoneProgressCancelParams struct {
	Token ProgressToken `json:"token"`
}

// WorkDoneProgress is a begin, report or end value of $/progress.
type WorkDoneProgress struct {
	Kind        string `json:"kind"` // "begin" | "report" | "end"
	Title       string `json:"title,omitempty"`
	Cancellable bool   `json:"cancellable,omitzero"`
	Message     string `json:"message,omitempty"`
}
