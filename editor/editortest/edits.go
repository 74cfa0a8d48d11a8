package editortest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"go.lsp.dev/jsonrpc2"
)

type position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type textEdit struct {
	Range struct {
		Start position `json:"start"`
		End   position `json:"end"`
	} `json:"range"`
	NewText string `json:"newText"`
}

// documentChange is any member of WorkspaceEdit.documentChanges.
type documentChange struct {
	Kind         string `json:"kind"`
	URI          string `json:"uri"`
	OldURI       string `json:"oldUri"`
	NewURI       string `json:"newUri"`
	TextDocument *struct {
		URI     string `json:"uri"`
		Version *int32 `json:"version"`
	} `json:"textDocument"`
	Edits []textEdit `json:"edits"`
}

type applyEditParams struct {
	Label string `json:"label"`
	Edit  struct {
		DocumentChanges []documentChange `json:"documentChanges"`
	} `json:"edit"`
}

type applyEditResult struct {
	Applied       bool   `json:"applied"`
	FailureReason string `json:"failureReason,omitempty"`
}

// planned is the outcome of one document change before it is carried out.
type planned struct {
	path, text string
	open       bool
	remove     bool
}

// applyEdit applies a WorkspaceEdit all or nothing, like a careful editor:
// every versioned text edit must match its buffer's version; open buffers
// are edited in memory (a didChange with the new version is sent before
// the answer), closed files on disk.
func (e *Editor) applyEdit(ctx context.Context, id jsonrpc2.ID, raw json.RawMessage) (*applyEditResult, error) {
	var p applyEditParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.edits = append(e.edits, raw)
	refuse, hold, enc, onApply := e.refuseEdits, e.holdEdits, e.Encoding, e.onApplyEdit
	e.mu.Unlock()
	if hold {
		return nil, e.waitCancel(ctx, id)
	}
	if refuse {
		return &applyEditResult{Applied: false, FailureReason: "refused by the test"}, nil
	}
	if onApply != nil {
		onApply(p.Label)
	}
	// Plan everything first so that a failure changes nothing.
	var out []planned
	for i, dc := range p.Edit.DocumentChanges {
		switch dc.Kind {
		case "create":
			out = append(out, planned{path: PathOf(dc.URI), text: ""})
		case "delete":
			out = append(out, planned{path: PathOf(dc.URI), remove: true})
		case "":
			path := PathOf(dc.TextDocument.URI)
			text, open, err := e.current(path, out)
			if err != nil {
				return &applyEditResult{FailureReason: err.Error()}, nil
			}
			if open && dc.TextDocument.Version != nil {
				if b, _ := e.Buffer(path); b.Version != *dc.TextDocument.Version {
					return &applyEditResult{FailureReason: fmt.Sprintf("change %d: %s is at version %d, not %d", i, path, b.Version, *dc.TextDocument.Version)}, nil
				}
			}
			next, err := applyTextEdits(text, dc.Edits, enc)
			if err != nil {
				return &applyEditResult{FailureReason: fmt.Sprintf("change %d: %v", i, err)}, nil
			}
			out = append(out, planned{path: path, text: next, open: open})
		default:
			return &applyEditResult{FailureReason: "unsupported operation " + dc.Kind}, nil
		}
	}
	for _, r := range out {
		switch {
		case r.remove:
			if err := os.Remove(r.path); err != nil {
				return nil, err
			}
			if _, ok := e.Buffer(r.path); ok {
				e.Close(ctx, r.path)
			}
		case r.open && e.editDeferred(r.path, r.text):
		case r.open:
			if err := e.Type(ctx, r.path, r.text); err != nil {
				return nil, err
			}
		default:
			if err := os.WriteFile(r.path, []byte(r.text), 0o644); err != nil {
				return nil, err
			}
		}
	}
	return &applyEditResult{Applied: true}, nil
}

// waitCancel blocks until the server sends $/cancelRequest for id.
func (e *Editor) waitCancel(ctx context.Context, id jsonrpc2.ID) error {
	want, _ := json.Marshal(map[string]any{"id": idValue(id)})
	_, err := e.WaitNotification(ctx, "$/cancelRequest", func(p json.RawMessage) bool {
		var got, w any
		json.Unmarshal(p, &got)
		json.Unmarshal(want, &w)
		return fmt.Sprint(got) == fmt.Sprint(w)
	})
	if err != nil {
		return err
	}
	return jsonrpc2.NewError(-32800, "request cancelled")
}

func idValue(id jsonrpc2.ID) any {
	if n, ok := id.Number(); ok {
		return n
	}
	s, _ := id.StringValue()
	return s
}

// current is the text an edit of path applies to: the result of an earlier
// change of the same edit, the open buffer, or the file on disk.
func (e *Editor) current(path string, plan []planned) (string, bool, error) {
	for i := len(plan) - 1; i >= 0; i-- {
		if plan[i].path == path && !plan[i].remove {
			return plan[i].text, plan[i].open, nil
		}
	}
	if b, ok := e.Buffer(path); ok {
		return b.Text, true, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false, err
	}
	return string(data), false, nil
}

// applyTextEdits applies LSP text edits (non-overlapping, all against the
// original text) from the last to the first.
func applyTextEdits(text string, edits []textEdit, enc string) (string, error) {
	type span struct {
		start, end int
		newText    string
	}
	spans := make([]span, 0, len(edits))
	for _, te := range edits {
		s, err := offset(text, te.Range.Start.Line, te.Range.Start.Character, enc)
		if err != nil {
			return "", err
		}
		en, err := offset(text, te.Range.End.Line, te.Range.End.Character, enc)
		if err != nil {
			return "", err
		}
		if en < s {
			return "", fmt.Errorf("range ends before it starts")
		}
		spans = append(spans, span{s, en, te.NewText})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start > spans[j].start })
	for _, sp := range spans {
		text = text[:sp.start] + sp.newText + text[sp.end:]
	}
	return text, nil
}
