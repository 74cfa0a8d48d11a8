package editor

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/smith-dev/smith/daemon"
)

// EditRefusedError is a workspace/applyEdit the editor answered with
// applied=false. It counts as a conflict: the buffer was not what the plan
// expected (usually a newer version), and nothing was changed. Its text
// gives no advice: the engine adds the advice that fits what it was doing
// (an apply, or the take-back of a failed batch); see
// daemon.EditRefusal.
type EditRefusedError struct {
	Reason       string
	FailedChange *uint32
}

func (e *EditRefusedError) Error() string {
	if e.Reason == "" {
		return "the editor refused the edit"
	}
	return "the editor refused the edit: " + e.Reason
}

// Refusal implements daemon.EditRefusal: the editor's own words.
func (e *EditRefusedError) Refusal() string { return e.Reason }

var _ daemon.EditRefusal = (*EditRefusedError)(nil)

// Is makes a refusal a daemon.ErrConflict.
func (e *EditRefusedError) Is(target error) bool { return target == daemon.ErrConflict }

// ApplyEdit implements daemon.Editor: one workspace/applyEdit request with
// a versioned TextDocumentEdit per open file, and create/delete resource
// operations when the client announced them. The editor applies it all or
// nothing. An edit the client cannot express (no applyEdit, no resource
// operations) is daemon.ErrUnsupported, and the engine writes to disk
// instead; a buffer that moved on since the plan is daemon.ErrConflict.
func (c *client) ApplyEdit(ctx context.Context, label string, edits []daemon.FileEdit) error {
	we, err := c.workspaceEdit(edits)
	if err != nil {
		return err
	}
	var res ApplyWorkspaceEditResult
	if err := c.call(ctx, MethodApplyEdit, &ApplyWorkspaceEditParams{Label: label, Edit: *we}, &res); err != nil {
		return fmt.Errorf("apply %q in the editor: %w", label, err)
	}
	if !res.Applied {
		return &EditRefusedError{Reason: res.FailureReason, FailedChange: res.FailedChange}
	}
	c.docs.expect(edits)
	return nil
}

// workspaceEdit builds the WorkspaceEdit for edits, checking each against
// the mirror first, so that a stale plan never reaches the editor.
func (c *client) workspaceEdit(edits []daemon.FileEdit) (*WorkspaceEdit, error) {
	c.mu.Lock()
	caps, enc, ws := c.caps, c.enc, c.workspace
	c.mu.Unlock()
	if !caps.applyEdit || !caps.documentChanges {
		return nil, daemon.Errorf(daemon.ErrUnsupported, "the editor does not accept versioned workspace edits")
	}
	we := &WorkspaceEdit{DocumentChanges: make([]DocumentChange, 0, len(edits))}
	for _, fe := range edits {
		changes, err := c.documentChanges(fe, caps, enc, ws)
		if err != nil {
			return nil, err
		}
		we.DocumentChanges = append(we.DocumentChanges, changes...)
	}
	return we, nil
}

// documentChanges is the part of the WorkspaceEdit for fe. Its errors
// name the file relative to the workspace ws, as the engine's errors do
// (they reach the user inside one).
func (c *client) documentChanges(fe daemon.FileEdit, caps clientCaps, enc PositionEncoding, ws string) ([]DocumentChange, error) {
	name := relName(ws, fe.Path)
	uri := pathToURI(fe.Path)
	switch {
	case fe.Create:
		if !caps.resourceOps[ResourceCreate] {
			return nil, daemon.Errorf(daemon.ErrUnsupported, "the editor cannot create files (%s)", name)
		}
		out := []DocumentChange{{CreateFile: &CreateFile{Kind: ResourceCreate, URI: uri, Options: &CreateFileOptions{Overwrite: false}}}}
		if len(fe.NewText) > 0 {
			out = append(out, DocumentChange{TextDocumentEdit: &TextDocumentEdit{
				TextDocument: OptionalVersionedTextDocumentIdentifier{URI: uri},
				Edits:        []TextEdit{{NewText: string(fe.NewText)}},
			}})
		}
		return out, nil
	case fe.Delete:
		if !caps.resourceOps[ResourceDelete] {
			return nil, daemon.Errorf(daemon.ErrUnsupported, "the editor cannot delete files (%s)", name)
		}
		return []DocumentChange{{DeleteFile: &DeleteFile{Kind: ResourceDelete, URI: uri}}}, nil
	}
	doc, open := c.docs.get(fe.Path)
	if !open {
		return nil, daemon.Errorf(daemon.ErrUnsupported, "%s is not open in the editor", name)
	}
	if doc.version != fe.Version || !bytes.Equal(doc.seen(), fe.OldText) {
		return nil, daemon.Errorf(daemon.ErrConflict, "%s changed in the editor since the plan (version %d, planned against %d)", name, doc.version, fe.Version)
	}
	edit := minimalEdit(fe.OldText, fe.NewText, enc)
	var tedits []TextEdit
	if edit != nil {
		tedits = []TextEdit{*edit}
	}
	// After an edit the editor has not reported yet, its version is not
	// known: the edit goes without one (predict.go).
	return []DocumentChange{{TextDocumentEdit: &TextDocumentEdit{
		TextDocument: OptionalVersionedTextDocumentIdentifier{URI: doc.uri, Version: doc.knownVersion()},
		Edits:        tedits,
	}}}, nil
}

// ChangeUpdatedParams of smith/changeUpdated.
type ChangeUpdatedParams struct {
	Change daemon.Change `json:"change"`
}

// FileChangedParams of smith/fileChanged: reload the file from disk.
type FileChangedParams struct {
	Path string      `json:"path"`
	URI  DocumentURI `json:"uri"`
}

// Notify implements daemon.Editor.
func (c *client) Notify(n daemon.Notification) {
	var err error
	ctx := context.Background()
	switch n.Kind {
	case daemon.NoteChangeUpdated:
		if n.Change == nil {
			return
		}
		err = c.conn.Notify(ctx, MethodChangeUpdated, &ChangeUpdatedParams{Change: *n.Change})
		c.publishDiagnostics(c.changePaths(n.Change)...)
	case daemon.NoteFileChanged:
		err = c.conn.Notify(ctx, MethodFileChanged, &FileChangedParams{Path: n.Path, URI: pathToURI(c.absPath(n.Path))})
		c.reloadBehind(n.Path)
		if n.Path != "" {
			c.publishDiagnostics(c.absPath(n.Path))
		}
	default:
		c.log.Debug("unknown engine notification", "kind", n.Kind)
		return
	}
	if err != nil {
		c.log.Debug("notifying the editor", "kind", n.Kind, "err", err)
	}
}

// relName is abs relative to the workspace ws, as smith names files in
// errors; abs as it is when it lies outside (or ws is not known yet).
func relName(ws, abs string) string {
	if ws == "" {
		return abs
	}
	if rel, ok := strings.CutPrefix(abs, ws+string(filepath.Separator)); ok {
		return rel
	}
	return abs
}

// absPath resolves a workspace-relative path.
func (c *client) absPath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return filepath.Join(c.workspace, filepath.FromSlash(p))
}
