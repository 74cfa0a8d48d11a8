package editor

import (
	"context"
	"encoding/json"

	"github.com/smith-dev/smith/daemon"
)

// SessionParams of smith/session, smith/session/approve and /reset
// (AgentSmithy only).
type SessionParams struct {
	DialogID string `json:"dialogId,omitempty"`
}

// RestoreParams of smith/checkpoint/restore.
type RestoreParams struct {
	DialogID   string `json:"dialogId,omitempty"`
	Checkpoint string `json:"checkpoint"`
}

func (c *client) sessionStatus(ctx context.Context, p *SessionParams) (json.RawMessage, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	return eng.Session(ctx, p.DialogID)
}

func (c *client) checkpoints(ctx context.Context, p *SessionParams) (json.RawMessage, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	return eng.Checkpoints(ctx, p.DialogID)
}

func (c *client) sessionApprove(ctx context.Context, p *SessionParams) (json.RawMessage, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	return eng.Approve(ctx, p.DialogID)
}

func (c *client) sessionReset(ctx context.Context, p *SessionParams) (json.RawMessage, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	return eng.Reset(ctx, p.DialogID)
}

func (c *client) checkpointRestore(ctx context.Context, p *RestoreParams) (json.RawMessage, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	if p.Checkpoint == "" {
		return nil, invalidParams("checkpoint is required")
	}
	return eng.Restore(ctx, p.DialogID, p.Checkpoint)
}

func (c *client) status(ctx context.Context, _ *struct{}) (*daemon.Status, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	st := eng.Status(ctx)
	return &st, nil
}
