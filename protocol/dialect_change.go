package protocol

import (
	"strings"
)

// proposeOnce reports whether the change is new in this turn. AgentSmithy
// v0's patch_file sends its diff inside tool_result and then again as a diff
// event (agentsmithy.md 7.1): one change, not two.
func (t *Turn) proposeOnce(c *Change) bool {
	if c.Diff == "" {
		return true
	}
	key := c.Path + "\x00" + strings.TrimRight(c.Diff, "\n")
	if t.seen == nil {
		t.seen = make(map[string]bool)
	}
	if t.seen[key] {
		return false
	}
	t.seen[key] = true
	return true
}

// diffKind derives the change kind from a unified diff's headers and the
// path they name (the fallback target when the payload names none).
func diffKind(diff string) (ChangeKind, string) {
	var oldP, newP string
	for line := range strings.SplitSeq(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "--- ") && oldP == "":
			oldP = headerPath(line[4:])
		case strings.HasPrefix(line, "+++ ") && newP == "":
			newP = headerPath(line[4:])
		case strings.HasPrefix(line, "@@"):
			goto done
		}
	}
done:
	switch {
	case oldP == "/dev/null":
		return ChangeCreate, newP
	case newP == "/dev/null":
		return ChangeDelete, oldP
	}
	if newP == "" {
		newP = oldP
	}
	return ChangeModify, newP
}

// headerPath cleans a ---/+++ header: no timestamp, no a/ or b/ prefix.
func headerPath(h string) string {
	if i := strings.IndexByte(h, '\t'); i >= 0 {
		h = h[:i]
	}
	h = strings.TrimSpace(h)
	if h == "/dev/null" {
		return h
	}
	if strings.HasPrefix(h, "a/") || strings.HasPrefix(h, "b/") {
		h = h[2:]
	}
	return h
}

// isUnifiedDiff reports whether s has at least one hunk header.
func isUnifiedDiff(s string) bool {
	return strings.HasPrefix(s, "@@ ") || strings.Contains(s, "\n@@ ")
}

// changeFromResult proposes the file change a tool result carries, in the
// shapes docs/dialects.md lists ("File changes carried by tool results"):
// a JSON object with path (or file) and one of diff (a unified diff),
// content, kind "delete" or kind "rename" with old_path. Results of
// read_file are never changes.
func (t *Turn) changeFromResult(tool, raw string) {
	if tool == "read_file" || raw == "" || jsonKind(raw) != 'o' {
		return
	}
	var r payload
	if r.parse(raw) != nil {
		return
	}
	if typ, _ := r.optStr("type"); typ == "read_file_result" {
		return
	}
	path, _ := r.optStr("path")
	if path == "" {
		path, _ = r.optStr("file")
	}
	if path == "" {
		return
	}
	c := &Change{Path: path, Kind: ChangeModify, Source: "tool_result"}
	c.Reason, _ = r.optStr("reason")
	kind, _ := r.optStr("kind")
	diff, derr := r.optStr("diff")
	content, hasContent := r.get("content")
	switch {
	case derr == nil && diff != "" && isUnifiedDiff(diff):
		c.Diff = diff
		c.Kind, _ = diffKind(diff)
	case hasContent && jsonKind(content) == 's':
		c.Content, c.HasContent = unquote(content), true
	case kind == string(ChangeDelete):
	case kind == string(ChangeRename):
		c.OldPath, _ = r.optStr("old_path")
		if c.OldPath == "" {
			t.violate(ViolationMissingField, `tool result with kind "rename" needs "old_path"`, raw)
			return
		}
	default:
		return // an ordinary tool result
	}
	switch ChangeKind(kind) {
	case ChangeCreate, ChangeModify, ChangeDelete, ChangeRename:
		c.Kind = ChangeKind(kind)
	case "":
	default:
		t.violate(ViolationWrongType, `tool result "kind" must be create, modify, delete or rename`, raw)
		return
	}
	if t.proposeOnce(c) {
		t.out(Event{Type: KindChange, Change: c, Raw: t.rawEvent()})
	}
}
