package editor

import (
	"context"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// DialogParams names a dialog (smith/dialog/select, /delete).
type DialogParams struct {
	DialogID string `json:"dialogId"`
}

// DialogNewParams of smith/dialog/new.
type DialogNewParams struct {
	Title string `json:"title,omitempty"`
}

// DialogRenameParams of smith/dialog/rename.
type DialogRenameParams struct {
	DialogID string `json:"dialogId"`
	Title    string `json:"title"`
}

// HistoryParams of smith/history: a page of at most Limit messages (0: the
// engine's default) before message index Before (absent: the latest page).
type HistoryParams struct {
	DialogID string `json:"dialogId"`
	Limit    int    `json:"limit,omitzero"`
	Before   *int   `json:"before,omitempty"`
}

func (c *client) dialogs(ctx context.Context, _ *struct{}) ([]daemon.Dialog, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	return eng.Dialogs(ctx)
}

func (c *client) dialogNew(ctx context.Context, p *DialogNewParams) (*daemon.Dialog, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	d, err := eng.NewDialog(ctx, p.Title)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

func (c *client) dialogSelect(ctx context.Context, p *DialogParams) (any, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	if p.DialogID == "" {
		return nil, invalidParams("dialogId is required")
	}
	return nil, eng.SelectDialog(ctx, p.DialogID)
}

func (c *client) dialogRename(ctx context.Context, p *DialogRenameParams) (any, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	if p.DialogID == "" || p.Title == "" {
		return nil, invalidParams("dialogId and title are required")
	}
	return nil, eng.RenameDialog(ctx, p.DialogID, p.Title)
}

func (c *client) dialogDelete(ctx context.Context, p *DialogParams) (any, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	if p.DialogID == "" {
		return nil, invalidParams("dialogId is required")
	}
	return nil, eng.DeleteDialog(ctx, p.DialogID)
}

func (c *client) history(ctx context.Context, p *HistoryParams) (*protocol.HistoryPage, error) {
	eng, _, err := c.session()
	if err != nil {
		return nil, err
	}
	before := -1
	if p.Before != nil {
		before = *p.Before
	}
	return eng.History(ctx, p.DialogID, p.Limit, before)
}
