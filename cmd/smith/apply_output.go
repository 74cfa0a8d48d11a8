package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/smith-dev/smith/diffapply"
)

// applyResult is what `smith apply --json` prints (docs/cli.md).
type applyResult struct {
	Result  string      `json:"result"` // applied, checked, preview, conflict, failed, refused, error
	Root    string      `json:"root"`
	Repairs []string    `json:"repairs,omitempty"`
	Files   []applyFile `json:"files"`
	Error   string      `json:"error,omitempty"`

	patch *diffapply.Patch
	ids   []int
	err   error
	undo  bool // journalled by the engine: smith undo takes it back
	// stream is the streamed plan behind patch, whose files have no
	// contents; nil when patch is whole.
	stream *streamedApply
}

// unchanged is Patch.Unchanged of the plan.
func (res *applyResult) unchanged() bool {
	if sa := res.stream; sa != nil {
		return sa.writesErr == nil && sa.writes == 0
	}
	return res.patch.Unchanged(res.ids)
}

type applyFile struct {
	*diffapply.File
	Diff string `json:"diff"` // as-applied unified diff of the chosen hunks
}

func writeApplyJSON(w io.Writer, res *applyResult) error {
	if res.patch != nil {
		res.Files = []applyFile{}
		for _, f := range res.patch.Files {
			res.Files = append(res.Files, applyFile{File: f, Diff: f.Diff(chosenIn(f, res.ids))})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// chosenIn narrows ids to the matching hunks of f (nil: all of them).
func chosenIn(f *diffapply.File, ids []int) []int {
	var out []int
	for _, h := range f.Hunks {
		if h.OK() && (ids == nil || contains(ids, h.ID)) {
			out = append(out, h.ID)
		}
	}
	if out == nil {
		out = []int{}
	}
	return out
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// writeReport prints one line per hunk: where it went and how, or why not.
func writeReport(s *IOStreams, res *applyResult) {
	p := res.patch
	for _, r := range p.Repairs {
		fmt.Fprintf(s.Err, "note: %s\n", r)
	}
	verb := map[string]string{"applied": "applied", "checked": "applies", "conflict": "would apply", "failed": "would apply"}[res.Result]
	var conflicted bool
	var line []byte // one hunk's line, appended rather than formatted: there is one per hunk
	for _, f := range p.Files {
		if len(f.Hunks) == 0 {
			if f.Conflict != nil {
				fmt.Fprintf(s.Err, "%s: %s\n", f.Path, f.Conflict)
				conflicted = true // said here; the summary does not repeat it
			} else {
				fmt.Fprintf(s.Out, "%s: %s\n", f.Path, describeOp(f, res.Result == "applied"))
			}
		}
		for _, h := range f.Hunks {
			if res.ids != nil && !contains(res.ids, h.ID) {
				continue
			}
			if !h.OK() {
				conflicted = true
				writeConflict(s, h)
				continue
			}
			line = append(line[:0], f.Path...)
			if what, n, ok := wholeFile(f, h); ok {
				// A file created or deleted whole: "hunk 1 applied at
				// line 0" said nothing a new user could read.
				line = append(line, ": "...)
				if res.Result != "applied" {
					line = append(line, "would be "...)
				}
				line = append(line, what...)
				line = appendLines(append(line, ", "...), n)
				if note := levelNote(h); note != "" {
					line = append(append(line, ' '), note...)
				}
				line = append(appendIDNote(line, p, h), '\n')
				s.Out.Write(line)
				continue
			}
			line = append(line, ": hunk "...)
			line = strconv.AppendInt(line, int64(h.Index), 10)
			if atTop(h) {
				// Lines added to an empty file: "applied at line 0"
				// named a line no file has.
				if res.Result != "applied" {
					line = append(line, " would be"...)
				}
				line = append(line, " inserted at the top, "...)
				line = appendLines(line, h.NewLines)
				if note := levelNote(h); note != "" {
					line = append(append(line, ' '), note...)
				}
				line = append(appendIDNote(line, p, h), '\n')
				s.Out.Write(line)
				continue
			}
			line = append(line, ' ')
			line = append(line, verb...)
			line = append(line, ' ')
			line = h.AppendWhere(line)
			line = append(appendIDNote(line, p, h), '\n')
			s.Out.Write(line)
		}
	}
	switch res.Result {
	case "applied":
		if res.unchanged() {
			fmt.Fprintln(s.Err, "nothing to write: the chosen hunks change nothing (the files already hold their result)")
			break
		}
		fmt.Fprintf(s.Err, "%s\n", summary(p, res.ids))
		if res.undo {
			fmt.Fprintln(s.Err, "undo with: smith undo")
		}
	case "conflict":
		if !conflicted {
			fmt.Fprintf(s.Err, "smith apply: %s\n", res.Error)
		}
		fmt.Fprintln(s.Err, "nothing was written; fix the diff, or choose other hunks with --hunks")
	case "failed":
		fmt.Fprintf(s.Err, "smith apply: %s\nnothing was written\n", res.Error)
		if errors.Is(res.err, diffapply.ErrStale) {
			fmt.Fprintln(s.Err, "a file changed while smith was planning; run it again")
		}
	}
}

// appendIDNote appends " [id N]", the hunk's id across the diff, unless
// the diff has one file (where its index is its id).
func appendIDNote(b []byte, p *diffapply.Patch, h *diffapply.Hunk) []byte {
	if len(p.Files) == 1 {
		return b
	}
	b = append(b, " [id "...)
	b = strconv.AppendInt(b, int64(h.ID), 10)
	return append(b, ']')
}

// wholeFile tells whether h is all of a file that f creates ("created")
// or deletes ("deleted"), and its number of lines.
func wholeFile(f *diffapply.File, h *diffapply.Hunk) (what string, lines int, ok bool) {
	if len(f.Hunks) != 1 {
		return "", 0, false
	}
	switch {
	case f.Op == diffapply.OpCreate && h.OldLines == 0:
		return "created", h.NewLines, true
	case f.Op == diffapply.OpDelete && h.NewLines == 0:
		return "deleted", h.OldLines, true
	}
	return "", 0, false
}

// atTop tells whether h only adds lines before the first line of its
// file: a hunk without old lines placed at line 0, which diffapply does
// only in an empty file (anywhere else nothing would check the place). A
// file the diff creates is wholeFile's.
func atTop(h *diffapply.Hunk) bool {
	return h.OK() && h.OldLines == 0 && h.Line == 0
}

// appendLines appends "1 line" or "N lines".
func appendLines(b []byte, n int) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		return append(b, " line"...)
	}
	return append(b, " lines"...)
}

// levelNote is the parenthesis of h.Where ("(whitespace-insensitive)"),
// or "" for an exact match in place, which needs no note.
func levelNote(h *diffapply.Hunk) string {
	w := h.Where()
	i := strings.Index(w, " (")
	if i < 0 || w[i+1:] == "(exact)" {
		return ""
	}
	return w[i+1:]
}

// describeOp says what is done to a file without hunks, or (done false:
// --check, a conflict) what would be.
func describeOp(f *diffapply.File, done bool) string {
	would := ""
	if !done {
		would = "would be "
	}
	switch f.Op {
	case diffapply.OpRename:
		return would + "renamed from " + f.OldPath
	case diffapply.OpCopy:
		return would + "copied from " + f.OldPath
	case diffapply.OpCreate:
		return would + "created"
	case diffapply.OpDelete:
		return would + "deleted"
	}
	if f.Mode != 0 {
		if !done {
			return fmt.Sprintf("mode would be set to %o", f.Mode)
		}
		return fmt.Sprintf("mode set to %o", f.Mode)
	}
	return "unchanged"
}

func writeConflict(s *IOStreams, h *diffapply.Hunk) {
	fmt.Fprintf(s.Err, "%s: hunk %d refused: ", h.File.Path, h.Index)
	c := h.Conflict
	if c == nil {
		c = h.File.Conflict
	}
	fmt.Fprintln(s.Err, c.Reason)
	if len(c.Candidates) > 0 {
		fmt.Fprintf(s.Err, "  it matches equally well at lines %s; add context lines to tell them apart\n", joinIDs(c.Candidates))
	} else if c.NearLine > 0 {
		fmt.Fprintf(s.Err, "  closest place: line %d, where %d of its %d old lines match\n", c.NearLine, c.NearMatched, c.NearTotal)
	}
	if c.Detail != "" {
		fmt.Fprintf(s.Err, "  %s\n", c.Detail)
	}
	fmt.Fprintf(s.Err, "  %s\n", h.Header)
	for _, l := range strings.SplitAfter(strings.TrimSuffix(h.Body, "\n"), "\n") {
		fmt.Fprintf(s.Err, "  %s", strings.TrimSuffix(l, "\n")+"\n")
	}
}

func joinIDs(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

func summary(p *diffapply.Patch, ids []int) string {
	files, hunks := 0, 0
	for _, f := range p.Files {
		n := len(chosenIn(f, ids))
		if n > 0 || len(f.Hunks) == 0 {
			files++
		}
		hunks += n
	}
	return fmt.Sprintf("applied %d hunk(s) to %d file(s)", hunks, files)
}

// ANSI colors for --preview on a terminal.
const (
	cRed, cGreen, cCyan, cYellow, cDim, cBold, cReset = "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[33m", "\x1b[2m", "\x1b[1m", "\x1b[0m"
)

// writePreview shows every hunk where it would go, with its level.
func writePreview(s *IOStreams, p *diffapply.Patch, ids []int) {
	color := s.ColorOut()
	paint := func(c, text string) string {
		if !color {
			return text
		}
		return c + text + cReset
	}
	for _, r := range p.Repairs {
		fmt.Fprintf(s.Out, "%s\n", paint(cDim, "note: "+r))
	}
	for _, f := range p.Files {
		title := fmt.Sprintf("%s (%s)", f.Path, f.Op)
		if f.OldPath != "" {
			title = fmt.Sprintf("%s -> %s (%s)", f.OldPath, f.Path, f.Op)
		}
		fmt.Fprintln(s.Out, paint(cBold, "== "+title))
		if f.Conflict != nil {
			fmt.Fprintln(s.Out, paint(cRed, "   refused: "+f.Conflict.String()))
		}
		for _, h := range f.Hunks {
			if ids != nil && !contains(ids, h.ID) {
				continue
			}
			status := paint(cGreen, string(h.Level)) + " " + h.Where()
			if h.Level != diffapply.LevelExact {
				status = paint(cYellow, string(h.Level)) + " " + h.Where()
			}
			if atTop(h) {
				status = paint(cGreen, "at the top") + ", " + string(appendLines(nil, h.NewLines))
				if note := levelNote(h); note != "" {
					status += " " + paint(cYellow, note)
				}
			}
			if what, n, ok := wholeFile(f, h); ok {
				// Not "exact at line 0": the title says (create) or
				// (delete), and this hunk is all of the file.
				place := "new file"
				if what == "deleted" {
					place = "whole file"
				}
				status = paint(cGreen, place) + ", " + string(appendLines(nil, n))
				if note := levelNote(h); note != "" {
					status += " " + paint(cYellow, note)
				}
			}
			if !h.OK() {
				c := h.Conflict
				if c == nil {
					c = f.Conflict
				}
				status = paint(cRed, "conflict") + ": " + c.String()
			}
			fmt.Fprintf(s.Out, "-- hunk %d [id %d] %s\n", h.Index, h.ID, status)
			// A matched hunk is shown as it will be written: the file's own
			// context lines and line numbers; a conflict as the diff gave it.
			body := h.Header + "\n" + h.Body
			if h.OK() {
				if d := f.Diff([]int{h.ID}); d != "" {
					body = d[strings.Index(d, "\n@@")+1:]
				}
			}
			for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
				switch {
				case strings.HasPrefix(l, "@@"):
					l = paint(cCyan, l)
				case strings.HasPrefix(l, "+"):
					l = paint(cGreen, l)
				case strings.HasPrefix(l, "-"):
					l = paint(cRed, l)
				default:
					l = paint(cDim, l)
				}
				fmt.Fprintln(s.Out, l)
			}
		}
	}
}
