//go:build !floor_only || floor_jsonrpc2

package main

import (
	"context"
	"os"

	"go.lsp.dev/jsonrpc2"
)

func init() { uses = append(uses, useJSONRPC2) }

// useJSONRPC2 serves JSON-RPC over stdio, as smith serve.
func useJSONRPC2() {
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(os.Stdin))
	conn.Go(context.Background(), func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		return req.Method, nil
	})
	<-conn.Done()
}
