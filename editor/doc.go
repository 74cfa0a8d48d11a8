// Package editor is the front that editors talk to: the LSP base protocol
// (Content-Length framing over stdio or a Unix socket, go.lsp.dev/jsonrpc2),
// the LSP lifecycle, a mirror of the editor's open buffers, position
// encodings, the smith/* methods and workspace/applyEdit. Business logic
// lives in package daemon.
package editor
