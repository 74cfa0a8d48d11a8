package protocol

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// DialogMeta describes one dialog. Timestamps are the server's ISO-8601 UTC
// strings (e.g. "2025-12-29T11:20:15.482913Z"), kept verbatim.
type DialogMeta struct {
	ID        string `json:"id"`
	Title     string `json:"title,omitempty"` // absent when the dialog has none
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// DialogList is the answer of GET /api/dialogs.
type DialogList struct {
	CurrentDialogID string       `json:"current_dialog_id,omitempty"` // absent when there is none
	Dialogs         []DialogMeta `json:"dialogs"`
}

// ListDialogsOptions are the query of GET /api/dialogs. Zero values are the
// server's defaults (sort updated_at, order desc, limit 50, offset 0).
type ListDialogsOptions struct {
	Sort   string // "updated_at" | "created_at"
	Order  string // "desc" | "asc"
	Limit  int
	Offset int
}

func (o ListDialogsOptions) query() url.Values {
	q := url.Values{}
	if o.Sort != "" {
		q.Set("sort", o.Sort)
	}
	if o.Order != "" {
		q.Set("order", o.Order)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Offset > 0 {
		q.Set("offset", strconv.Itoa(o.Offset))
	}
	return q
}

// ListDialogs asks GET /api/dialogs.
func (c *Client) ListDialogs(ctx context.Context, o ListDialogsOptions) (*DialogList, error) {
	var l DialogList
	if err := c.doJSON(ctx, http.MethodGet, "/api/dialogs", o.query(), nil, &l); err != nil {
		return nil, err
	}
	if l.Dialogs == nil {
		l.Dialogs = []DialogMeta{}
	}
	return &l, nil
}

// CreateDialogRequest is the body of POST /api/dialogs.
type CreateDialogRequest struct {
	Title      *string `json:"title"`
	SetCurrent bool    `json:"set_current"`
}

// CreatedDialog is the answer of POST /api/dialogs (only the id, although
// the official client expects more).
type CreatedDialog struct {
	ID string `json:"id"`
}

// CreateDialog creates a dialog (POST /api/dialogs) and returns its id. An
// empty title sends null; setCurrent makes it the project's current dialog.
func (c *Client) CreateDialog(ctx context.Context, title string, setCurrent bool) (string, error) {
	in := CreateDialogRequest{SetCurrent: setCurrent}
	if title != "" {
		in.Title = &title
	}
	var out CreatedDialog
	if err := c.doJSON(ctx, http.MethodPost, "/api/dialogs", nil, in, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

// CurrentDialog is the answer of GET /api/dialogs/current: empty (ID "",
// Meta nil) when the project has no current dialog.
type CurrentDialog struct {
	ID   string      `json:"id,omitempty"`
	Meta *DialogMeta `json:"meta,omitempty"`
}

// CurrentDialog asks GET /api/dialogs/current.
func (c *Client) CurrentDialog(ctx context.Context) (*CurrentDialog, error) {
	var cur CurrentDialog
	if err := c.doJSON(ctx, http.MethodGet, "/api/dialogs/current", nil, nil, &cur); err != nil {
		return nil, err
	}
	return &cur, nil
}

// SetCurrentDialog makes id the current dialog (PATCH
// /api/dialogs/current?id=). The server answers an unknown id with a plain
// 500.
func (c *Client) SetCurrentDialog(ctx context.Context, id string) error {
	if _, err := dialogPath(id, ""); err != nil {
		return err
	}
	return c.doJSON(ctx, http.MethodPatch, "/api/dialogs/current", url.Values{"id": {id}}, nil, &OK{})
}

// Dialog asks GET /api/dialogs/{id}; an unknown id is ErrNotFound.
func (c *Client) Dialog(ctx context.Context, id string) (*DialogMeta, error) {
	p, err := dialogPath(id, "")
	if err != nil {
		return nil, err
	}
	var m DialogMeta
	if err := c.doJSON(ctx, http.MethodGet, p, nil, nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// RenameDialogRequest is the body of PATCH /api/dialogs/{id}.
type RenameDialogRequest struct {
	Title *string `json:"title"`
}

// RenameDialog sets a dialog's title (PATCH /api/dialogs/{id}).
func (c *Client) RenameDialog(ctx context.Context, id, title string) error {
	p, err := dialogPath(id, "")
	if err != nil {
		return err
	}
	return c.doJSON(ctx, http.MethodPatch, p, nil, RenameDialogRequest{Title: &title}, &OK{})
}

// DeleteDialog deletes a dialog (DELETE /api/dialogs/{id}); idempotent.
func (c *Client) DeleteDialog(ctx context.Context, id string) error {
	p, err := dialogPath(id, "")
	if err != nil {
		return err
	}
	return c.doJSON(ctx, http.MethodDelete, p, nil, nil, &OK{})
}

// HistoryOptions are the query of GET /api/dialogs/{id}/history. Limit 0 is
// the server's default (20); Before nil asks for the latest page, else the
// messages before that message index.
type HistoryOptions struct {
	Limit  int
	Before *int
}

// HistoryPage is one page of a dialog's history. The next (older) page is
// HistoryOptions{Before: &page.FirstIdx} while HasMore.
type HistoryPage struct {
	DialogID    string         `json:"dialog_id"`
	Events      []HistoryEvent `json:"events"`
	TotalEvents int            `json:"total_events"`
	HasMore     bool           `json:"has_more"`
	FirstIdx    int            `json:"first_idx"`
	LastIdx     int            `json:"last_idx"`
}

// HistoryEvent is one stored event: user and chat messages (with Idx),
// reasoning, tool_call (the only place a tool-call ID appears) and
// file_edit. Absent fields are left zero.
type HistoryEvent struct {
	Type       string          `json:"type"` // user | chat | reasoning | tool_call | file_edit
	Idx        *int            `json:"idx,omitempty"`
	Content    string          `json:"content,omitempty"`
	ModelName  string          `json:"model_name,omitempty"`
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	File       string          `json:"file,omitempty"`
	Diff       string          `json:"diff,omitempty"`
	Checkpoint string          `json:"checkpoint,omitempty"`
	Session    string          `json:"session,omitempty"`
}

// History asks one page of GET /api/dialogs/{id}/history.
func (c *Client) History(ctx context.Context, id string, o HistoryOptions) (*HistoryPage, error) {
	p, err := dialogPath(id, "/history")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Before != nil {
		q.Set("before", strconv.Itoa(*o.Before))
	}
	var h HistoryPage
	if err := c.doJSON(ctx, http.MethodGet, p, q, nil, &h); err != nil {
		return nil, err
	}
	if h.Events == nil {
		h.Events = []HistoryEvent{}
	}
	return &h, nil
}
