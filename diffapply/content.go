package diffapply

import (
	"fmt"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// PlanContent plans a whole-file write (a tool that wrote a file): it
// diffs the current content of path (from opts.ReadFile or disk) against
// newContent with go-udiff and plans that diff, so the result has hunks
// that can be previewed, chosen and reverted like any other. newContent
// nil plans a deletion; a missing file is a creation. When nothing
// changes the Patch has no files.
//
// Line endings: the diff is made without carriage returns, so it is
// CR-blind and added lines take the file's convention (see the package
// doc): content that only changes a CRLF file's line endings to LF plans
// no change, and CRLF content written over an LF file stays LF. A new
// file is written byte for byte.
func PlanContent(root, path string, newContent []byte, opts Options) (*Patch, error) {
	ws, err := OpenWorkspace(root, opts.Protect...)
	if err != nil {
		return nil, fmt.Errorf("workspace root: %w", err)
	}
	defer ws.Close()
	rel, err := ws.rel(path)
	if err != nil {
		return nil, err
	}
	var old []byte
	var existed bool
	if opts.ReadFile != nil {
		old, existed, err = opts.ReadFile(rel)
	} else {
		var r string
		if r, err = ws.confined(rel); err == nil {
			old, existed, err = ws.readRel(r)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if !existed && newContent == nil {
		return nil, fmt.Errorf("cannot delete %s: it does not exist", rel)
	}
	oldLabel, newLabel := "a/"+rel, "b/"+rel
	switch {
	case !existed:
		oldLabel = "/dev/null"
	case newContent == nil:
		newLabel = "/dev/null"
	}
	oldText, newText := string(old), string(newContent)
	if existed && newContent != nil {
		// A tool's output says what the text is, not which line ends the
		// file should have: diff both sides without CRs, so the diff is
		// CR-blind and its added lines take the file's convention (a
		// byte-exact diff would write them literally).
		oldText, newText = stripCR(oldText), stripCR(newText)
	}
	text := udiff.Unified(oldLabel, newLabel, oldText, newText)
	if text == "" {
		if !existed || (newContent == nil && len(old) == 0) {
			// Creating or deleting an empty file has no hunks: say so in
			// git's extended headers.
			text = fmt.Sprintf("diff --git a/%[1]s b/%[1]s\nnew file mode 100644\n", rel)
			if newContent == nil {
				text = fmt.Sprintf("diff --git a/%[1]s b/%[1]s\ndeleted file mode 100644\n", rel)
			}
		} else {
			return &Patch{Root: ws.root, protect: opts.Protect}, nil
		}
	}
	opts.Target = rel
	opts.Reverse = false
	return Plan(root, []byte(text), opts)
}

// stripCR drops the CR of every CRLF line end.
func stripCR(s string) string {
	if !strings.Contains(s, "\r\n") {
		return s
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// Diff is the as-applied unified diff of the chosen hunks (nil ids means
// all): Before against Render(ids), with the file's real context lines.
func (f *File) Diff(ids []int) string {
	oldLabel, newLabel := "a/"+f.Path, "b/"+f.Path
	if f.OldPath != "" {
		oldLabel = "a/" + f.OldPath
	}
	after := string(f.Render(ids))
	switch f.Op {
	case OpCreate:
		oldLabel = "/dev/null"
	case OpDelete:
		if ids == nil || len(ids) == len(f.Hunks) {
			newLabel, after = "/dev/null", ""
		}
	}
	return udiff.Unified(oldLabel, newLabel, string(f.Before), after)
}

// ReverseDiff is a diff that takes the file from "all matched hunks
// applied" back to "all but ids applied": plan it (with Options.Target
// set to f.Path) against the current text to reject those hunks after
// they were applied; the ladder re-locates them if the text moved.
func (f *File) ReverseDiff(ids []int) string {
	var keep []int
	for _, h := range f.Hunks {
		if h.OK() && !selected(ids, h.ID) {
			keep = append(keep, h.ID)
		}
	}
	if keep == nil {
		keep = []int{}
	}
	return udiff.Unified("a/"+f.Path, "b/"+f.Path, string(f.Render(nil)), string(f.Render(keep)))
}
