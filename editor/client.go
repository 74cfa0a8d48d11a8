package editor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/protocol"
)

// Client is the far end of the protocol for a front without buffers: the
// terminal commands of smith use it to reach the engine that a running
// smith serve holds (docs/protocol.md, "Terminal attach"). It initializes
// as an LSP client that announces no capabilities and opens no documents,
// so the engine writes files on disk for it, or routes an edit to the
// buffer of an editor that has the file open.
//
// A Client is safe for concurrent use, but runs one Chat at a time: the
// smith/event notifications of a connection are not tagged with the
// request they belong to. Close it when done; it owns the connection.
//
// It implements daemon.API: a front programs against that interface and
// works the same in process (*daemon.Engine) and through a smith serve.
type Client struct {
	conn   jsonrpc2.Conn
	notify func(method string, params json.RawMessage)

	mu      sync.Mutex
	onEvent func(protocol.Event) // the running Chat's; nil between turns
}

var _ daemon.API = (*Client)(nil)

// ClientOptions configure a Client.
type ClientOptions struct {
	// Notify receives the server's notifications other than smith/event
	// (smith/changeUpdated, smith/fileChanged, $/progress), in order, on the
	// connection's read loop: it must not call the Client. nil drops them.
	Notify func(method string, params json.RawMessage)
}

// DialClient connects to a smith serve listening on the Unix socket path.
// It does not initialize: call Initialize next.
func DialClient(ctx context.Context, path string, opts ClientOptions) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to smith serve at %s: %w", path, err)
	}
	return NewClient(nc, opts), nil
}

// NewClient speaks the protocol on rwc (LSP framing) and owns it.
func NewClient(rwc io.ReadWriteCloser, opts ClientOptions) *Client {
	c := &Client{notify: opts.Notify}
	c.conn = jsonrpc2.NewConn(callIDStream{jsonrpc2.NewHeaderStream(rwc)}, jsonrpc2.WithCodec(codec{}))
	c.conn.Go(context.Background(), c.handle)
	return c
}

// Initialize sends initialize (workspace as rootUri, a clientInfo of
// name, no capabilities) and initialized. It returns the server's answer;
// the workspace the engine serves is in its experimental.smith.workspace.
func (c *Client) Initialize(ctx context.Context, workspace, name, version string) (*InitializeResult, error) {
	root := pathToURI(workspace)
	pid := int32(os.Getpid())
	p := &InitializeParams{ProcessID: &pid, ClientInfo: &ClientInfo{Name: name, Version: version}, RootURI: &root}
	var res InitializeResult
	if err := c.call(ctx, MethodInitialize, p, &res); err != nil {
		return nil, err
	}
	if err := c.conn.Notify(ctx, MethodInitialized, struct{}{}); err != nil {
		return nil, fmt.Errorf("send initialized: %w", err)
	}
	return &res, nil
}

// closeTimeout bounds the wait for the answer to shutdown in Close.
const closeTimeout = 5 * time.Second

// Close ends the session politely (shutdown, then exit) and closes the
// connection. The server cancels the turns this Client still runs.
func (c *Client) Close() error {
	select {
	case <-c.conn.Done():
	default:
		// A server that does not answer must not keep the caller.
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		if err := c.call(ctx, MethodShutdown, nil, nil); err == nil {
			_ = c.conn.Notify(ctx, MethodExit, nil)
		}
		cancel()
	}
	err := c.conn.Close()
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Done is closed when the connection has ended (the server went away).
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// Chat runs one turn (smith/chat). emit receives the turn's events, in
// order, from the connection's read loop, all of them before Chat returns.
// Cancelling ctx sends $/cancelRequest and still waits for the answer: the
// turn ends "cancelled" with its partial text, as in the engine. Like
// daemon.Engine.Chat, Chat may return a result together with an error
// (the ended turn the server attached to the error). The result's Summary,
// which the wire does not carry, is rebuilt from the events. req.Context
// is not sent: an editor names its context by URI (ChatParams.Context),
// and a terminal has none.
func (c *Client) Chat(ctx context.Context, req daemon.ChatRequest, emit func(protocol.Event)) (*daemon.ChatResult, error) {
	p := &ChatParams{DialogID: req.DialogID, Message: req.Message}
	sum := &protocol.Summary{Type: "summary"}
	var text strings.Builder // for a result whose text was cut (textTruncated)
	c.mu.Lock()
	if c.onEvent != nil {
		c.mu.Unlock()
		return nil, errors.New("editor.Client runs one chat turn at a time")
	}
	c.onEvent = func(ev protocol.Event) {
		summarize(sum, ev)
		if ev.Type == protocol.KindText {
			text.WriteString(ev.Text)
		}
		if emit != nil {
			emit(ev)
		}
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.onEvent = nil
		c.mu.Unlock()
	}()
	var res daemon.ChatResult
	err := c.cancellableCall(ctx, MethodChat, p, &res)
	var re *RemoteError
	if errors.As(err, &re) && len(re.Data) > 0 {
		if json.Unmarshal(re.Data, &res) != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	sum.DialogID, sum.TurnID, sum.Outcome = res.DialogID, res.TurnID, res.Outcome
	sum.Text, sum.Dialect = res.Text, res.Dialect
	if res.Protocol != "" {
		sum.Protocol = &res.Protocol
	}
	if res.TextTruncated {
		// The server kept only the beginning; the events carried it all.
		res.Text, res.TextTruncated = text.String(), false
		sum.Text = res.Text
	}
	res.Summary = sum
	return &res, err
}

// summarize adds what the wire result lacks to sum (protocol.Turn records
// the same while it reads the stream).
func summarize(sum *protocol.Summary, ev protocol.Event) {
	switch {
	case ev.Type == protocol.KindReasoning:
		sum.Reasoning += ev.Text
	case ev.Citation != nil:
		sum.Citations = append(sum.Citations, *ev.Citation)
	case ev.ToolCall != nil:
		sum.ToolCalls = protocol.MergeToolCall(sum.ToolCalls, *ev.ToolCall)
	case ev.ToolResult != nil:
		sum.ToolResults = append(sum.ToolResults, *ev.ToolResult)
	case ev.Error != nil:
		sum.Errors = append(sum.Errors, *ev.Error)
	case ev.Violation != nil:
		sum.Violations = append(sum.Violations, *ev.Violation)
	}
}

// Changes lists change proposals (smith/changes). TurnID is not part of
// the wire filter and is applied here.
func (c *Client) Changes(ctx context.Context, f daemon.ChangeFilter) ([]daemon.Change, error) {
	var all []daemon.Change
	if err := c.call(ctx, MethodChanges, &ChangesParams{DialogID: f.DialogID, Status: f.Status}, &all); err != nil {
		return nil, err
	}
	if f.TurnID == "" {
		return all, nil
	}
	var out []daemon.Change
	for _, ch := range all {
		if ch.TurnID == f.TurnID {
			out = append(out, ch)
		}
	}
	return out, nil
}

// Preview returns a change's text before and after (smith/change/preview).
func (c *Client) Preview(ctx context.Context, changeID string, hunks []string) (*daemon.Preview, error) {
	var p daemon.Preview
	if err := c.call(ctx, MethodChangePreview, &ChangeParams{ChangeID: changeID, Hunks: hunks}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Apply applies hunks of a change, all pending ones when hunks is empty
// (smith/change/apply).
func (c *Client) Apply(ctx context.Context, changeID string, hunks []string) (*daemon.Change, error) {
	return c.changeCall(ctx, MethodChangeApply, &ChangeParams{ChangeID: changeID, Hunks: hunks})
}

// Reject rejects hunks of a change (smith/change/reject).
func (c *Client) Reject(ctx context.Context, changeID string, hunks []string) (*daemon.Change, error) {
	return c.changeCall(ctx, MethodChangeReject, &ChangeParams{ChangeID: changeID, Hunks: hunks})
}

// Undo undoes a change, the most recent apply when changeID is empty
// (smith/undo).
func (c *Client) Undo(ctx context.Context, changeID string) (*daemon.Change, error) {
	return c.changeCall(ctx, MethodUndo, &UndoParams{ChangeID: changeID})
}

// ApplyPatch applies the files of a diff together, as one undo group
// (smith/patch/apply).
func (c *Client) ApplyPatch(ctx context.Context, dialogID string, chs []protocol.Change) ([]daemon.Change, error) {
	var out []daemon.Change
	if err := c.call(ctx, MethodPatchApply, &PatchApplyParams{DialogID: dialogID, Changes: chs}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Client) changeCall(ctx context.Context, method string, params any) (*daemon.Change, error) {
	var ch daemon.Change
	if err := c.call(ctx, method, params, &ch); err != nil {
		return nil, err
	}
	return &ch, nil
}

// Dialogs lists the dialogs (smith/dialogs).
func (c *Client) Dialogs(ctx context.Context) ([]daemon.Dialog, error) {
	var ds []daemon.Dialog
	err := c.call(ctx, MethodDialogs, nil, &ds)
	return ds, err
}

// NewDialog creates a dialog (smith/dialog/new).
func (c *Client) NewDialog(ctx context.Context, title string) (daemon.Dialog, error) {
	var d daemon.Dialog
	err := c.call(ctx, MethodDialogNew, &DialogNewParams{Title: title}, &d)
	return d, err
}

// SelectDialog makes a dialog the current one (smith/dialog/select).
func (c *Client) SelectDialog(ctx context.Context, id string) error {
	return c.call(ctx, MethodDialogSelect, &DialogParams{DialogID: id}, nil)
}

// RenameDialog renames a dialog (smith/dialog/rename).
func (c *Client) RenameDialog(ctx context.Context, id, title string) error {
	return c.call(ctx, MethodDialogRename, &DialogRenameParams{DialogID: id, Title: title}, nil)
}

// DeleteDialog deletes a dialog (smith/dialog/delete).
func (c *Client) DeleteDialog(ctx context.Context, id string) error {
	return c.call(ctx, MethodDialogDelete, &DialogParams{DialogID: id}, nil)
}

// History returns a page of a dialog's messages (smith/history); before < 0
// asks for the latest page, as in daemon.Engine.History.
func (c *Client) History(ctx context.Context, id string, limit, before int) (*protocol.HistoryPage, error) {
	p := &HistoryParams{DialogID: id, Limit: limit}
	if before >= 0 {
		p.Before = &before
	}
	return callFor[protocol.HistoryPage](ctx, c, MethodHistory, p)
}

// Status describes the engine (smith/status).
func (c *Client) Status(ctx context.Context) (daemon.Status, error) {
	var st daemon.Status
	err := c.call(ctx, MethodStatus, nil, &st)
	return st, err
}

// Session returns a dialog's session (smith/session); dialogID "" means
// the current dialog.
func (c *Client) Session(ctx context.Context, dialogID string) (*protocol.SessionStatus, error) {
	return callFor[protocol.SessionStatus](ctx, c, MethodSession, &SessionParams{DialogID: dialogID})
}

// Checkpoints lists a dialog's checkpoints (smith/checkpoints).
func (c *Client) Checkpoints(ctx context.Context, dialogID string) (*protocol.CheckpointList, error) {
	return callFor[protocol.CheckpointList](ctx, c, MethodCheckpoints, &SessionParams{DialogID: dialogID})
}

// Approve accepts a dialog's session (smith/session/approve).
func (c *Client) Approve(ctx context.Context, dialogID string) (*protocol.ApproveResult, error) {
	return callFor[protocol.ApproveResult](ctx, c, MethodSessionApprove, &SessionParams{DialogID: dialogID})
}

// Reset abandons a dialog's session (smith/session/reset).
func (c *Client) Reset(ctx context.Context, dialogID string) (*protocol.ResetResult, error) {
	return callFor[protocol.ResetResult](ctx, c, MethodSessionReset, &SessionParams{DialogID: dialogID})
}

// Restore rolls the workspace back to a checkpoint of a dialog
// (smith/checkpoint/restore).
func (c *Client) Restore(ctx context.Context, dialogID, checkpoint string) (*protocol.RestoreResult, error) {
	return callFor[protocol.RestoreResult](ctx, c, MethodCheckpointRestore, &RestoreParams{DialogID: dialogID, Checkpoint: checkpoint})
}

// callFor sends a request whose answer is one T.
func callFor[T any](ctx context.Context, c *Client, method string, params any) (*T, error) {
	var res T
	if err := c.call(ctx, method, params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// call sends a request and turns an error response into a *RemoteError.
func (c *Client) call(ctx context.Context, method string, params, result any) error {
	_, err := c.conn.Call(ctx, method, params, result)
	return c.remoteError(method, err)
}

// cancellableCall is call for a request whose answer matters even after
// ctx is cancelled (a turn's partial text): the request is sent under a
// context that is not cancelled, and ctx's cancellation becomes a
// $/cancelRequest for it.
func (c *Client) cancellableCall(ctx context.Context, method string, params, result any) error {
	slot := make(chan jsonrpc2.ID, 1)
	finished := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		select {
		case id := <-slot:
			if err := c.conn.Notify(context.Background(), MethodCancelRequest, map[string]any{"id": idValue(id)}); err != nil {
				return // the connection is gone; the call ends with it
			}
		case <-finished:
		}
	})
	defer stop()
	defer close(finished)
	callCtx := context.WithValue(context.WithoutCancel(ctx), callIDKey{}, slot)
	_, err := c.conn.Call(callCtx, method, params, result)
	return c.remoteError(method, err)
}

// handle answers what the server sends: smith/event goes to the running
// Chat, other notifications to ClientOptions.Notify. The Client has no
// buffers, so it refuses workspace/applyEdit (the engine does not send it
// one: it announces no applyEdit capability).
func (c *Client) handle(_ context.Context, req *jsonrpc2.Request) (any, error) {
	switch req.Method() {
	case MethodEvent:
		var p EventParams
		if err := (codec{}).Unmarshal(req.Params(), &p); err != nil {
			return nil, nil // a notification has no answer; nothing to render
		}
		c.mu.Lock()
		f := c.onEvent
		c.mu.Unlock()
		if f != nil {
			f(p.Event)
		}
		return nil, nil
	case MethodApplyEdit:
		return &ApplyWorkspaceEditResult{Applied: false, FailureReason: "this client (a terminal) has no open buffers"}, nil
	}
	if req.IsCall() {
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "method %s is not handled by a terminal client", req.Method())
	}
	if c.notify != nil {
		c.notify(req.Method(), json.RawMessage(append([]byte(nil), req.Params()...)))
	}
	return nil, nil
}

// callIDKey carries a channel that learns the id of the call written under
// the context.
type callIDKey struct{}

// callIDStream tells a caller the id jsonrpc2 gave its call as the call is
// written: Conn.Call only returns the id after the answer, and the answer
// of a request cancelled with $/cancelRequest (a turn's partial text) is
// still needed. Only writes whose context asks for it are inspected.
type callIDStream struct{ jsonrpc2.Stream }

func (s callIDStream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	if slot, ok := ctx.Value(callIDKey{}).(chan jsonrpc2.ID); ok {
		// The library's call envelope is unexported; its encoding is not.
		if raw, err := jsonrpc2.EncodeMessage(msg); err == nil {
			if m, err := jsonrpc2.DecodeMessage(raw); err == nil {
				if call, ok := m.(*jsonrpc2.Call); ok {
					select {
					case slot <- call.ID():
					default:
					}
				}
			}
		}
	}
	return s.Stream.Write(ctx, msg)
}

// RemoteError is an error response of the server. Is maps smith's codes
// back to the engine's errors (daemon.ErrUnknownChange, ...) so that a
// front handles a remote engine's errors like a local one's.
type RemoteError struct {
	Method  string
	Code    jsonrpc2.Code
	Message string
	Data    json.RawMessage // smith/chat: the ended turn, when there is one
}

// Error is the server's message, which says what happened and what to do.
func (e *RemoteError) Error() string { return e.Message }

// Is reports whether the code stands for target.
func (e *RemoteError) Is(target error) bool {
	known := sentinelOf(e.Code)
	return known != nil && errors.Is(known, target)
}

// sentinelOf is codeFor read backwards: the engine error a code stands for.
func sentinelOf(code jsonrpc2.Code) error {
	switch code {
	case CodeDialogBusy:
		return daemon.ErrDialogBusy
	case CodeTooManyTurns:
		return daemon.ErrTooManyTurns
	case CodeMessageTooLong:
		return daemon.ErrMessageTooLong
	case CodeUnknownChange:
		return daemon.ErrUnknownChange
	case CodeUnknownDialog:
		return daemon.ErrUnknownDialog
	case CodeConflict:
		return daemon.ErrConflict
	case CodeUnsupported:
		return daemon.ErrUnsupported
	case CodeUpstreamUnreachable:
		return daemon.ErrUpstreamUnreachable
	case CodeUpstreamError:
		return daemon.ErrUpstream
	case CodeInvalidState:
		return daemon.ErrInvalidState
	case CodeStateUnusable:
		return daemon.ErrStateCorrupt
	case CodeRequestCancelled:
		return context.Canceled
	}
	return nil
}

// remoteError wraps an error response; a transport error says whether
// the server went away.
func (c *Client) remoteError(method string, err error) error {
	var rpc *jsonrpc2.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rpc):
		return &RemoteError{Method: method, Code: rpc.Code, Message: rpc.Message, Data: json.RawMessage(rpc.Data)}
	}
	select {
	case <-c.conn.Done():
		return fmt.Errorf("%s: the connection to smith serve is closed (did the editor exit?): %w", method, err)
	default:
		return fmt.Errorf("%s: %w", method, err)
	}
}
