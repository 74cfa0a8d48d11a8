package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// maxToolOutput bounds the text of a tool result shown in a tool call.
const maxToolOutput = 4000

// turnMapper maps one turn's engine events to session updates. emit runs
// on the turn's goroutine, in order; the permission requests for the
// turn's changes run on work's goroutine, so that the answer keeps
// streaming while the user decides.
type turnMapper struct {
	a   *agent
	s   *session
	ctx context.Context // cancelled by session/cancel

	turnID     string
	scanNext   bool            // a change event arrived: look for its record
	announced  map[string]bool // change ids with a tool call
	tools      []*upstreamTool // upstream tool calls, in order
	nTools     int
	textSent   bool
	separate   bool // a new text block began: start it on a new paragraph
	errorShown bool

	queue chan string // pending changes to ask about
	wg    sync.WaitGroup

	mu    sync.Mutex
	diffs map[string][]sdk.ToolCallContent // change id -> the diff content announced
}

// upstreamTool is a tool call of the upstream, as announced.
type upstreamTool struct {
	id, upstreamID, name string
	open                 bool
}

func newTurnMapper(a *agent, s *session, ctx context.Context) *turnMapper {
	t := &turnMapper{a: a, s: s, ctx: ctx, announced: map[string]bool{}, diffs: map[string][]sdk.ToolCallContent{}, queue: make(chan string, 256)}
	t.wg.Add(1)
	return t
}

// done waits until every change of the turn has been decided (or the
// prompt was cancelled).
func (t *turnMapper) done() {
	close(t.queue)
	t.wg.Wait()
}

func (t *turnMapper) emit(ev protocol.Event) {
	if t.turnID == "" {
		t.turnID = ev.TurnID
	}
	if t.scanNext {
		// The engine records a change right after emitting its event,
		// before the next one.
		t.scan()
	}
	switch ev.Type {
	case protocol.KindText:
		if ev.Text == "" {
			return
		}
		s := ev.Text
		if t.separate && t.textSent {
			s = "\n\n" + s
		}
		t.separate = false
		t.textSent = true
		t.text(s)
	case protocol.KindReasoning:
		if ev.Text != "" {
			t.a.update(t.s.id, sdk.UpdateAgentThoughtText(ev.Text))
		}
	case protocol.KindSegment:
		if ev.Segment != nil && ev.Segment.Phase == "start" && (ev.Segment.Block == "text" || ev.Segment.Block == "message") {
			t.separate = true
		}
	case protocol.KindToolCall:
		if ev.ToolCall != nil {
			t.toolCall(ev.ToolCall)
		}
	case protocol.KindToolResult:
		if ev.ToolResult != nil {
			t.toolResult(ev.ToolResult)
		}
	case protocol.KindChange:
		t.scanNext = true
	case protocol.KindCitation:
		if ev.Citation != nil {
			t.citation(ev.Citation)
		}
	case protocol.KindError:
		if ev.Error != nil {
			t.errorShown = true
			t.text(errorText(ev.Error.Code, ev.Error.Message))
		}
	case protocol.KindTurnEnd:
		if te := ev.TurnEnd; te != nil && te.Outcome == protocol.OutcomeError && !t.errorShown && te.Reason != "" {
			t.errorShown = true
			t.text(errorText("", te.Reason))
		}
	case protocol.KindViolation:
		if v := ev.Violation; v != nil {
			t.a.log.Warn("the upstream broke its contract", "kind", v.Kind, "message", v.Message)
			if v.Kind == "outsideWorkspace" {
				t.text("\n\n**smith refused a change:** " + v.Message + "\n")
			}
		}
	}
}

// toolKind guesses the ACP kind of an upstream tool from its name.
func toolKind(name string) sdk.ToolKind {
	n := strings.ToLower(name)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(n, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("delete", "remove"):
		return sdk.ToolKindDelete
	case has("move", "rename_file"):
		return sdk.ToolKindMove
	case has("read", "open", "list", "view", "cat"):
		return sdk.ToolKindRead
	case has("write", "replace", "edit", "patch", "create", "insert", "apply"):
		return sdk.ToolKindEdit
	case has("search", "grep", "find", "glob", "lookup", "retriev"):
		return sdk.ToolKindSearch
	case has("run", "exec", "shell", "command", "bash", "terminal"):
		return sdk.ToolKindExecute
	case has("fetch", "web", "http", "url", "download"):
		return sdk.ToolKindFetch
	case has("think", "plan"):
		return sdk.ToolKindThink
	}
	return sdk.ToolKindOther
}

func (t *turnMapper) toolCall(tc *protocol.ToolCall) {
	t.nTools++
	id := fmt.Sprintf("%s-tool-%d", t.turnID, t.nTools)
	ut := &upstreamTool{id: id, upstreamID: tc.ID, name: tc.Name, open: true}
	t.tools = append(t.tools, ut)
	title := tc.Name
	var raw any
	var locs []sdk.ToolCallLocation
	if len(tc.Args) > 0 {
		raw = json.RawMessage(tc.Args)
		var args map[string]any
		if json.Unmarshal(tc.Args, &args) == nil {
			for _, k := range []string{"path", "file", "file_path", "filename"} {
				if p, ok := args[k].(string); ok && p != "" {
					abs := p
					if !filepath.IsAbs(abs) {
						abs = filepath.Join(t.a.eng.Workspace(), p)
					}
					title = tc.Name + " " + p
					if abs, err := t.a.confine(abs); err == nil {
						locs = append(locs, sdk.ToolCallLocation{Path: abs})
					}
					break
				}
			}
		}
	}
	t.a.update(t.s.id, sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{
		ToolCallId: sdk.ToolCallId(id), Title: title, Kind: toolKind(tc.Name),
		Status: sdk.ToolCallStatusInProgress, RawInput: raw, Locations: locs,
	}})
}

// toolResult closes the tool call it belongs to: the one with its id,
// else the oldest open one of its name, else the oldest open one.
func (t *turnMapper) toolResult(tr *protocol.ToolResult) {
	var ut *upstreamTool
	for _, match := range []func(*upstreamTool) bool{
		func(u *upstreamTool) bool { return tr.ID != "" && u.upstreamID == tr.ID },
		func(u *upstreamTool) bool { return tr.Name != "" && u.name == tr.Name },
		func(u *upstreamTool) bool { return true },
	} {
		for _, u := range t.tools {
			if u.open && match(u) {
				ut = u
				break
			}
		}
		if ut != nil {
			break
		}
	}
	if ut == nil {
		// A result without a call: announce both at once.
		t.toolCall(&protocol.ToolCall{ID: tr.ID, Name: tr.Name})
		ut = t.tools[len(t.tools)-1]
	}
	ut.open = false
	status := sdk.ToolCallStatusCompleted
	out := string(tr.Result)
	var s string
	if json.Unmarshal(tr.Result, &s) == nil {
		out = s
	}
	if tr.Error != "" {
		status, out = sdk.ToolCallStatusFailed, tr.Error
	}
	var content []sdk.ToolCallContent
	if out != "" {
		if len(out) > maxToolOutput {
			out = out[:maxToolOutput] + "\n[… cut by smith …]"
		}
		content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(out))}
	}
	var raw any
	if len(tr.Result) > 0 {
		raw = json.RawMessage(tr.Result)
	}
	t.a.update(t.s.id, sdk.UpdateToolCall(sdk.ToolCallId(ut.id), sdk.WithUpdateStatus(status), sdk.WithUpdateContent(content), sdk.WithUpdateRawOutput(raw)))
}

// endTools closes the upstream tool calls that got no result: completed
// when the turn completed (AgentSmithy sends no tool results), failed
// otherwise.
func (t *turnMapper) endTools(outcome protocol.Outcome) {
	status := sdk.ToolCallStatusCompleted
	if outcome != protocol.OutcomeCompleted {
		status = sdk.ToolCallStatusFailed
	}
	for _, u := range t.tools {
		if u.open {
			u.open = false
			t.a.update(t.s.id, sdk.UpdateToolCall(sdk.ToolCallId(u.id), sdk.WithUpdateStatus(status)))
		}
	}
}

// citation sends a source as a resource link in the message.
func (t *turnMapper) citation(c *protocol.Citation) {
	name := c.Title
	for _, n := range []string{c.Section, c.Chapter, c.File} {
		if name == "" {
			name = n
		}
	}
	uri := c.URL
	if uri == "" && c.File != "" {
		p := c.File
		if !filepath.IsAbs(p) {
			p = filepath.Join(t.a.eng.Workspace(), p)
		}
		uri = (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
	}
	if uri == "" {
		t.text("\n[source: " + name + "]")
		return
	}
	if name == "" {
		name = uri
	}
	link := sdk.ResourceLinkBlock(name, uri)
	if c.Snippet != "" {
		link.ResourceLink.Description = sdk.Ptr(c.Snippet)
	}
	t.a.update(t.s.id, sdk.UpdateAgentMessage(link))
}

// scan announces the changes of the turn recorded since the last scan.
func (t *turnMapper) scan() {
	t.scanNext = false
	if t.turnID == "" {
		return
	}
	for _, c := range t.a.changes(daemon.ChangeFilter{TurnID: t.turnID}) {
		if t.announced[c.ID] {
			continue
		}
		t.announced[c.ID] = true
		t.announce(c)
	}
}

// announce sends a change's tool call and queues a pending one for a
// decision.
func (t *turnMapper) announce(c daemon.Change) {
	tc := t.a.changeCall(c)
	status := sdk.ToolCallStatusPending
	switch c.Status {
	case daemon.StatusAppliedUpstream, daemon.StatusApplied:
		status = sdk.ToolCallStatusCompleted
	case daemon.StatusPending, daemon.StatusUndone:
	default:
		status = sdk.ToolCallStatusFailed
	}
	tc.Status = status
	t.mu.Lock()
	t.diffs[c.ID] = tc.Content
	t.mu.Unlock()
	t.a.update(t.s.id, sdk.SessionUpdate{ToolCall: tc})
	if status == sdk.ToolCallStatusPending {
		t.queue <- c.ID
	}
}

// changeCall is the edit tool call of a change: its title, the engine's
// before/after text as a diff, and where it is.
func (a *agent) changeCall(c daemon.Change) *sdk.SessionUpdateToolCall {
	ws := a.eng.Workspace()
	abs := filepath.Join(ws, filepath.FromSlash(c.Path))
	tc := &sdk.SessionUpdateToolCall{
		ToolCallId: changeToolID(c.ID),
		Title:      changeTitle(c),
		Kind:       sdk.ToolKindEdit,
		Locations:  changeLocations(abs, c),
		RawInput:   map[string]any{"change": c.ID, "path": abs, "kind": c.Kind},
	}
	if c.Kind == protocol.ChangeDelete {
		tc.Kind = sdk.ToolKindDelete
	}
	if d, err := a.changeDiff(c, abs); err == nil {
		tc.Content = append(tc.Content, d)
	} else {
		a.log.Debug("no preview for a change", "change", c.ID, "err", err)
	}
	if c.Reason != "" && c.Status != daemon.StatusPending && c.Status != daemon.StatusApplied && c.Status != daemon.StatusAppliedUpstream {
		tc.Content = append(tc.Content, sdk.ToolContent(sdk.TextBlock(fmt.Sprintf("%s: %s", c.Status, c.Reason))))
	}
	return tc
}

// changeDiff is the ACP diff of a change: the engine's preview, the whole
// file before and after, forward whatever the status (oldText absent for a
// new file).
func (a *agent) changeDiff(c daemon.Change, abs string) (sdk.ToolCallContent, error) {
	pv, err := a.eng.Preview(a.ctx, c.ID, nil)
	if err != nil {
		return sdk.ToolCallContent{}, err
	}
	if c.Kind == protocol.ChangeCreate {
		return sdk.ToolDiffContent(abs, pv.Result), nil
	}
	return sdk.ToolDiffContent(abs, pv.Result, pv.Original), nil
}

func changeToolID(id string) sdk.ToolCallId { return sdk.ToolCallId("change-" + id) }

func changeTitle(c daemon.Change) string {
	switch c.Kind {
	case protocol.ChangeCreate:
		return "Create " + c.Path
	case protocol.ChangeDelete:
		return "Delete " + c.Path
	case protocol.ChangeRename:
		return "Rename " + c.OldPath + " → " + c.Path
	}
	return "Edit " + c.Path
}

// changeLocations points the client at the first hunk of a change, in the
// file as it is now: the old side of a pending hunk, the new side of a
// written one (the engine's ranges; 0 means "at the top").
func changeLocations(abs string, c daemon.Change) []sdk.ToolCallLocation {
	loc := sdk.ToolCallLocation{Path: abs}
	if len(c.Hunks) > 0 {
		h := c.Hunks[0]
		line := h.OldStart
		if h.Status == daemon.StatusApplied || h.Status == daemon.StatusAppliedUpstream {
			line = h.NewStart
		}
		loc.Line = sdk.Ptr(max(line, 1))
	}
	return []sdk.ToolCallLocation{loc}
}

// work decides the queued changes one after the other: by the session's
// mode or earlier "always" answer, else by asking the client.
func (t *turnMapper) work() {
	defer t.wg.Done()
	stopped := false
	for id := range t.queue {
		if stopped || t.ctx.Err() != nil {
			stopped = true
			t.finish(id, sdk.ToolCallStatusFailed, "not applied: the prompt was cancelled; the change stays pending: /apply or /reject it")
			continue
		}
		if !t.decide(id) {
			stopped = true
		}
	}
}

// Permission options.
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

var permissionOptions = []sdk.PermissionOption{
	{OptionId: optAllowOnce, Name: "Apply", Kind: sdk.PermissionOptionKindAllowOnce},
	{OptionId: optAllowAlways, Name: "Apply all changes in this session", Kind: sdk.PermissionOptionKindAllowAlways},
	{OptionId: optRejectOnce, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
	{OptionId: optRejectAlways, Name: "Reject all changes in this session", Kind: sdk.PermissionOptionKindRejectAlways},
}

// decide applies or rejects change id; false when the prompt was
// cancelled meanwhile.
func (t *turnMapper) decide(id string) bool {
	s := t.s
	s.mu.Lock()
	auto, allow, reject := s.mode == ModeAuto, s.allowAll, s.rejectAll
	s.mu.Unlock()
	switch {
	case auto || allow:
		t.apply(id)
		return true
	case reject:
		t.reject(id)
		return true
	}
	c, err := t.a.eng.change(t.ctx, id)
	if err != nil {
		t.finish(id, sdk.ToolCallStatusFailed, err.Error())
		return true
	}
	tc := t.a.changeCall(*c)
	resp, err := t.a.conn.RequestPermission(t.ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(s.id),
		ToolCall: sdk.ToolCallUpdate{
			ToolCallId: tc.ToolCallId, Title: sdk.Ptr(tc.Title), Kind: sdk.Ptr(tc.Kind),
			Status: sdk.Ptr(sdk.ToolCallStatusPending), Content: tc.Content, Locations: tc.Locations,
		},
		Options: permissionOptions,
	})
	if t.ctx.Err() != nil {
		// session/cancel: whatever the answer, nothing more is applied.
		t.finish(id, sdk.ToolCallStatusFailed, "not applied: the prompt was cancelled; the change stays pending: /apply or /reject it")
		return false
	}
	if err != nil || resp.Outcome.Selected == nil {
		// A failed request, or a permission dismissed without a cancel of
		// the prompt: this change stays pending, the next ones are asked.
		why := "not applied: the permission request was dismissed; the change stays pending: /apply or /reject it"
		if err != nil {
			t.a.log.Warn("permission request failed", "change", id, "err", err)
			why = "not applied: the permission request failed (" + err.Error() + "); the change stays pending: /apply or /reject it"
		}
		t.finish(id, sdk.ToolCallStatusFailed, why)
		return true
	}
	switch opt := string(resp.Outcome.Selected.OptionId); opt {
	case optAllowAlways:
		s.mu.Lock()
		s.allowAll = true
		s.mu.Unlock()
		fallthrough
	case optAllowOnce:
		t.apply(id)
	case optRejectAlways:
		s.mu.Lock()
		s.rejectAll = true
		s.mu.Unlock()
		fallthrough
	case optRejectOnce:
		t.reject(id)
	default:
		t.finish(id, sdk.ToolCallStatusFailed, fmt.Sprintf("not applied: the client chose an unknown option %q", opt))
	}
	return true
}

// apply has the engine write the change (through fs/write_text_file when
// the client can, atomically on disk otherwise). It runs on the
// connection's context: a write is never cut off halfway by a cancel.
func (t *turnMapper) apply(id string) {
	t.a.update(t.s.id, sdk.UpdateToolCall(changeToolID(id), sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress)))
	c, err := t.a.eng.Apply(daemon.WithPeer(t.a.ctx, t.a.peer), id, nil)
	if err != nil {
		t.finish(id, sdk.ToolCallStatusFailed, "not applied: "+err.Error())
		return
	}
	t.a.update(t.s.id, sdk.UpdateToolCall(changeToolID(id), sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted),
		sdk.WithUpdateRawOutput(map[string]any{"change": c.ID, "status": c.Status})))
}

func (t *turnMapper) reject(id string) {
	c, err := t.a.eng.Reject(daemon.WithPeer(t.a.ctx, t.a.peer), id, nil)
	if err != nil {
		t.finish(id, sdk.ToolCallStatusFailed, "reject failed: "+err.Error())
		return
	}
	t.finish(id, sdk.ToolCallStatusFailed, fmt.Sprintf("rejected: nothing was written (change %s is %s)", c.ID, c.Status))
}

// finish ends a change's tool call with a status and a line of text
// after the diff it was announced with (an update's content replaces the
// call's, so the diff is sent again).
func (t *turnMapper) finish(id string, status sdk.ToolCallStatus, why string) {
	t.mu.Lock()
	content := append([]sdk.ToolCallContent(nil), t.diffs[id]...)
	t.mu.Unlock()
	content = append(content, sdk.ToolContent(sdk.TextBlock(why)))
	t.a.update(t.s.id, sdk.UpdateToolCall(changeToolID(id), sdk.WithUpdateStatus(status), sdk.WithUpdateContent(content)))
}
