package editor

import (
	"bytes"

	"github.com/smith-dev/smith/daemon"
)

// Version races. An editor answers workspace/applyEdit as soon as its
// buffer holds the edit, but may report the edit (didChange) much later:
// Emacs eglot sends didChange from an idle timer, so an apply that
// follows another at once (two hunks accepted in a row) would be planned
// against the text before the first one and refused for its old version.
//
// smith therefore remembers the text each accepted edit left in the
// buffer until the editor's own didChange reports it. While such a
// prediction is outstanding the engine plans against it (Document), and
// the next edit is sent without a version (the document's version is
// not known yet); the mirror itself only ever holds what the editor
// reported, so the incremental didChange that arrives later applies to
// the text it was computed against.

// seen is the text the user has in the buffer as far as smith knows: the
// newest accepted edit not reported yet, else the reported text.
func (d document) seen() []byte {
	if n := len(d.predicted); n > 0 {
		return d.predicted[n-1]
	}
	return d.text
}

// knownVersion is the buffer's version to send with an edit, nil while an
// accepted edit is not reported yet (its version is not known then).
func (d document) knownVersion() *int32 {
	if len(d.predicted) > 0 {
		return nil
	}
	v := d.version
	return &v
}

// expect records, for each text edit of an open buffer the editor has just
// accepted, the text it leaves, unless a didChange already reported it.
func (d *documents) expect(edits []daemon.FileEdit) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, fe := range edits {
		if fe.Create || fe.Delete {
			continue
		}
		doc, ok := d.byPath[canonicalPath(fe.Path)]
		if !ok || doc.version != fe.Version || bytes.Equal(doc.seen(), fe.NewText) {
			continue
		}
		doc.predicted = append(doc.predicted, fe.NewText)
	}
}

// settle drops the predictions a didChange has caught up with: those up
// to the one equal to the reported text, or all of them when the text is
// none of them (the user typed as well; the report is the truth).
func (doc *document) settle() {
	if len(doc.predicted) == 0 {
		return
	}
	for i := len(doc.predicted) - 1; i >= 0; i-- {
		if bytes.Equal(doc.predicted[i], doc.text) {
			doc.predicted = doc.predicted[i+1:]
			return
		}
	}
	doc.predicted = nil
}
