package editor

import (
	"context"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
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
func sessionCall[T any](c *client, call func(*daemon.Engine, context.Context, string) (*T, error)) func(context.Context, *SessionParams) (*T, error) {
	return func(ctx context.Context, p *SessionParams) (*T, error) {
		eng, _, err := c.session()
		if err != nil {
			return nil, err
		}
		return call(eng, ctx, p.DialogID)
	}
}

func (c *client) checkpointRestore(ctx context.Context, p *RestoreParams) (*protocol.RestoreResult, error) {
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
	st, err := eng.Status(ctx)
	return &st, err
}
