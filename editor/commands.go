package editor

import (
	"context"
	"encoding/json"

	"go.lsp.dev/jsonrpc2"
)

// executeCommand runs a smith method named as a command ("smith.chat" for
// smith/chat) with the command's first argument as its params, so that an
// LSP client without smith support can reach every action. A workDoneToken
// on the command reports progress of the method it runs.
func (c *client) executeCommand(ctx context.Context, p *ExecuteCommandParams) (any, error) {
	method := methodFor(p.Command)
	if method == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "unknown command %q (the initialize result lists smith's commands)", p.Command)
	}
	if len(p.Arguments) > 1 {
		return nil, invalidParams("command %s takes at most one argument, an object of the params of %s", p.Command, method)
	}
	var params json.RawMessage
	if len(p.Arguments) == 1 {
		params = p.Arguments[0]
	}
	if len(p.WorkDoneToken) > 0 {
		ctx = context.WithValue(ctx, tokenKey{}, p.WorkDoneToken)
	}
	return c.routes[method].handle(ctx, params)
}
