package upstream

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	godiff "github.com/sourcegraph/go-diff/diff"

	"github.com/smith-dev/smith/protocol"
)

// crossConfigs are every way the server can speak. changes says whether
// the dialect can carry a file change at all (rag and textbook have no
// tool or diff events: there the change exists only in the text).
var crossConfigs = []struct {
	name     string
	opts     Options
	dialect  protocol.Dialect // what the client is told; "" = auto-detect
	changes  bool
	upstream bool // the server applies the change itself
}{
	{"agentsmithy-v2", Options{}, "", true, true},
	{"agentsmithy-v1", Options{Protocol: ProtocolV1}, "", true, true},
	{"agentsmithy-v0", Options{Protocol: ProtocolV0}, "", true, false},
	{"oracle", Options{Dialect: "oracle"}, "oracle", true, false},
	{"lifecycle", Options{Dialect: "lifecycle"}, "lifecycle", true, false},
	{"rag", Options{Dialect: "rag"}, "rag", false, false},
	{"textbook", Options{Dialect: "textbook"}, "textbook", false, false},
}

// TestCrossDialect sends the same requests to every dialect, reads them
// back through smith's own client and reader (protocol.NewClient, which
// runs protocol.ReadTurn), and requires the same assistant text and the
// same file change everywhere.
func TestCrossDialect(t *testing.T) {
	renamed := strings.NewReplacer("total(", "sum(", "// total ", "// sum ").Replace(fixture["main.go"])
	for _, req := range []struct {
		message  string
		text     string
		kind     protocol.ChangeKind
		path     string
		want     string // file content after the change; "" for a deletion
		hunks    int
		wantBody []string // hunk lines of a modify, dialect-independent
	}{
		{
			message: "rename total to sum in main.go",
			text:    "I'll rename `total` to `sum` in `main.go`.\n\nRenamed 3 occurrences of `total` to `sum` in `main.go`.",
			kind:    protocol.ChangeModify, path: "main.go", want: renamed, hunks: 2,
		},
		{
			message: `create notes/todo.md with "- ship it €"`,
			text:    "I'll create `notes/todo.md`.\n\nWrote `notes/todo.md` (1 line).",
			kind:    protocol.ChangeCreate, path: "notes/todo.md", want: "- ship it €\n",
		},
		{
			message: "delete README.md",
			text:    "I'll delete `README.md`.\n\nDeleted `README.md`.",
			kind:    protocol.ChangeDelete, path: "README.md",
		},
	} {
		var bodies [][]string
		for _, cfg := range crossConfigs {
			t.Run(cfg.name+"/"+strings.Fields(req.message)[0], func(t *testing.T) {
				s, base := newTestServer(t, cfg.opts)
				c := protocol.NewClient(protocol.ClientConfig{BaseURL: base, Dialect: cfg.dialect})
				defer c.Close()
				var changes []*protocol.Change
				sum, err := c.Chat(t.Context(), protocol.ChatRequest{Message: req.message}, func(e protocol.Event) {
					switch e.Type {
					case protocol.KindChange:
						changes = append(changes, e.Change)
					case protocol.KindViolation:
						t.Errorf("violation: %+v", *e.Violation)
					}
				})
				if err != nil {
					t.Fatalf("chat: %v", err)
				}
				if sum.Outcome != protocol.OutcomeCompleted {
					t.Fatalf("outcome %s, errors %v", sum.Outcome, sum.Errors)
				}
				if sum.Text != req.text {
					t.Errorf("text\n got %q\nwant %q", sum.Text, req.text)
				}
				if !cfg.changes {
					if len(changes) != 0 {
						t.Errorf("%s cannot carry changes, got %d", cfg.name, len(changes))
					}
					return
				}
				if len(changes) != 1 {
					t.Fatalf("%d changes, want 1", len(changes))
				}
				ch := changes[0]
				kind := ch.Kind
				if cfg.upstream && req.kind == protocol.ChangeCreate && kind == protocol.ChangeModify {
					// v1/v2 file_edit cannot tell a write_to_file that created
					// the file from one that overwrote it: both are accepted.
					kind = protocol.ChangeCreate
				}
				if rel := relTo(s.Workspace(), ch.Path); rel != req.path || kind != req.kind || ch.AppliedUpstream != cfg.upstream {
					t.Errorf("change %s %s upstream=%v, want %s %s upstream=%v", rel, ch.Kind, ch.AppliedUpstream, req.path, req.kind, cfg.upstream)
				}
				got, exists := readFile(t, s.Workspace(), req.path)
				if cfg.upstream {
					// The server wrote it: the disk must show the change.
					if exists != (req.kind != protocol.ChangeDelete) || got != req.want {
						t.Errorf("upstream-applied %s: exists=%v content %q", req.path, exists, got)
					}
				} else {
					if orig, had := fixture[req.path]; got != orig || exists != had {
						t.Errorf("%s wrote %s; only v1/v2 may", cfg.name, req.path)
					}
					// Applying the proposal to the original gives the same file.
					if after := applyChange(t, ch, fixture[req.path]); after != req.want {
						t.Errorf("applying the proposal gives %q, want %q", after, req.want)
					}
				}
				if req.kind == protocol.ChangeModify {
					body, n := hunkLines(ch.Diff)
					if n != req.hunks {
						t.Errorf("%d hunks, want %d", n, req.hunks)
					}
					bodies = append(bodies, body)
				}
			})
		}
		for i := 1; i < len(bodies); i++ {
			if diff := cmp.Diff(bodies[0], bodies[i]); diff != "" {
				t.Errorf("%q: hunks differ between dialects (-first +other):\n%s", req.message, diff)
			}
		}
	}
}

func relTo(root, p string) string {
	if filepath.IsAbs(p) {
		if r, err := filepath.Rel(root, p); err == nil {
			return filepath.ToSlash(r)
		}
	}
	return p
}

// hunkLines reduces any of the three diff formats (AgentSmithy's
// separator-line quirk, v0's, a standard diff) to its @@ and body lines:
// difflib never emits an empty body line, so empty lines are separators.
func hunkLines(d string) ([]string, int) {
	var out []string
	n := 0
	for _, l := range strings.Split(d, "\n") {
		switch {
		case l == "", strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, `\`):
		case strings.HasPrefix(l, "@@"):
			n++
			out = append(out, l)
		default:
			out = append(out, l)
		}
	}
	return out, n
}

// applyChange applies a proposal to the original text: content as is,
// deletions to nothing, diffs strictly hunk by hunk (parsed by go-diff).
func applyChange(t *testing.T, ch *protocol.Change, orig string) string {
	t.Helper()
	switch {
	case ch.Kind == protocol.ChangeDelete:
		return ""
	case ch.HasContent:
		return ch.Content
	}
	text := ch.Diff
	if !strings.HasSuffix(text, "\n") {
		text += "\n" // v0 diffs end without a newline
	}
	fd, err := godiff.ParseFileDiff([]byte(text))
	if err != nil {
		t.Fatalf("parse %q: %v", ch.Diff, err)
	}
	lines := splitKeepLF(orig)
	var out []string
	next := 0 // index into lines
	for _, h := range fd.Hunks {
		start := int(h.OrigStartLine) - 1
		if h.OrigLines == 0 {
			start++
		}
		out = append(out, lines[next:start]...)
		next = start
		for _, bl := range strings.SplitAfter(string(h.Body), "\n") {
			if bl == "" {
				continue
			}
			switch bl[0] {
			case ' ', '-':
				if next >= len(lines) || lines[next] != bl[1:] {
					t.Fatalf("hunk does not match line %d: %q vs %q", next+1, lines[next], bl[1:])
				}
				if bl[0] == ' ' {
					out = append(out, lines[next])
				}
				next++
			case '+':
				out = append(out, bl[1:])
			default:
				t.Fatalf("odd body line %q", bl)
			}
		}
	}
	return strings.Join(append(out, lines[next:]...), "")
}

// TestCrossDialectError: "fail with TEXT" ends every dialect's turn with
// its own error event, read back as an error outcome with the same text.
func TestCrossDialectError(t *testing.T) {
	for _, cfg := range crossConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			_, base := newTestServer(t, cfg.opts)
			c := protocol.NewClient(protocol.ClientConfig{BaseURL: base, Dialect: cfg.dialect})
			defer c.Close()
			sum, err := c.Chat(t.Context(), protocol.ChatRequest{Message: "fail with quota exceeded"}, func(e protocol.Event) {
				if e.Type == protocol.KindViolation {
					t.Errorf("violation: %+v", *e.Violation)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.name == "rag" {
				// rag has no terminal event: an error payload followed by the
				// end of the body.
				if len(sum.Errors) != 1 || !strings.Contains(sum.Errors[0].Message, "quota exceeded") {
					t.Errorf("errors %v", sum.Errors)
				}
			} else if sum.Outcome != protocol.OutcomeError || len(sum.Errors) != 1 || !strings.Contains(sum.Errors[0].Message, "quota exceeded") {
				t.Errorf("outcome %s, errors %v", sum.Outcome, sum.Errors)
			}
			if sum.Text != "Let me try that.\n\n" {
				t.Errorf("text %q", sum.Text)
			}
		})
	}
}
