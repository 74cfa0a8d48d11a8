package editor

import (
	"context"
	"errors"
	"fmt"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// ChangesParams of smith/changes; empty fields match every change.
type ChangesParams struct {
	DialogID string `json:"dialogId,omitempty"`
	Status   string `json:"status,omitempty"`
}

// ChangeParams of smith/change/preview, /apply and /reject: the hunks to
// act on, all (pending ones, for apply) when Hunks is empty.
type ChangeParams struct {
	ChangeID string   `json:"changeId"`
	Hunks    []string `json:"hunks,omitempty"`
}

// UndoParams of smith/undo: the most recent apply when ChangeID is empty.
type UndoParams struct {
	ChangeID string `json:"changeId,omitempty"`
}

func (c *client) changes(ctx context.Context, p *ChangesParams) ([]daemon.Change, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	return eng.Changes(ctx, daemon.ChangeFilter{DialogID: p.DialogID, Status: p.Status})
}

func (c *client) changePreview(ctx context.Context, p *ChangeParams) (*daemon.Preview, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	if p.ChangeID == "" {
		if p.ChangeID, _, err = c.currentChange(false); err != nil { // a command without arguments (codeaction.go)
			return nil, err
		}
	}
	pv, err := eng.Preview(ctx, p.ChangeID, p.Hunks)
	c.previewShown(ctx, p.ChangeID, pv)
	return pv, err
}

// changeApply applies through this connection's editor: open buffers get a
// workspace/applyEdit, closed files are written on disk.
func (c *client) changeApply(ctx context.Context, p *ChangeParams) (*daemon.Change, error) {
	eng, peer, err := c.session()
	if err != nil {
		return nil, err
	}
	if p.ChangeID == "" {
		if p.ChangeID, p.Hunks, err = c.currentChange(true); err != nil { // a command without arguments (codeaction.go)
			return nil, err
		}
	}
	return c.decided(eng.Apply(daemon.WithPeer(ctx, peer), p.ChangeID, p.Hunks))
}

func (c *client) changeReject(ctx context.Context, p *ChangeParams) (*daemon.Change, error) {
	eng, peer, err := c.session()
	if err != nil {
		return nil, err
	}
	if p.ChangeID == "" {
		if p.ChangeID, p.Hunks, err = c.currentChange(true); err != nil { // a command without arguments (codeaction.go)
			return nil, err
		}
	}
	return c.decided(eng.Reject(daemon.WithPeer(ctx, peer), p.ChangeID, p.Hunks))
}

func (c *client) undo(ctx context.Context, p *UndoParams) (*daemon.Change, error) {
	eng, peer, err := c.session()
	if err != nil {
		return nil, err
	}
	return c.decided(eng.Undo(daemon.WithPeer(ctx, peer), p.ChangeID))
}

// PatchApplyParams of smith/patch/apply: the files of a diff, applied
// together and journalled as one undo group (smith apply).
type PatchApplyParams struct {
	DialogID string            `json:"dialogId,omitempty"`
	Changes  []protocol.Change `json:"changes"`
}

func (c *client) patchApply(ctx context.Context, p *PatchApplyParams) ([]daemon.Change, error) {
	eng, peer, err := c.session()
	if err != nil {
		return nil, err
	}
	if len(p.Changes) == 0 {
		return nil, invalidParams("changes is required")
	}
	out, err := eng.ApplyPatch(daemon.WithPeer(ctx, peer), p.DialogID, p.Changes)
	if errors.Is(err, daemon.ErrOutsideWorkspace) {
		// The engine says which path and which rule; the next step is
		// the editor's (or its user's), in the words of smith apply and
		// of a refused change's reason. The whole patch was given up.
		err = fmt.Errorf("%w; nothing was written: fix the change's path (smith writes only regular files under the workspace, outside .git and its own state)", err)
	}
	return out, err
}
