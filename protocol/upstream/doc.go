// Package upstream is smith's embedded chat server: an AgentSmithy-compatible
// API (POST /api/chat streaming SSE, dialogs, history, sessions, checkpoints,
// approve/reset/restore, /health, .agentsmithy/status.json) with a
// deterministic demo agent that edits a real workspace, the same agent in the
// other dialects smith reads (rag, textbook, lifecycle, oracle), replay of
// recorded streams in chosen write sizes, and fault injection.
//
// It exists so that everything in smith runs offline and so that tests of the
// reader, the daemon, the CLI and the editor plugins talk to a faithful
// server over real HTTP: the bytes on the wire (CRLF framing, key order,
// Python's separators, raw UTF-8, the difflib diff quirk of file_edit) are the
// real servers', not a convenient imitation. It depends on package protocol
// for shared names only, never on its reader.
//
// Use New, then either mount Handler (httptest.NewServer(s.Handler())) or
// call Start and Close. docs/upstream-server.md describes the command
// `smith upstream`, the phrases of the demo agent and the fault names.
package upstream
