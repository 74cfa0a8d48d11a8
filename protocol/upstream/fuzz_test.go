package upstream

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzPlan: the demo agent answers any message without panicking, never
// proposes an edit outside the workspace, and streams its text in deltas
// that concatenate back exactly and never split a UTF-8 sequence.
func FuzzPlan(f *testing.F) {
	for _, s := range []string{"rename total to sum in main.go", "rename a to b everywhere", "add a comment to main in main.go",
		`create ../../etc/x with "y"`, "delete /etc/passwd", "fail with x", "plot", "rename ö to ü in main.go", "create a with \x00"} {
		f.Add(s)
	}
	ws := f.TempDir()
	writeFixture(f, ws)
	w, err := newWorkspace(ws)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		sc := plan(w, msg)
		for _, tool := range sc.Tools {
			if tool.Edit != nil {
				if _, err := w.abs(tool.Edit.Rel); err != nil {
					t.Fatalf("edit outside the workspace: %q", tool.Edit.Rel)
				}
			}
		}
		text := sc.Text()
		ds := deltas(text)
		if strings.Join(ds, "") != text {
			t.Fatalf("deltas do not concatenate to the text")
		}
		if utf8.ValidString(text) {
			for _, d := range ds {
				if !utf8.ValidString(d) {
					t.Fatalf("delta %q splits a UTF-8 sequence", d)
				}
			}
		}
	})
}

// FuzzMarshalStyles: the Python and Node renderings are valid JSON with
// the same value as encoding/json's; the ASCII one has no raw non-ASCII.
func FuzzMarshalStyles(f *testing.F) {
	for _, s := range []string{"a, b: c", `"\`, "é€🚀\u2028\u2029", "\x00\x1f\x7f", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := map[string]any{"k, :": s, "n": []any{1.5, s}}
		want, _ := json.Marshal(v)
		var wantV any
		_ = json.Unmarshal(want, &wantV)
		for _, style := range []jsonStyle{styleNode, stylePython, stylePythonASCII} {
			got, err := marshal(style, v)
			if err != nil {
				t.Fatal(err)
			}
			var gotV any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatalf("style %d: invalid JSON %q: %v", style, got, err)
			}
			if !reflect.DeepEqual(gotV, wantV) {
				t.Fatalf("style %d changed the value: %v vs %v", style, gotV, wantV)
			}
			if style == stylePythonASCII && strings.ContainsFunc(string(got), func(r rune) bool { return r >= utf8.RuneSelf }) {
				t.Fatalf("ASCII style has non-ASCII: %q", got)
			}
		}
	})
}

// FuzzParseFaults: any spec parses or fails cleanly, and what parses
// prints back to an equal list.
func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{"stall=2,no-done", "cut-mid-event=3", "status=503", "huge-event=0.5", ",,", "x=y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		fs, err := ParseFaults(spec)
		if err != nil {
			return
		}
		var parts []string
		for _, x := range fs {
			parts = append(parts, x.String())
		}
		again, err := ParseFaults(strings.Join(parts, ","))
		if err != nil || len(again) != len(fs) {
			t.Fatalf("round trip of %q: %v %v", spec, again, err)
		}
	})
}
