// Package protocol is smith's upstream side: it reads Server-Sent Events
// exactly as the WHATWG algorithm says, maps the payload dialects of chat
// servers (AgentSmithy v2/v1/v0, rag, textbook, lifecycle, oracle) onto one
// normalized event model, runs the per-turn state machine, and talks HTTP to
// the upstream (the chat stream and the AgentSmithy REST API).
//
// It knows nothing of editors or files: a Change event carries a diff or new
// content, but applying it is the daemon's business.
package protocol

import (
	"encoding/json"
	"io/fs"
)

// Kind names a normalized event. The string values are part of smith's
// public protocol (docs/protocol.md, docs/cli.md) and must not change.
type Kind string

const (
	KindText       Kind = "text"       // assistant text delta
	KindReasoning  Kind = "reasoning"  // reasoning delta
	KindSegment    Kind = "segment"    // start or end of a text/reasoning block
	KindToolCall   Kind = "toolCall"   // the agent invokes a tool
	KindToolResult Kind = "toolResult" // a tool finished
	KindChange     Kind = "change"     // a file change proposal (or notification)
	KindCitation   Kind = "citation"   // a retrieved source
	KindNotice     Kind = "notice"     // status, classification, limit warnings, user echo
	KindError      Kind = "error"      // an error reported by the upstream
	KindTurnEnd    Kind = "turnEnd"    // exactly one per turn, always last
	KindViolation  Kind = "violation"  // the stream broke its contract; the turn goes on
)

// Outcome is how a turn ended.
type Outcome string

const (
	OutcomeCompleted   Outcome = "completed"
	OutcomeError       Outcome = "error"
	OutcomeCancelled   Outcome = "cancelled"
	OutcomeInterrupted Outcome = "interrupted"
)

// Event is one normalized event. Exactly one payload pointer is set, the one
// matching Type (Text and Reasoning use the Text field). DialogID, TurnID and
// Seq are filled in by the turn state machine; adapters leave them empty.
//
// Raw holds the upstream payload the event came from, for dialect-specific
// extras; it is omitted from JSON output when empty. The adapters set it on
// tool calls and results, changes, citations from oracle, errors and most
// notices; never on text and reasoning deltas, segments or turnEnd (the hot
// path copies nothing), nor on violations (Violation.Payload has it).
type Event struct {
	Type     Kind   `json:"type"`
	DialogID string `json:"dialogId,omitempty"`
	TurnID   string `json:"turnId,omitempty"`
	Seq      int64  `json:"seq"`

	Text       string      `json:"text,omitempty"`
	Segment    *Segment    `json:"segment,omitempty"`
	ToolCall   *ToolCall   `json:"toolCall,omitempty"`
	ToolResult *ToolResult `json:"toolResult,omitempty"`
	Change     *Change     `json:"change,omitempty"`
	Citation   *Citation   `json:"citation,omitempty"`
	Notice     *Notice     `json:"notice,omitempty"`
	Error      *ErrorInfo  `json:"error,omitempty"`
	TurnEnd    *TurnEnd    `json:"turnEnd,omitempty"`
	Violation  *Violation  `json:"violation,omitempty"`

	Raw json.RawMessage `json:"raw,omitempty"`
}

// Segment marks the start or end of a text or reasoning block.
type Segment struct {
	Block string `json:"block"` // "text" | "reasoning" | "summary" | "message"
	Phase string `json:"phase"` // "start" | "end"
	ID    string `json:"id,omitempty"`
}

// ToolCall is a tool invocation announced by the upstream.
type ToolCall struct {
	ID     string          `json:"id,omitempty"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args,omitempty"`
	Status string          `json:"status,omitempty"`
}

// MergeToolCall adds c to calls. A call with the ID of one already listed
// is that call's update (an Oracle tool_call moves pending → running →
// done): it replaces the listed one in place, so a list shows each call
// once, with its last status. Calls without an ID are always new.
func MergeToolCall(calls []ToolCall, c ToolCall) []ToolCall {
	if c.ID != "" {
		for i := range calls {
			if calls[i].ID == c.ID {
				calls[i] = c
				return calls
			}
		}
	}
	return append(calls, c)
}

// ToolResult is a finished tool call.
type ToolResult struct {
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	DurationMS float64         `json:"durationMs,omitempty"`
}

// ChangeKind says what a Change does to its file.
type ChangeKind string

const (
	ChangeCreate ChangeKind = "create"
	ChangeModify ChangeKind = "modify"
	ChangeDelete ChangeKind = "delete"
	ChangeRename ChangeKind = "rename"
)

// Change is a file change carried by the stream: a unified diff (Diff), or
// the whole new content (Content, with HasContent set so that an empty file
// is distinguishable from no content), or a deletion.
//
// Path is the target as the upstream named it (absolute or relative); the
// daemon resolves and confines it. AppliedUpstream is true when the server
// has already written the change itself (AgentSmithy v1/v2 file_edit).
type Change struct {
	Path       string     `json:"path"`
	OldPath    string     `json:"oldPath,omitempty"`
	Kind       ChangeKind `json:"kind"`
	Diff       string     `json:"diff,omitempty"`
	Content    string     `json:"content,omitempty"`
	HasContent bool       `json:"hasContent,omitempty"`
	// Mode is the permission bits the change gives its file (a git
	// diff's "new mode" or "new file mode" other than 100644: an
	// executable), 0 when it sets none: the file keeps its bits, a new
	// one gets 0644. A change may set a mode and nothing else.
	Mode            fs.FileMode `json:"mode,omitempty"`
	AppliedUpstream bool        `json:"appliedUpstream,omitempty"`
	Reason          string      `json:"reason,omitempty"`
	LineStart       *int        `json:"lineStart,omitempty"`
	LineEnd         *int        `json:"lineEnd,omitempty"`
	Checkpoint      string      `json:"checkpoint,omitempty"`
	// Source names the wire shape it came from: "diff", "file_edit",
	// "tool_result", "tool_call".
	Source string `json:"source,omitempty"`
}

// Citation is a retrieved source (rag, textbook, oracle).
type Citation struct {
	File    string   `json:"file,omitempty"`
	Section string   `json:"section,omitempty"`
	Chapter string   `json:"chapter,omitempty"`
	Title   string   `json:"title,omitempty"`
	URL     string   `json:"url,omitempty"`
	Score   *float64 `json:"score,omitempty"`
	Snippet string   `json:"snippet,omitempty"`
}

// Notice is information that is neither answer text nor an error: a status
// line, AgentSmithy's classification or user echo (with checkpoint), an
// oracle system limit warning, a lifecycle table/plot/thumbnail result.
type Notice struct {
	Kind       string          `json:"kind"`           // "status", "classification", "user", "system", "table", "plot", "thumbnail", "summary", ...
	Code       string          `json:"code,omitempty"` // a sub-kind: oracle system_type, lifecycle status
	Message    string          `json:"message,omitempty"`
	Checkpoint string          `json:"checkpoint,omitempty"`
	Session    string          `json:"session,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// ErrorInfo is an error reported inside the stream, or a transport error
// that ended the turn.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// TurnEnd closes a turn.
type TurnEnd struct {
	Outcome Outcome `json:"outcome"`
	Reason  string  `json:"reason,omitempty"`
}

// Violation reports a broken contract. EventIndex counts dispatched SSE
// events of the turn from 0 (-1 when the violation is not tied to one).
type Violation struct {
	Kind       string          `json:"kind"`
	Message    string          `json:"message"`
	EventIndex int             `json:"eventIndex"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}
