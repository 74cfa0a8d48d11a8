// Package editor is the front that editors talk to: JSON-RPC 2.0 with LSP
// framing (go.lsp.dev/jsonrpc2) over stdio or a Unix socket, the LSP
// lifecycle, a mirror of the editor's open buffers, position encodings,
// the smith/* methods and notifications, workspace/executeCommand and
// workspace/applyEdit. docs/protocol.md is the protocol's authority.
//
// The package holds no business logic: every request is decoded, checked
// and handed to the workspace's daemon.Engine, and every engine error is
// mapped to a documented JSON-RPC code (errors.go). In the other direction
// each connection implements daemon.Editor, so the engine can read the
// buffers the user sees and edit them.
//
// # Files
//
// server.go (Server, connections, teardown), transport.go (the guard that
// answers malformed frames), framing.go (reading frames: bounded, back in
// step after a malformed header), outbox.go (the bounded, batching queue
// toward the editor), stdio*.go (stdin/stdout as the stream),
// codec.go (payload JSON), dispatch.go (routing, lifecycle gate,
// cancellation), lifecycle.go, textdocument.go (buffer mirror),
// revalidate.go (re-validating the changes of edited buffers, debounced),
// positions.go, applyedit.go (WorkspaceEdit building and engine
// notifications), chat.go, changes.go, dialogs.go, session.go,
// commands.go, progress.go, errors.go (the documented error codes),
// methods.go, lsptypes.go (the LSP types, hand-written: go.lsp.dev/protocol
// does not build with jsonrpc2 v1), engines.go (one engine per workspace,
// shared by connections), client.go (Client: the other end, for fronts
// without buffers such as smith's terminal commands).
//
// # Concurrency and lifetime
//
// A Server serves any number of connections; ServeConn owns its stream
// and closes it. Buffer notifications run in wire order on the
// connection's read loop; smith/* requests are released from it (jsonrpc2
// Async) because they wait on the upstream or call the editor back, so
// they run concurrently and may answer out of order. A connection's engine
// is acquired at initialize and released when the connection ends; the
// last release closes it. The engine's notifications reach a connection
// from a queue of its own (daemon), so a connection that stops reading
// holds up no other. Teardown (exit, end of input, or the Server's
// context) refuses new requests, cancels the running ones (a running turn
// ends "cancelled" and gives its dialog back), waits for their handlers to
// return, then closes the stream.
//
// The fake editor in package editortest drives a real smith serve process
// in the integration tests and benchmarks.
package editor
