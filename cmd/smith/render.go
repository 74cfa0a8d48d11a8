package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/smith-dev/smith/protocol"
)

// ANSI styles; used only when color is allowed (IOStreams.ColorOut/ColorErr).
const (
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
)

// style wraps s in an ANSI style when on is set.
func style(on bool, code, s string) string {
	if !on || s == "" {
		return s
	}
	return code + s + ansiReset
}

// turnRenderer prints a turn's events for a person: answer text on out as
// it arrives (word-wrapped to width), reasoning dimmed or hidden, one status
// line per tool call and warnings on errw. It is used by `smith chat` and
// `smith replay`; it is not safe for concurrent use.
type turnRenderer struct {
	out, errw     io.Writer
	color, errCol bool
	hideReasoning bool
	width         int
	// root is the workspace; paths under it are shown relative.
	root string
	// sameTerm is set when out and errw are the same terminal: a status
	// line then starts on a fresh line.
	sameTerm bool

	block     string // "text" | "reasoning" | "" — what the last bytes on out belong to
	col       int    // current column on out
	citations []protocol.Citation
	tools     map[string]string // tool call id → last status
	// beforeStatus is called before a line is written to errw, so that a
	// spinner can erase itself first.
	beforeStatus func()
	// violations counts the contract violations by message. A stream read
	// in a dialect it is not breaks the same rule at nearly every event:
	// the first is shown as it comes, the repeats are counted and said in
	// one line at the end of the turn (flushRepeats).
	violations     map[string]int
	violationOrder []string
	violationCount int
}

// flushRepeats says, once, how many more times each violation shown came
// again since it was shown.
func (r *turnRenderer) flushRepeats() {
	for _, msg := range r.violationOrder {
		if n := r.violations[msg] - 1; n > 0 {
			r.status(style(r.errCol, ansiYellow, "warning: ") + fmt.Sprintf("the upstream broke its protocol the same way %d more time(s): %s", n, msg))
		}
		r.violations[msg] = 1
	}
}

func (r *turnRenderer) Event(ev protocol.Event) {
	switch ev.Type {
	case protocol.KindText:
		r.write("text", ev.Text)
	case protocol.KindReasoning:
		if !r.hideReasoning {
			r.write("reasoning", ev.Text)
		}
	case protocol.KindToolCall:
		tc := ev.ToolCall
		if tc.ID != "" {
			// Chunks with one id are one call whose status moves: one
			// line, and a line more only if it fails.
			prev, seen := r.tools[tc.ID]
			if r.tools == nil {
				r.tools = make(map[string]string)
			}
			r.tools[tc.ID] = tc.Status
			if seen {
				if tc.Status == "error" && prev != "error" {
					r.status(style(r.errCol, ansiYellow, "⚠ ") + fmt.Sprintf("tool %s failed", tc.Name))
				}
				break
			}
		}
		r.status(style(r.errCol, ansiCyan, "⚙ ") + toolLine(tc))
	case protocol.KindToolResult:
		if ev.ToolResult.Error != "" {
			r.status(style(r.errCol, ansiYellow, "⚠ ") + fmt.Sprintf("tool %s failed: %s", ev.ToolResult.Name, ev.ToolResult.Error))
		}
	case protocol.KindCitation:
		r.citations = append(r.citations, *ev.Citation)
	case protocol.KindNotice:
		if n := ev.Notice; n.Message != "" && n.Kind != "user" {
			r.status(style(r.errCol, ansiDim, n.Kind+": "+n.Message))
		}
	case protocol.KindChange:
		c := ev.Change
		what := "proposes"
		if c.AppliedUpstream {
			what = "wrote"
		}
		if c.AppliedUpstream && c.Diff == "" && c.Kind == protocol.ChangeModify {
			// A whole-file write (AgentSmithy write_to_file): whether the
			// file existed before is not known.
			r.status(style(r.errCol, ansiCyan, "✎ ") + fmt.Sprintf("the agent wrote %s (the whole file)", r.relPath(c.Path)))
			break
		}
		r.status(style(r.errCol, ansiCyan, "✎ ") + fmt.Sprintf("the agent %s a change: %s %s", what, c.Kind, r.relPath(c.Path)))
	case protocol.KindError:
		r.status(style(r.errCol, ansiRed, "error: ") + errorLine(ev.Error))
	case protocol.KindViolation:
		msg := ev.Violation.Message
		if r.violations == nil {
			r.violations = map[string]int{}
		}
		r.violationCount++
		if r.violations[msg]++; r.violations[msg] == 1 {
			r.violationOrder = append(r.violationOrder, msg)
			r.status(style(r.errCol, ansiYellow, "warning: ") + "the upstream broke its protocol: " + msg)
		}
	case protocol.KindTurnEnd:
		r.endLine()
		r.flushRepeats()
		r.printCitations()
	}
}

// relPath shows p relative to the workspace when it lies inside it.
func (r *turnRenderer) relPath(p string) string {
	if r.root == "" || !filepath.IsAbs(p) {
		return p
	}
	if rel, err := filepath.Rel(r.root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return rel
	}
	return p
}

func errorLine(e *protocol.ErrorInfo) string {
	if e.Code != "" && e.Message != "" {
		return e.Message + " (" + e.Code + ")"
	}
	if e.Message == "" {
		return e.Code
	}
	return e.Message
}

// toolLine renders a tool call as one line.
func toolLine(tc *protocol.ToolCall) string {
	return joinNonEmpty(tc.Name, clip(compactJSON(tc.Args), 100))
}

// write prints a delta of kind block, starting a new paragraph when the
// kind changes, wrapping words at the terminal width.
func (r *turnRenderer) write(block, s string) {
	if s == "" {
		return
	}
	if r.block != block {
		r.endLine()
		if r.block != "" {
			fmt.Fprintln(r.out)
		}
		r.block = block
	}
	code := ""
	if block == "reasoning" {
		code = ansiDim
	}
	if r.width <= 0 {
		fmt.Fprint(r.out, style(r.color && code != "", code, s))
		if i := strings.LastIndexByte(s, '\n'); i >= 0 {
			r.col = len([]rune(s[i+1:]))
		} else {
			r.col += len([]rune(s))
		}
		return
	}
	var b strings.Builder
	for _, word := range splitKeepSpace(s) {
		if word == "\n" {
			b.WriteByte('\n')
			r.col = 0
			continue
		}
		n := len([]rune(word))
		if r.col > 0 && r.col+n > r.width && strings.TrimSpace(word) != "" {
			b.WriteByte('\n')
			r.col = 0
		}
		if r.col == 0 && strings.TrimSpace(word) == "" {
			continue // no leading blanks on a wrapped line
		}
		b.WriteString(word)
		r.col += n
	}
	fmt.Fprint(r.out, style(r.color && code != "", code, b.String()))
}

// splitKeepSpace splits s into words, runs of blanks and single newlines.
func splitKeepSpace(s string) []string {
	var out []string
	start := 0
	kind := func(c byte) int {
		switch c {
		case '\n':
			return 2
		case ' ', '\t':
			return 1
		}
		return 0
	}
	for i := 1; i <= len(s); i++ {
		if i == len(s) || kind(s[i]) != kind(s[start]) || kind(s[i]) == 2 {
			out = append(out, s[start:i])
			start = i
		}
	}
	return out
}

func (r *turnRenderer) endLine() {
	if r.col > 0 {
		fmt.Fprintln(r.out)
		r.col = 0
	}
}

func (r *turnRenderer) status(line string) {
	if r.beforeStatus != nil {
		r.beforeStatus()
	}
	if r.sameTerm || r.out == r.errw {
		r.endLine()
	}
	fmt.Fprintln(r.errw, line)
}

func (r *turnRenderer) printCitations() {
	if len(r.citations) == 0 {
		return
	}
	fmt.Fprintln(r.out)
	fmt.Fprintln(r.out, style(r.color, ansiBold, "Sources:"))
	for i, c := range r.citations {
		fmt.Fprintf(r.out, "  [%d] %s\n", i+1, citationLine(c))
	}
	r.citations = nil
}

// colorDiff colors a unified diff for a terminal.
func colorDiff(on bool, diff string) string {
	if !on {
		return diff
	}
	lines := strings.SplitAfter(diff, "\n")
	var b strings.Builder
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			b.WriteString(style(true, ansiBold, strings.TrimSuffix(l, "\n")))
		case strings.HasPrefix(l, "@@"):
			b.WriteString(style(true, ansiCyan, strings.TrimSuffix(l, "\n")))
		case strings.HasPrefix(l, "+"):
			b.WriteString(style(true, ansiGreen, strings.TrimSuffix(l, "\n")))
		case strings.HasPrefix(l, "-"):
			b.WriteString(style(true, ansiRed, strings.TrimSuffix(l, "\n")))
		default:
			b.WriteString(strings.TrimSuffix(l, "\n"))
		}
		if strings.HasSuffix(l, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
