// Package acp is smith's Agent Client Protocol front: `smith acp` is an
// ACP agent on stdio, so that Zed, JetBrains IDEs, Emacs (agent-shell) and
// Neovim's agent plugins (codecompanion, avante) use smith's engine as
// their agent.
//
// The transport and the schema types are github.com/coder/acp-go-sdk
// (pinned in go.mod): its types are generated from the protocol's JSON
// schema, which keeps the field names right. smith adds what the SDK leaves
// to the agent: an answer to a malformed line, a turn that outlives the
// SDK's per-request context (the SDK cancels a running prompt when a second
// one arrives for the same session; smith refuses the second instead), and
// exactly one stopReason "cancelled" after session/cancel.
//
// An ACP session is a smith dialog. A prompt is one engine turn; every
// change the upstream proposes becomes an "edit" tool call with the
// engine's before/after text, then a permission request; the engine
// applies it through the client's fs/write_text_file when the client can
// (so its review and undo see the edit) and atomically on disk otherwise.
// docs/acp.md maps every engine event to its ACP update.
package acp
