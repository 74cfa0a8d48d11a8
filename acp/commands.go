package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// The slash commands reach what ACP has no method for: the AgentSmithy
// session (what the server wrote itself: approve or reset it) and smith's
// own change list and undo journal.
var commandList = []sdk.AvailableCommand{
	{Name: "changes", Description: "List the changes of this session and their status (pending, applied, rejected, conflict)"},
	{Name: "apply", Description: "Apply a pending change (e.g. /apply c3), or every pending change of this session; typing it is the permission",
		Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "change id (optional)"}}},
	{Name: "reject", Description: "Reject a pending change (e.g. /reject c3), or every pending change of this session",
		Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "change id (optional)"}}},
	{Name: "undo", Description: "Take back smith's last write (or the change named, e.g. /undo c3)",
		Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "change id (optional)"}}},
	{Name: "approve", Description: "Accept what the agent server wrote itself in this session (AgentSmithy approve)"},
	{Name: "reset", Description: "Put the files the agent server wrote back to the last approved state (AgentSmithy reset)"},
	{Name: "dialogs", Description: "List the dialogs of this workspace (each is a session you can load)"},
}

// sendCommands sends available_commands_update once per session.
func (a *agent) sendCommands(s *session) {
	s.mu.Lock()
	sent := s.commands
	s.commands = true
	s.mu.Unlock()
	if !sent {
		a.update(s.id, sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: commandList}})
	}
}

// slashCommand splits "/name arg" when name is one of smith's commands.
func slashCommand(msg string) (name, arg string, ok bool) {
	m := strings.TrimSpace(msg)
	if !strings.HasPrefix(m, "/") {
		return "", "", false
	}
	name, arg, _ = strings.Cut(m[1:], " ")
	for _, c := range commandList {
		if c.Name == name {
			return name, strings.TrimSpace(arg), true
		}
	}
	return "", "", false
}

// command runs a slash command; its answer is the message of the turn.
// An error of the command is an answer too (the turn ends normally).
func (a *agent) command(ctx context.Context, s *session, name, arg string) (sdk.StopReason, error) {
	var out string
	var err error
	switch name {
	case "changes":
		out = a.changesText(s)
	case "apply", "reject":
		out, err = a.decideCommand(ctx, s, name, arg)
	case "undo":
		var c *daemon.Change
		if c, err = a.eng.Undo(daemon.WithPeer(ctx, a.peer), arg); err == nil {
			out = fmt.Sprintf("Undone: change %s (%s) is now %s.", c.ID, c.Path, c.Status)
		}
	case "approve":
		var r *protocol.ApproveResult
		if r, err = a.eng.Approve(ctx, s.id); err == nil {
			out = fmt.Sprintf("Approved the session's changes: %d checkpoint(s), now at `%s` (new session %s).", r.CommitsApproved, r.ApprovedCommit, r.NewSession)
		}
	case "reset":
		var r *protocol.ResetResult
		if r, err = a.eng.Reset(ctx, s.id); err == nil {
			out = fmt.Sprintf("Reset the files to the approved state `%s` (new session %s).", r.ResetTo, r.NewSession)
		}
	case "dialogs":
		var ds []daemon.Dialog
		if ds, err = a.eng.Dialogs(ctx); err == nil {
			var b strings.Builder
			for _, d := range ds {
				mark := ""
				if d.ID == s.id {
					mark = " (this session)"
				}
				fmt.Fprintf(&b, "- `%s` %s%s\n", d.ID, d.Title, mark)
			}
			if b.Len() == 0 {
				b.WriteString("No dialogs yet.")
			}
			out = b.String()
		}
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return sdk.StopReasonCancelled, nil
		}
		out = fmt.Sprintf("/%s failed: %v", name, err)
		switch {
		case errors.Is(err, daemon.ErrUnknownChange):
			out += " (/changes lists them)"
		case errors.Is(err, daemon.ErrUnknownDialog):
			out += " (/dialogs lists them)"
		}
	}
	a.update(s.id, sdk.UpdateAgentMessageText(out))
	return sdk.StopReasonEndTurn, nil
}

func (a *agent) changesText(s *session) string {
	cs := a.changes(daemon.ChangeFilter{DialogID: s.id})
	if len(cs) == 0 {
		return "No changes in this session yet."
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "- `%s` %s %s: **%s**", c.ID, c.Kind, c.Path, c.Status)
		if c.Reason != "" {
			fmt.Fprintf(&b, " (%s)", c.Reason)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// changes lists the engine's changes; a listing that fails lists none.
func (a *agent) changes(f daemon.ChangeFilter) []daemon.Change {
	cs, err := a.eng.Changes(a.ctx, f)
	if err != nil {
		return nil
	}
	return cs
}

// decideCommand applies or rejects the change named, or every pending
// change of the session: what a prompt that was cancelled left pending.
func (a *agent) decideCommand(ctx context.Context, s *session, name, arg string) (string, error) {
	ids := strings.Fields(arg)
	if len(ids) == 0 {
		for _, c := range a.changes(daemon.ChangeFilter{DialogID: s.id, Status: daemon.StatusPending}) {
			ids = append(ids, c.ID)
		}
		if len(ids) == 0 {
			return "No pending change in this session.", nil
		}
	}
	pctx := daemon.WithPeer(ctx, a.peer)
	var b strings.Builder
	for _, id := range ids {
		var c *daemon.Change
		var err error
		if name == "apply" {
			c, err = a.eng.Apply(pctx, id, nil)
		} else {
			c, err = a.eng.Reject(pctx, id, nil)
		}
		if err != nil {
			fmt.Fprintf(&b, "- `%s`: not done: %v\n", id, err)
			continue
		}
		fmt.Fprintf(&b, "- `%s` %s: **%s**\n", c.ID, c.Path, c.Status)
	}
	return b.String(), nil
}
