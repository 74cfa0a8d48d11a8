package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// historyPage is how many history events one request asks for.
const historyPage = 100

// LoadSession opens an existing dialog as a session and replays its
// history (as the protocol asks: before the answer), then smith's changes
// of the dialog with their status.
func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if err := a.ready(); err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	eng, err := a.engine(ctx, p.Cwd)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	id := string(p.SessionId)
	events, err := history(ctx, eng, id)
	if err != nil {
		if errors.Is(err, daemon.ErrUnknownDialog) {
			return sdk.LoadSessionResponse{}, invalidParams("unknown session %q: there is no such dialog in %s (the /dialogs command, or `smith dialogs`, lists them)", id, eng.Workspace())
		}
		return sdk.LoadSessionResponse{}, internalError(fmt.Errorf("load the history of dialog %s: %w", id, err))
	}
	s := a.addSession(id, p.Cwd)
	s.mu.Lock()
	busy := s.run != nil
	s.mu.Unlock()
	if busy {
		return sdk.LoadSessionResponse{}, invalidRequest("session %s is running a prompt; load it when the prompt has ended", id)
	}
	a.asking.open()
	a.replay(s, events)
	a.asking.shut()
	a.sendCommands(s)
	return sdk.LoadSessionResponse{Modes: a.modes(s)}, nil
}

// history reads a dialog's whole history, oldest first. The pages come
// newest first; they are joined once at the end, so that reading a long
// dialog costs time and memory in proportion to its length (putting each
// page in front of the ones read so far copied the history once per page).
func history(ctx context.Context, eng daemon.API, id string) ([]protocol.HistoryEvent, error) {
	var pages [][]protocol.HistoryEvent
	n := 0
	before := -1
	for {
		pg, err := eng.History(ctx, id, historyPage, before)
		if err != nil {
			return nil, err
		}
		pages = append(pages, pg.Events)
		n += len(pg.Events)
		if !pg.HasMore || len(pg.Events) == 0 || pg.FirstIdx <= 0 || pg.FirstIdx == before {
			break
		}
		before = pg.FirstIdx
	}
	all := make([]protocol.HistoryEvent, 0, n)
	for _, events := range slices.Backward(pages) {
		all = append(all, events...)
	}
	return all, nil
}

// replay sends the history as session updates, then the dialog's changes.
func (a *agent) replay(s *session, events []protocol.HistoryEvent) {
	ws := a.eng.Workspace()
	for i, ev := range events {
		switch ev.Type {
		case "user":
			a.update(s.id, sdk.UpdateUserMessageText(ev.Content))
		case "chat":
			a.update(s.id, sdk.UpdateAgentMessageText(ev.Content))
		case "reasoning":
			a.update(s.id, sdk.UpdateAgentThoughtText(ev.Content))
		case "tool_call":
			var raw any
			if len(ev.Args) > 0 {
				raw = json.RawMessage(ev.Args)
			}
			a.update(s.id, sdk.StartToolCall(sdk.ToolCallId(fmt.Sprintf("history-%d", i)), ev.Name,
				sdk.WithStartKind(toolKind(ev.Name)), sdk.WithStartStatus(sdk.ToolCallStatusCompleted), sdk.WithStartRawInput(raw)))
		case "file_edit":
			path := ev.File
			if !filepath.IsAbs(path) {
				path = filepath.Join(ws, path)
			}
			var content []sdk.ToolCallContent
			if ev.Diff != "" {
				content = append(content, sdk.ToolContent(sdk.TextBlock("```diff\n"+ev.Diff+"\n```")))
			}
			a.update(s.id, sdk.StartToolCall(sdk.ToolCallId(fmt.Sprintf("history-%d", i)), "Edit "+ev.File,
				sdk.WithStartKind(sdk.ToolKindEdit), sdk.WithStartStatus(sdk.ToolCallStatusCompleted),
				sdk.WithStartContent(content), sdk.WithStartLocations([]sdk.ToolCallLocation{{Path: path}})))
		}
	}
	for _, c := range a.changes(daemon.ChangeFilter{DialogID: s.id}) {
		if c.Status == daemon.StatusAppliedUpstream {
			continue // in the history as file_edit
		}
		tc := a.changeCall(c)
		switch c.Status {
		case daemon.StatusApplied:
			tc.Status = sdk.ToolCallStatusCompleted
		default:
			tc.Status = sdk.ToolCallStatusFailed
			tc.Content = append(tc.Content, sdk.ToolContent(sdk.TextBlock(fmt.Sprintf("change %s is %s", c.ID, c.Status))))
		}
		a.update(s.id, sdk.SessionUpdate{ToolCall: tc})
	}
}
