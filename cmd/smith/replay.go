package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/smith-dev/smith/protocol"
	"github.com/spf13/cobra"
)

// replayOptions are the flags of smith replay.
type replayOptions struct {
	raw, json  bool
	dialect    string
	headers    []string
	chunkSizes string
}

func newReplayCmd(s *IOStreams) *cobra.Command {
	o := &replayOptions{}
	cmd := &cobra.Command{
		Use:   "replay FILE.sse",
		Short: "Show what smith makes of a recorded SSE response body",
		Long: `Replay reads a recorded chat response body (the bytes of an SSE stream) from FILE,
or from standard input when FILE is -, and prints what smith makes of it, with no
network: the normalized events and the turn's summary. Use it to attach a reproducible
case to a bug report, or to test a dialect.

  --raw     one JSON object per dispatched SSE event, then an end object
  --json    the normalized events as JSON lines, then the summary object
            (the same summary 'smith chat --json' prints)
  (neither) a readable rendering

docs/cli.md describes the formats. Exit status: 0 when the turn completed, 1 when it
ended in error or was interrupted, 2 for bad flags or an unreadable file.`,
		Example: `  smith replay --json turn.sse
  smith replay --raw --chunk-sizes 1 turn.sse
  curl -sN localhost:8765/api/chat -H 'Content-Type: application/json' -d @req.json | smith replay -
  smith replay --dialect rag --header 'Server-Timing: total;dur=18.9' rag.sse`,
		Args: argsUpTo(1, 1, "one FILE.sse", "a recorded SSE response body, or - for standard input; quote a path with spaces"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd, s, o, args[0])
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.raw, "raw", false, "print the dispatched SSE events, not the normalized ones")
	f.BoolVar(&o.json, "json", false, "print the normalized events and the summary as JSON lines")
	f.StringVar(&o.dialect, "dialect", "auto", "force a dialect: auto, agentsmithy, rag, textbook, lifecycle, oracle")
	f.StringArrayVar(&o.headers, "header", nil, "a response header 'Name: value' (repeatable), e.g. Server-Timing")
	f.StringVar(&o.chunkSizes, "chunk-sizes", "", "feed the body in reads of these sizes, e.g. 1 or 3,5,8 (the last repeats)")
	return cmd
}

func runReplay(cmd *cobra.Command, s *IOStreams, o *replayOptions, file string) error {
	if o.raw && o.json {
		return usageErrorf("--raw and --json are two different outputs; choose one")
	}
	dialect, err := parseDialect(o.dialect)
	if err != nil {
		return err
	}
	header, err := parseHeaders(o.headers)
	if err != nil {
		return err
	}
	sizes, err := parseChunkSizes(o.chunkSizes)
	if err != nil {
		return err
	}
	body, closeBody, err := openReplayInput(s, file)
	if err != nil {
		return err
	}
	defer closeBody()
	// Replay runs on one P (GOMAXPROCS 1) while it reads: it does all its work
	// on one goroutine (ReadTurn's Sequential reading), and the only use of a
	// second P was the GC's, whose workers there cost wake-ups of another
	// thread and idle marking beside the work. With one P the GC's share runs
	// on the same thread: ~15 % less CPU for a 10 MB recording than two Ps at
	// the default GC (and less than a laxer GC, GOGC 400, which traded GC
	// cycles for page faults of a heap three times as large).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	// The GC's own pacing stays out of the way while replay collects at its
	// own points (collectingReader): at 200 % no cycle of its own starts
	// between two of them on a recording of ordinary events.
	defer debug.SetGCPercent(debug.SetGCPercent(200))
	return replayBody(cmd.Context(), s, o, dialect, header, sizes, &collectingReader{r: body})
}

// replayCollectEvery is how many bytes of the recording replay reads between
// two garbage collections of its own (collectingReader).
const replayCollectEvery = 1 << 20

// collectingReader reads the recording and, after every replayCollectEvery
// bytes, collects garbage (runtime.GC) before it returns.
//
// Why: replay reads as fast as it can on one P, allocating all the while
// (go-sse allocates twice per event). Left to its own pacing, the GC marks
// concurrently with that work: for about 40 % of a run every pointer write
// goes through the write barrier and every allocation pays an assist, on the
// same thread. A collection asked for between two reads marks with nothing
// else running — ReadTurn's Sequential reading reads only when the events
// read before have all been handled, so the live heap is small then — and
// costs less than those barriers and assists: ~9 % less CPU for a 10 MB
// recording, at the same peak RSS (docs/benchmarks.md, target 1).
type collectingReader struct {
	r    io.Reader
	read int // bytes since the last collection
}

func (c *collectingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.read += n; c.read >= replayCollectEvery {
		c.read = 0
		runtime.GC()
	}
	return n, err
}

// replayOutBuffer is the size of replay's output buffer. The output goes
// out in writes of this size, not one write per event: on a 100k-event
// stream a write per line cost as much as all the parsing. Replay has no
// reader waiting on a line (it reads a recorded body, not a live one), so
// nothing is held back that anyone waits for.
const replayOutBuffer = 64 << 10

// replayBody prints what smith makes of body, read in the given sizes.
func replayBody(ctx context.Context, s *IOStreams, o *replayOptions, dialect protocol.Dialect, header http.Header, sizes []int, body io.Reader) error {
	r := body
	if len(sizes) > 0 {
		r = &chunkReader{r: r, sizes: sizes}
	}
	out := bufio.NewWriterSize(s.Out, replayOutBuffer)
	err := replayTo(ctx, out, s.ColorOut(), o, dialect, header, r)
	if ferr := out.Flush(); ferr != nil {
		return fmt.Errorf("writing the output: %w", ferr)
	}
	return err
}

// replayTo writes what smith makes of r to out, whose error, if any, the
// caller reports when it flushes.
func replayTo(ctx context.Context, out *bufio.Writer, color bool, o *replayOptions, dialect protocol.Dialect, header http.Header, r io.Reader) error {
	if o.raw {
		return replayRaw(out, r)
	}
	opts := protocol.StreamOptions{Dialect: dialect, Header: header, IdleTimeout: -1, Sequential: true}
	var render func(protocol.Event)
	var finish func(*protocol.Summary) error
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		var fast protocol.EventEncoder
		render = func(e protocol.Event) {
			// Deltas and segments (nearly all events) take the encoder
			// without reflection; it writes the same bytes.
			if b, ok := fast.Append(out.AvailableBuffer(), &e); ok {
				out.Write(append(b, '\n'))
				return
			}
			_ = enc.Encode(e)
		}
		finish = func(sum *protocol.Summary) error { return protocol.WriteSummaryJSON(out, sum) }
	} else {
		h := newHumanRenderer(out, color)
		render, finish = h.event, h.summary
	}
	sum := protocol.ReadTurn(ctx, r, opts, render)
	_ = finish(sum) // a write error stays in out; replayBody reports it
	return outcomeExit(sum.Outcome)
}

// outcomeExit maps a turn's outcome to the exit status; the output has
// already said how the turn ended.
func outcomeExit(o protocol.Outcome) error {
	switch o {
	case protocol.OutcomeCompleted:
		return nil
	case protocol.OutcomeCancelled:
		return &ExitError{Code: ExitInterrupted, Silent: true}
	default:
		return &ExitError{Code: ExitFailure, Silent: true}
	}
}

// openReplayInput opens the recorded body and reads its first bytes, so that
// an unreadable file (missing, a directory, no permission) is reported before
// anything is printed. The body is then streamed: holding a whole recording
// in memory cost more in page faults than parsing it.
func openReplayInput(s *IOStreams, file string) (io.Reader, func(), error) {
	if file == "-" {
		br := bufio.NewReaderSize(s.In, replayInBuffer)
		if _, err := br.Peek(1); err != nil && err != io.EOF {
			return nil, nil, usageErrorf("reading the recorded stream from standard input: %v", err)
		}
		return br, func() {}, nil
	}
	cannot := func(err error) error {
		return usageErrorf("cannot read %s: %v (give a recorded SSE response body, or - for standard input)", file, pathErrText(err))
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, cannot(err)
	}
	br := bufio.NewReaderSize(f, replayInBuffer)
	if _, err := br.Peek(1); err != nil && err != io.EOF {
		f.Close()
		return nil, nil, cannot(err)
	}
	return br, func() { f.Close() }, nil
}

// replayInBuffer is the size of the reads of the recorded body.
const replayInBuffer = 64 << 10

func parseDialect(name string) (protocol.Dialect, error) {
	d, err := protocol.ParseDialect(name)
	if err != nil {
		return "", usageErrorf("%v", err)
	}
	return d, nil
}

func parseHeaders(hs []string) (http.Header, error) {
	h := http.Header{}
	for _, line := range hs {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, usageErrorf("bad --header %q: want 'Name: value'", line)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}

func parseChunkSizes(spec string) ([]int, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var sizes []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, usageErrorf("bad --chunk-sizes %q: want positive byte counts such as 1 or 3,5,8", spec)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// chunkReader returns at most sizes[i] bytes from its i-th Read, repeating
// the last size: the reader sees the body cut at those places, as a network
// would cut it.
type chunkReader struct {
	r     io.Reader
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	n := c.sizes[min(c.i, len(c.sizes)-1)]
	c.i++
	if len(p) > n {
		p = p[:n]
	}
	return c.r.Read(p)
}

// rawEnd is the last line of --raw output.
type rawEnd struct {
	End         bool   `json:"end"`
	LastEventID string `json:"lastEventId"`
	Retry       *int   `json:"retry"`
	Truncated   bool   `json:"truncated"`
	Error       string `json:"error,omitempty"`
}

// replayRaw prints every dispatched SSE event, then the stream's end state.
func replayRaw(out io.Writer, r io.Reader) error {
	rd := protocol.NewSSEReader(r, 0)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	end := rawEnd{End: true}
	for ev, err := range rd.All() {
		if err != nil {
			if errors.Is(err, protocol.ErrStreamCut) {
				end.Truncated = true
			} else {
				end.Error = err.Error()
			}
			break
		}
		if err := enc.Encode(ev); err != nil {
			return fmt.Errorf("writing the output: %w", err)
		}
	}
	end.LastEventID = rd.LastEventID()
	if ms, ok := rd.Retry(); ok {
		end.Retry = &ms
	}
	if err := enc.Encode(end); err != nil {
		return fmt.Errorf("writing the output: %w", err)
	}
	if end.Error != "" {
		return &ExitError{Code: ExitFailure, Err: errors.New(end.Error)}
	}
	return nil
}

// humanRenderer prints a turn for a person: the text as it streams,
// reasoning set apart (dimmed on a color terminal), one line per tool call,
// tool result, notice, error and contract violation, then the citations,
// the changes and the outcome. smith chat can render with it too.
type humanRenderer struct {
	w         io.Writer
	color     bool
	block     string // "text" or "reasoning" while streaming one, else ""
	lineStart bool   // the last bytes written end a line (or nothing was written)
	// blankLine is set when the last bytes written end a blank line (the
	// agent's text often ends with its own "\n\n"): the summary's first
	// section then needs no blank line of its own.
	blankLine bool
	// wholeWrites says, for each change in the order the summary lists
	// them, whether it is a whole file the server wrote without a diff:
	// the protocol's kind is modify, but nothing says the file existed.
	wholeWrites []bool
	end         *protocol.TurnEnd
}

const (
	ansiDim   = "\x1b[2m"
	ansiReset = "\x1b[0m"
)

func newHumanRenderer(w io.Writer, color bool) *humanRenderer {
	return &humanRenderer{w: w, color: color, lineStart: true}
}

func (h *humanRenderer) event(e protocol.Event) {
	switch e.Type {
	case protocol.KindText:
		h.stream("text", e.Text)
	case protocol.KindReasoning:
		h.stream("reasoning", e.Text)
	case protocol.KindToolCall:
		h.line(joinNonEmpty("tool", e.ToolCall.Name, clip(compactJSON(e.ToolCall.Args), 100)))
	case protocol.KindToolResult:
		r := e.ToolResult
		what := clip(compactJSON(r.Result), 100)
		if r.Error != "" {
			what = "error: " + clip(r.Error, 100)
		}
		if what == "" {
			what = "done"
		}
		h.line(joinNonEmpty("tool result", r.Name, what))
	case protocol.KindNotice:
		if n := e.Notice; n.Message != "" {
			h.line("[" + n.Kind + "] " + clip(n.Message, 200))
		}
	case protocol.KindError:
		h.line(fmt.Sprintf("error [%s]: %s", e.Error.Code, e.Error.Message))
	case protocol.KindViolation:
		v := e.Violation
		h.line(fmt.Sprintf("warning: %s at event %d: %s", v.Kind, v.EventIndex, v.Message))
	case protocol.KindChange:
		c := e.Change
		h.wholeWrites = append(h.wholeWrites, c.AppliedUpstream && c.Diff == "" && c.Kind == protocol.ChangeModify)
	case protocol.KindTurnEnd:
		h.end = e.TurnEnd
	}
}

// stream writes a text or reasoning delta, starting a new line when the
// block changes.
func (h *humanRenderer) stream(block, text string) {
	if block != h.block {
		h.newline()
		if block == "reasoning" {
			h.write(h.dim("thinking:") + "\n")
		}
		h.block = block
	}
	if block == "reasoning" {
		text = h.dim(text)
	}
	h.write(text)
}

func (h *humanRenderer) line(s string) {
	h.newline()
	h.write(s + "\n")
	h.block = ""
}

func (h *humanRenderer) newline() {
	if !h.lineStart {
		h.write("\n")
	}
}

func (h *humanRenderer) write(s string) {
	if s == "" {
		return
	}
	io.WriteString(h.w, s)
	bare := strings.TrimPrefix(strings.TrimSuffix(s, ansiReset), ansiDim)
	h.blankLine = strings.HasSuffix(bare, "\n\n") || bare == "\n" && h.lineStart
	h.lineStart = strings.HasSuffix(bare, "\n")
}

func (h *humanRenderer) dim(s string) string {
	if !h.color || s == "" {
		return s
	}
	return ansiDim + s + ansiReset
}

// summary prints what the turn amounted to, after its events.
func (h *humanRenderer) summary(sum *protocol.Summary) error {
	h.newline()
	h.lineStart = true
	var b strings.Builder
	if len(sum.Citations) > 0 {
		b.WriteString("\ncitations:\n")
		for i, c := range sum.Citations {
			fmt.Fprintf(&b, "  [%d] %s\n", i+1, citationLine(c))
		}
	}
	if len(sum.Changes) > 0 {
		b.WriteString("\nchanges:\n")
		for i, c := range sum.Changes {
			kind := string(c.Kind)
			if i < len(h.wholeWrites) && h.wholeWrites[i] {
				kind = "write" // as smith changes says it
			}
			fmt.Fprintf(&b, "  %s %s %s (%s)\n", c.ID, kind, c.Path, c.Status)
		}
	}
	b.WriteString("\n" + string(sum.Outcome))
	if h.end != nil && h.end.Reason != "" && sum.Outcome != protocol.OutcomeCompleted {
		b.WriteString(": " + h.end.Reason)
	}
	var about []string
	if sum.Dialect != "" {
		d := string(sum.Dialect)
		if sum.Protocol != nil {
			d += " " + *sum.Protocol
		}
		about = append(about, d)
	}
	if sum.DialogID != "" {
		about = append(about, "dialog "+sum.DialogID)
	}
	if n := len(sum.Violations); n > 0 {
		about = append(about, fmt.Sprintf("%d violation(s)", n))
	}
	if sum.ServerTiming != "" {
		about = append(about, "server timing "+sum.ServerTiming)
	}
	if len(about) > 0 {
		b.WriteString(" (" + strings.Join(about, ", ") + ")")
	}
	b.WriteString("\n")
	out := b.String()
	if h.blankLine {
		out = strings.TrimPrefix(out, "\n") // one blank line, not two
	}
	_, err := io.WriteString(h.w, out)
	return err
}

func citationLine(c protocol.Citation) string {
	var parts []string
	title := c.Title
	if title == "" {
		title = c.File
	}
	if title != "" {
		parts = append(parts, title)
	}
	var where []string
	for _, s := range []string{c.File, c.Chapter, c.Section} {
		if s != "" && s != title {
			where = append(where, s)
		}
	}
	if len(where) > 0 {
		parts = append(parts, "("+strings.Join(where, ", ")+")")
	}
	if c.URL != "" {
		parts = append(parts, c.URL)
	}
	if c.Score != nil {
		parts = append(parts, "score "+strconv.FormatFloat(*c.Score, 'f', -1, 64))
	}
	if c.Snippet != "" {
		parts = append(parts, "— "+strconv.Quote(clip(c.Snippet, 80)))
	}
	return strings.Join(parts, " ")
}

// compactJSON renders raw JSON on one line.
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// clip shortens s to n runes on one line.
func clip(s string, n int) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}
