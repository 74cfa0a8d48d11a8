package editor

import (
	"context"
	"encoding/json"

	"github.com/smith-dev/smith/daemon"
)

// SessionParams of smith/session, smith/checkpoints, smith/session/approve and /reset
// (AgentSmithy only).
type SessionParams struct {
	DialogID string `json:"dialogId,omitempty"`
}

// RestoreParams of smith/checkpoint/restore.
type RestoreParams struct {
	DialogID   string `json:"dialogId,omitempty"`
	Checkpoint string `json:"checkpoint"`
}

// sessionCall is the handler of a session method that takes only a
// dialog: call is the engine's method (Session, Checkpoints, Approve,
// Reset).
func (c *client) sessionCall(call func(*daemon.Engine, context.Context, string) (json.RawMessage, error)) func(context.Context, *SessionParams) (json.RawMessage, error) {
	return func(ctx context.Context, p *SessionParams) (json.RawMessage, error) {
		eng, _, err := c.session()
		if err != nil {
			return nil, err
		}
		return call(eng, ctx, p.DialogID)
	}
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
