package protocol

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// ToolResultInfo is one stored tool result of a dialog (the list of GET
// /api/dialogs/{id}/tool-results). Only non-ephemeral results are stored;
// the key is the tool-call id that the history's tool_call events carry.
type ToolResultInfo struct {
	ToolCallID string  `json:"tool_call_id"`
	ToolName   string  `json:"tool_name"`
	Timestamp  string  `json:"timestamp"`
	SizeBytes  int     `json:"size_bytes"`
	Summary    *string `json:"summary"`
	Error      *string `json:"error"`
}

// StoredToolResult is GET /api/dialogs/{id}/tool-results/{tool_call_id}.
type StoredToolResult struct {
	ToolCallID string          `json:"tool_call_id"`
	ToolName   string          `json:"tool_name"`
	Args       json.RawMessage `json:"args"`
	Result     json.RawMessage `json:"result"`
	Timestamp  string          `json:"timestamp"`
	Metadata   struct {
		SizeBytes int    `json:"size_bytes"`
		Summary   string `json:"summary"`
	} `json:"metadata"`
}

// ToolResults lists a dialog's stored tool results.
func (c *Client) ToolResults(ctx context.Context, id string) ([]ToolResultInfo, error) {
	p, err := dialogPath(id, "/tool-results")
	if err != nil {
		return nil, err
	}
	out := []ToolResultInfo{}
	if err := c.doJSON(ctx, http.MethodGet, p, nil, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ToolResult reads one stored tool result; an unknown id is ErrNotFound.
func (c *Client) ToolResult(ctx context.Context, id, toolCallID string) (*StoredToolResult, error) {
	if _, err := dialogPath(toolCallID, ""); err != nil {
		return nil, err
	}
	p, err := dialogPath(id, "/tool-results/"+url.PathEscape(toolCallID))
	if err != nil {
		return nil, err
	}
	var r StoredToolResult
	if err := c.doJSON(ctx, http.MethodGet, p, nil, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
