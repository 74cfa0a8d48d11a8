package protocol

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// CONTRACT FILE: the signatures below are what the client, replay, the
// daemon and the CLI build on. The protocol-core work fills in the bodies
// (and may move them to other files of this package), keeping the names.

// Dialect names a payload family. The empty Dialect means auto-detect.
type Dialect string

const (
	DialectAuto        Dialect = ""
	DialectAgentSmithy Dialect = "agentsmithy" // v2, v1.x and legacy v0
	DialectRAG         Dialect = "rag"
	DialectTextbook    Dialect = "textbook"
	DialectLifecycle   Dialect = "lifecycle"
	DialectOracle      Dialect = "oracle"
)

// ParseDialect reads a dialect as users and settings name it: "", "auto"
// (detect) or one of the dialects above, in any case. It is the one list
// of dialects: config, the editor's initializationOptions, replay and the
// upstream server all read theirs with it.
func ParseDialect(name string) (Dialect, error) {
	switch d := Dialect(strings.ToLower(strings.TrimSpace(name))); d {
	case "", "auto":
		return DialectAuto, nil
	case DialectAgentSmithy, DialectRAG, DialectTextbook, DialectLifecycle, DialectOracle:
		return d, nil
	}
	return "", fmt.Errorf("unknown dialect %q (use auto, agentsmithy, rag, textbook, lifecycle or oracle)", name)
}

// Defaults for StreamOptions.
const (
	DefaultMaxEventSize = 16 << 20
	DefaultIdleTimeout  = 60 * time.Second
)

// StreamOptions configures the reading of one turn.
type StreamOptions struct {
	Dialect      Dialect       // DialectAuto detects from the first payloads; an explicit one always wins
	MaxEventSize int           // bytes of one SSE event; 0 means DefaultMaxEventSize
	IdleTimeout  time.Duration // no byte for this long ends the turn interrupted; 0 means DefaultIdleTimeout, <0 disables
	DialogID     string        // known before the stream (from the request); else learnt from it
	TurnID       string        // stamped on every event
	Header       http.Header   // response headers (rag's Server-Timing is kept on the summary)
	// MaxText bounds the bytes of text, and of reasoning, the Summary
	// keeps (the beginning, cut at a UTF-8 boundary; TextTruncated says
	// so); 0 keeps everything. Events always carry every delta: a front
	// that streams them needs no summary of a 9 MB answer in memory.
	MaxText int
	// Sequential reads, frames and maps the body on the calling goroutine,
	// with no goroutine of its own and no idle timeout (IdleTimeout is
	// ignored; a cancelled ctx is seen before each read that follows a
	// blank line, so a Read that blocks is waited for). For a body whose
	// reads do not block — a file, memory — and whose consumer is the
	// bound, like `smith replay`: handing segments to other goroutines
	// buys no time there and costs CPU (hand-overs, cache misses on the
	// events, the GC's idle workers on the other core). Live streams leave
	// it false.
	Sequential bool
}

// Summary is what a whole turn amounted to. Its JSON form is the summary
// object of `smith replay --json` and `smith chat --json` (docs/cli.md).
type Summary struct {
	Type         string          `json:"type"` // always "summary"
	Dialect      Dialect         `json:"dialect"`
	Protocol     *string         `json:"protocol"` // "v0" | "v1" | "v2" for agentsmithy, else null
	DialogID     string          `json:"dialogId"`
	TurnID       string          `json:"turnId,omitempty"`
	Outcome      Outcome         `json:"outcome"`
	Text         string          `json:"text"`
	Reasoning    string          `json:"reasoning"`
	Citations    []Citation      `json:"citations"`
	ToolCalls    []ToolCall      `json:"toolCalls"`
	ToolResults  []ToolResult    `json:"toolResults"`
	Changes      []ChangeSummary `json:"changes"`
	Errors       []ErrorInfo     `json:"errors"`
	Violations   []Violation     `json:"violations"`
	ServerTiming string          `json:"serverTiming,omitempty"`
	// TextTruncated: Text or Reasoning holds only the first
	// StreamOptions.MaxText bytes of what was streamed.
	TextTruncated bool `json:"textTruncated,omitzero"`
}

// ChangeSummary is one change of a turn as the summary lists it. Replay
// numbers changes c1, c2, ... and reports status "proposed" or
// "appliedUpstream"; the daemon fills in its own change ids and statuses.
type ChangeSummary struct {
	ID     string     `json:"id"`
	Path   string     `json:"path"`
	Kind   ChangeKind `json:"kind"`
	Status string     `json:"status"`
}

// ReadTurn reads one turn's SSE response body and calls emit for every
// normalized event, in order, with DialogID, TurnID and Seq filled in. It
// emits exactly one KindTurnEnd event, last, and returns the summary of the
// turn. It never returns early without a turnEnd: a cancelled ctx ends the
// turn OutcomeCancelled (partial text kept), a cut body or an idle timeout
// ends it OutcomeInterrupted. emit is called from the calling goroutine.
//
// After the terminal event ReadTurn keeps reading until the body ends (at
// most terminalGrace of silence), so that events the upstream sends after
// it are reported as violations before the turnEnd.
//
// ReadTurn does not close body. A goroutine reads body and cuts it into
// runs of whole events, which go-sse parsers frame on goroutines of their
// own while the calling goroutine maps the earlier ones (all cores on a
// fast stream; see watchedStream). If ReadTurn returns while that
// goroutine is blocked in Read (cancel, idle timeout), it exits when the
// caller closes body — closing an http.Response body unblocks it. With
// opts.Sequential the calling goroutine does all of it, one run at a time.
func ReadTurn(ctx context.Context, body io.Reader, opts StreamOptions, emit func(Event)) *Summary {
	t := NewTurn(opts)
	idle := opts.IdleTimeout
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	w := watch(ctx, body, idle, opts.MaxEventSize, opts.Sequential)
	defer w.close()
	var cause error
	t.emit = emit
	feed := t.feedEvent
	short := false
	for {
		err := w.next(feed)
		switch {
		case t.Done() && !short:
			w.shorten(terminalGrace)
			short = true
		case !t.Done() && short:
			// A lifecycle body went on with its next message.
			w.setIdle(idle)
			short = false
		}
		if err != nil {
			if err != io.EOF {
				cause = err
			}
			break
		}
	}
	if ctx.Err() != nil {
		// Whatever the read failed with, the cancel is why it stopped.
		cause = &cancelError{err: ctx.Err(), cause: context.Cause(ctx)}
	}
	return t.Finish(cause, emit)
}
