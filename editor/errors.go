package editor

import (
	"context"
	"errors"
	"fmt"

	"go.lsp.dev/jsonrpc2"

	"github.com/smith-dev/smith/daemon"
)

// JSON-RPC error codes of the smith protocol (docs/protocol.md lists them).
// They sit in JSON-RPC's range for implementation-defined server errors
// (-32099…-32000), clear of the two codes LSP itself uses there
// (-32001 UnknownError, -32002 ServerNotInitialized).
const (
	CodeDialogBusy          jsonrpc2.Code = -32010
	CodeTooManyTurns        jsonrpc2.Code = -32011
	CodeMessageTooLong      jsonrpc2.Code = -32012
	CodeUnknownChange       jsonrpc2.Code = -32013
	CodeUnknownDialog       jsonrpc2.Code = -32014
	CodeConflict            jsonrpc2.Code = -32015
	CodeUnsupported         jsonrpc2.Code = -32016
	CodeUpstreamUnreachable jsonrpc2.Code = -32017
	CodeUpstreamError       jsonrpc2.Code = -32018
	CodeInvalidState        jsonrpc2.Code = -32019
	CodeStateUnusable       jsonrpc2.Code = -32020
)

// CodeRequestCancelled is LSP's RequestCancelled; jsonrpc2 has no constant.
const CodeRequestCancelled jsonrpc2.Code = -32800

// codeFor maps the engine's errors to smith's codes; ok is false for
// errors that have none (they become InternalError: a bug). The engine
// wraps the errors of the upstream's client in its own (daemon.ErrUpstream,
// daemon.ErrUpstreamUnreachable), so only daemon's errors are mapped here.
func codeFor(err error) (jsonrpc2.Code, bool) {
	table := []struct {
		target error
		code   jsonrpc2.Code
	}{
		{daemon.ErrDialogBusy, CodeDialogBusy},
		{daemon.ErrTooManyTurns, CodeTooManyTurns},
		{daemon.ErrMessageTooLong, CodeMessageTooLong},
		{daemon.ErrUnknownChange, CodeUnknownChange},
		{daemon.ErrUnknownDialog, CodeUnknownDialog},
		{daemon.ErrConflict, CodeConflict},
		{daemon.ErrUnsupported, CodeUnsupported},
		{daemon.ErrUpstreamUnreachable, CodeUpstreamUnreachable},
		{daemon.ErrNoUpstream, CodeUpstreamUnreachable},
		{daemon.ErrUpstream, CodeUpstreamError},
		{daemon.ErrInvalidState, CodeInvalidState},
		{daemon.ErrStateCorrupt, CodeStateUnusable},
		{daemon.ErrStateLocked, CodeStateUnusable},
		{daemon.ErrEmptyMessage, jsonrpc2.InvalidParams},
		{daemon.ErrOutsideWorkspace, jsonrpc2.InvalidParams},
		{context.Canceled, CodeRequestCancelled},
	}
	for _, t := range table {
		if errors.Is(err, t.target) {
			return t.code, true
		}
	}
	return 0, false
}

// wireError turns an error from the engine into the JSON-RPC error the
// client sees: a documented code and the error's own message, which says
// what happened and what to do. data, when not nil, is attached as the
// error's data member (smith/chat puts the ended turn there).
func wireError(err error, data any) error {
	if err == nil {
		return nil
	}
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) {
		return err // already coded (invalid params, method not found, ...)
	}
	code, ok := codeFor(err)
	if !ok {
		code = jsonrpc2.InternalError
	}
	e := jsonrpc2.NewError(code, err.Error())
	if data != nil {
		if raw, merr := (codec{}).Marshal(data); merr == nil {
			e.Data = raw
		}
	}
	return e
}

// invalidParams wraps a decoding or validation problem as -32602.
func invalidParams(format string, args ...any) error {
	return fmt.Errorf("%w: %s", jsonrpc2.ErrInvalidParams, fmt.Sprintf(format, args...))
}

// errNotInitialized answers requests that arrive before initialize.
var errNotInitialized = jsonrpc2.NewError(jsonrpc2.ServerNotInitialized, "server not initialized: send initialize first")

// errShutDown answers requests that arrive after shutdown.
var errShutDown = jsonrpc2.NewError(jsonrpc2.InvalidRequest, "server is shutting down: only exit is accepted after shutdown")
