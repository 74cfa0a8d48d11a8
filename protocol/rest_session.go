package protocol

import (
	"context"
	"net/http"
)

// AgentSmithy keeps a dialog's file changes in a shadow git repository:
// "main" is the approved state, session_N the work branch, and every user
// turn is a checkpoint. These calls read and move that state.

// SessionStatus is the answer of GET /api/dialogs/{id}/session. When nothing
// is unapproved ActiveSession and SessionRef are nil and ChangedFiles empty.
type SessionStatus struct {
	ActiveSession  *string       `json:"active_session"`
	SessionRef     *string       `json:"session_ref"`
	HasUnapproved  bool          `json:"has_unapproved"`
	LastApprovedAt *string       `json:"last_approved_at"`
	ChangedFiles   []ChangedFile `json:"changed_files"`
}

// ChangedFile is one unapproved file of a session, sorted by path.
type ChangedFile struct {
	Path        string  `json:"path"`   // relative to the project
	Status      string  `json:"status"` // added | modified | deleted
	Additions   int     `json:"additions"`
	Deletions   int     `json:"deletions"`
	Diff        *string `json:"diff"`
	BaseContent *string `json:"base_content"`
	IsBinary    bool    `json:"is_binary"`
	IsTooLarge  bool    `json:"is_too_large"` // above 1 MB: no diff, no base content
}

// SessionStatus asks GET /api/dialogs/{id}/session.
func (c *Client) SessionStatus(ctx context.Context, id string) (*SessionStatus, error) {
	p, err := dialogPath(id, "/session")
	if err != nil {
		return nil, err
	}
	var s SessionStatus
	if err := c.doJSON(ctx, http.MethodGet, p, nil, nil, &s); err != nil {
		return nil, err
	}
	if s.ChangedFiles == nil {
		s.ChangedFiles = []ChangedFile{}
	}
	return &s, nil
}

// ApproveRequest is the optional body of POST /api/dialogs/{id}/approve.
type ApproveRequest struct {
	Message *string `json:"message"`
}

// ApproveResult is the answer of POST /api/dialogs/{id}/approve.
// CommitsApproved is 0 when there was nothing to approve.
type ApproveResult struct {
	ApprovedCommit  string `json:"approved_commit"`
	NewSession      string `json:"new_session"`
	CommitsApproved int    `json:"commits_approved"`
}

// Approve merges the dialog's session into the approved state and opens the
// next session. An empty message sends null (the server's default).
func (c *Client) Approve(ctx context.Context, id, message string) (*ApproveResult, error) {
	p, err := dialogPath(id, "/approve")
	if err != nil {
		return nil, err
	}
	in := ApproveRequest{}
	if message != "" {
		in.Message = &message
	}
	var r ApproveResult
	if err := c.doJSON(ctx, http.MethodPost, p, nil, in, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ResetResult is the answer of POST /api/dialogs/{id}/reset.
type ResetResult struct {
	ResetTo            string  `json:"reset_to"`
	NewSession         string  `json:"new_session"`
	PreResetCheckpoint *string `json:"pre_reset_checkpoint"`
}

// Reset discards the session's unapproved changes: the server checkpoints
// them first, then restores the files to the approved state.
func (c *Client) Reset(ctx context.Context, id string) (*ResetResult, error) {
	p, err := dialogPath(id, "/reset")
	if err != nil {
		return nil, err
	}
	var r ResetResult
	if err := c.doJSON(ctx, http.MethodPost, p, nil, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// RestoreRequest is the body of POST /api/dialogs/{id}/restore.
type RestoreRequest struct {
	CheckpointID string `json:"checkpoint_id"`
}

// RestoreResult is the answer of POST /api/dialogs/{id}/restore.
type RestoreResult struct {
	RestoredTo    string `json:"restored_to"`
	NewCheckpoint string `json:"new_checkpoint"`
}

// Restore puts the project's files back to a checkpoint (a user turn's
// checkpoint from the stream or the history). An unknown checkpoint is
// ErrNotFound.
func (c *Client) Restore(ctx context.Context, id, checkpointID string) (*RestoreResult, error) {
	p, err := dialogPath(id, "/restore")
	if err != nil {
		return nil, err
	}
	var r RestoreResult
	if err := c.doJSON(ctx, http.MethodPost, p, nil, RestoreRequest{CheckpointID: checkpointID}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// CheckpointList is the answer of GET /api/dialogs/{id}/checkpoints, oldest
// first, on the active session's branch.
type CheckpointList struct {
	DialogID          string       `json:"dialog_id"`
	Checkpoints       []Checkpoint `json:"checkpoints"`
	InitialCheckpoint *string      `json:"initial_checkpoint"`
}

// Checkpoint is one commit of the dialog's shadow repository.
type Checkpoint struct {
	CommitID string `json:"commit_id"`
	Message  string `json:"message"`
}

// Checkpoints asks GET /api/dialogs/{id}/checkpoints.
func (c *Client) Checkpoints(ctx context.Context, id string) (*CheckpointList, error) {
	p, err := dialogPath(id, "/checkpoints")
	if err != nil {
		return nil, err
	}
	var l CheckpointList
	if err := c.doJSON(ctx, http.MethodGet, p, nil, nil, &l); err != nil {
		return nil, err
	}
	if l.Checkpoints == nil {
		l.Checkpoints = []Checkpoint{}
	}
	return &l, nil
}
