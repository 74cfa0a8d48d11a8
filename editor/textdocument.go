package editor

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// The buffer mirror: smith keeps the text of every document the editor has
// open, as the editor reports it with textDocument/did*, so that plans are
// made against what the user sees, unsaved edits included.

// document is one open buffer. text is never modified in place: every
// change builds a new slice, so a slice handed out by Document stays valid.
type document struct {
	uri        DocumentURI
	languageID string
	version    int32
	text       []byte
	// predicted are texts of edits the editor accepted but has not
	// reported yet, oldest first (predict.go).
	predicted [][]byte
}

// documents is the mirror of one connection, keyed by canonical path (see
// canonicalPath), so that the engine finds a buffer whichever spelling of
// the path the editor used.
type documents struct {
	mu     sync.RWMutex
	byPath map[string]*document
	keys   map[DocumentURI]string // uri → key, so that didChange resolves no symlinks
}

func newDocuments() *documents {
	return &documents{byPath: map[string]*document{}, keys: map[DocumentURI]string{}}
}

func (d *documents) get(path string) (document, bool) {
	key := canonicalPath(path)
	d.mu.RLock()
	defer d.mu.RUnlock()
	doc, ok := d.byPath[key]
	if !ok {
		return document{}, false
	}
	return *doc, true
}

// lookup returns the open document of uri; the caller holds d.mu.
func (d *documents) lookup(uri DocumentURI) (*document, bool) {
	doc, ok := d.byPath[d.keys[uri]]
	return doc, ok
}

// canonicalPath resolves symlinks in path (in its directory when the file
// does not exist yet).
func canonicalPath(path string) string {
	path = filepath.Clean(path)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		return filepath.Join(dir, filepath.Base(path))
	}
	return path
}

// Document implements daemon.Editor. A client that cannot take versioned
// workspace edits has no buffers as far as the engine is concerned: its
// changes are planned against the disk and written there, and the editor
// is told to reload (smith/fileChanged).
func (c *client) Document(path string) (text []byte, version int32, open bool) {
	c.mu.Lock()
	editable := c.caps.applyEdit && c.caps.documentChanges
	c.mu.Unlock()
	if !editable {
		return nil, 0, false
	}
	doc, ok := c.docs.get(path)
	if !ok {
		return nil, 0, false
	}
	return doc.seen(), doc.version, true
}

func (c *client) didOpen(_ context.Context, p *DidOpenTextDocumentParams) (any, error) {
	path, err := uriToPath(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	key := canonicalPath(path)
	c.docs.mu.Lock()
	defer c.docs.mu.Unlock()
	c.docs.keys[p.TextDocument.URI] = key
	c.docs.byPath[key] = &document{
		uri:        p.TextDocument.URI,
		languageID: p.TextDocument.LanguageID,
		version:    p.TextDocument.Version,
		text:       []byte(p.TextDocument.Text),
	}
	go c.publishDiagnostics(path) // not on the read loop: it reads the engine
	return nil, nil
}

// didChange applies full and incremental changes in order. A change that
// cannot be applied (an unknown document, a range past the text) leaves
// the mirror as it was and is logged; the next full sync repairs it.
func (c *client) didChange(_ context.Context, p *DidChangeTextDocumentParams) (any, error) {
	enc := c.encoding()
	c.docs.mu.Lock()
	defer c.docs.mu.Unlock()
	doc, ok := c.docs.lookup(p.TextDocument.URI)
	if !ok {
		return nil, fmt.Errorf("didChange for %s, which is not open", p.TextDocument.URI)
	}
	text, err := applyChanges(doc.text, p.ContentChanges, enc)
	if err != nil {
		return nil, fmt.Errorf("didChange for %s (version %d): %w", p.TextDocument.URI, p.TextDocument.Version, err)
	}
	doc.text, doc.version = text, p.TextDocument.Version
	doc.settle()
	c.reval.touch(c.docs.keys[p.TextDocument.URI])
	return nil, nil
}

// revalidate re-plans the engine's open changes of the edited buffers, so
// that a pending hunk whose context the user edited away becomes conflict
// (or is re-anchored) and the editors get smith/changeUpdated at once, not
// only at the next apply.
func (c *client) revalidate(paths []string) {
	eng, _, err := c.session()
	if err != nil {
		return
	}
	for _, p := range paths {
		eng.Revalidate(p)
	}
	c.publishDiagnostics(paths...) // the ranges follow the edits (diagnostics.go)
}

// applyChanges applies content changes to text, each against the result
// of the previous one, and returns a new slice.
func applyChanges(text []byte, changes []TextDocumentContentChangeEvent, enc PositionEncoding) ([]byte, error) {
	for _, ch := range changes {
		if ch.Range == nil {
			text = []byte(ch.Text)
			continue
		}
		start, end, err := rangeOffsets(text, *ch.Range, enc)
		if err != nil {
			return nil, err
		}
		next := make([]byte, 0, len(text)-(end-start)+len(ch.Text))
		next = append(next, text[:start]...)
		next = append(next, ch.Text...)
		text = append(next, text[end:]...)
	}
	return text, nil
}

// didSave takes the saved text when the client includes it.
func (c *client) didSave(_ context.Context, p *DidSaveTextDocumentParams) (any, error) {
	if p.Text == nil {
		return nil, nil
	}
	c.docs.mu.Lock()
	defer c.docs.mu.Unlock()
	if doc, ok := c.docs.lookup(p.TextDocument.URI); ok {
		doc.text = []byte(*p.Text)
		doc.settle()
	}
	return nil, nil
}

func (c *client) didClose(_ context.Context, p *DidCloseTextDocumentParams) (any, error) {
	c.docs.mu.Lock()
	defer c.docs.mu.Unlock()
	delete(c.docs.byPath, c.docs.keys[p.TextDocument.URI])
	delete(c.docs.keys, p.TextDocument.URI)
	return nil, nil
}

// uriToPath converts a file:// URI to a clean absolute path.
func uriToPath(u DocumentURI) (string, error) {
	parsed, err := url.Parse(string(u))
	if err != nil {
		return "", invalidParams("bad document URI %q: %v", u, err)
	}
	if parsed.Scheme != "file" {
		return "", invalidParams("unsupported document URI %q: smith only handles file:// URIs", u)
	}
	p := parsed.Path
	if runtime.GOOS == "windows" {
		p = strings.TrimPrefix(p, "/") // file:///C:/x → C:/x
	}
	p = filepath.FromSlash(p)
	if !filepath.IsAbs(p) {
		return "", invalidParams("document URI %q has no absolute path", u)
	}
	return filepath.Clean(p), nil
}

// pathToURI converts an absolute path to a file:// URI.
func pathToURI(path string) DocumentURI {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows drive letter
	}
	return DocumentURI((&url.URL{Scheme: "file", Path: p}).String())
}
