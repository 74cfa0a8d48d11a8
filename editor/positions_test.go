package editor

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOffsetOfAndPositionOf(t *testing.T) {
	// "é" is 2 bytes, 1 UTF-16 unit; "😀" is 4 bytes, 2 UTF-16 units.
	text := []byte("aé😀b\r\nx\ry\n")
	tests := []struct {
		name string
		pos  Position
		enc  PositionEncoding
		off  int
	}{
		{"start", Position{0, 0}, EncodingUTF16, 0},
		{"after é utf16", Position{0, 2}, EncodingUTF16, 3},
		{"after emoji utf16", Position{0, 4}, EncodingUTF16, 7},
		{"inside surrogate pair snaps back", Position{0, 3}, EncodingUTF16, 3},
		{"after emoji utf8", Position{0, 7}, EncodingUTF8, 7},
		{"inside utf8 sequence snaps back", Position{0, 5}, EncodingUTF8, 3},
		{"utf32", Position{0, 3}, EncodingUTF32, 7},
		{"past line end clamps before CRLF", Position{0, 99}, EncodingUTF16, 8},
		{"line after CRLF", Position{1, 0}, EncodingUTF16, 10},
		{"line after lone CR", Position{2, 1}, EncodingUTF16, 13},
		{"empty last line", Position{3, 0}, EncodingUTF16, 14},
		{"line past the end", Position{9, 0}, EncodingUTF16, 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := offsetOf(text, tt.pos, tt.enc); got != tt.off {
				t.Errorf("offsetOf(%v, %s) = %d, want %d", tt.pos, tt.enc, got, tt.off)
			}
		})
	}
	// positionOf is the inverse on character boundaries.
	for _, enc := range []PositionEncoding{EncodingUTF16, EncodingUTF8, EncodingUTF32} {
		for _, off := range []int{0, 1, 3, 7, 8, 10, 11, 12, 13, 14} {
			pos := positionOf(text, off, enc)
			if back := offsetOf(text, pos, enc); back != off {
				t.Errorf("%s: offset %d → %v → %d", enc, off, pos, back)
			}
		}
	}
}

func TestApplyChanges(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		enc     PositionEncoding
		changes []TextDocumentContentChangeEvent
		want    string
		wantErr bool
	}{
		{
			name:    "full replace",
			text:    "old",
			changes: []TextDocumentContentChangeEvent{{Text: "new\n"}},
			want:    "new\n",
		},
		{
			name: "incremental after astral char in utf-16",
			text: "x😀y\n",
			enc:  EncodingUTF16,
			changes: []TextDocumentContentChangeEvent{
				{Range: &Range{Start: Position{0, 3}, End: Position{0, 4}}, Text: "Z"},
			},
			want: "x😀Z\n",
		},
		{
			name: "incremental in utf-8, applied in order",
			text: "héllo\nworld\n",
			enc:  EncodingUTF8,
			changes: []TextDocumentContentChangeEvent{
				{Range: &Range{Start: Position{0, 0}, End: Position{0, 3}}, Text: "H"},
				{Range: &Range{Start: Position{1, 0}, End: Position{2, 0}}, Text: ""},
			},
			want: "Hllo\n",
		},
		{
			name: "insert at the end of a file without final newline",
			text: "a\nb",
			enc:  EncodingUTF16,
			changes: []TextDocumentContentChangeEvent{
				{Range: &Range{Start: Position{1, 1}, End: Position{1, 1}}, Text: "c\n"},
			},
			want: "a\nbc\n",
		},
		{
			name: "reversed range is an error",
			text: "abc",
			enc:  EncodingUTF16,
			changes: []TextDocumentContentChangeEvent{
				{Range: &Range{Start: Position{0, 2}, End: Position{0, 1}}, Text: "x"},
			},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := []byte(tt.text)
			got, err := applyChanges(orig, tt.changes, tt.enc)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error, got %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			if string(orig) != tt.text {
				t.Errorf("the original slice was modified: %q", orig)
			}
		})
	}
}

// TestMinimalEdit checks that the edit, applied with the same position
// arithmetic an editor uses, turns old into new in every encoding.
func TestMinimalEdit(t *testing.T) {
	tests := []struct{ name, old, new string }{
		{"equal", "same\n", "same\n"},
		{"middle word", "func Foo() {}\n", "func Bar() {}\n"},
		{"insert line", "a\nc\n", "a\nb\nc\n"},
		{"delete all", "abc\n", ""},
		{"from empty", "", "hello\n"},
		{"emoji shares a prefix byte", "x😀\n", "x😁\n"},
		{"CRLF kept whole", "a\r\nb\r\n", "a\nb\r\n"},
		{"append after CR", "a\r", "a\r\n"},
		{"repeated text", "aaaa", "aaaaaa"},
	}
	for _, tt := range tests {
		for _, enc := range []PositionEncoding{EncodingUTF16, EncodingUTF8, EncodingUTF32} {
			t.Run(tt.name+"/"+string(enc), func(t *testing.T) {
				edit := minimalEdit([]byte(tt.old), []byte(tt.new), enc)
				if tt.old == tt.new {
					if edit != nil {
						t.Fatalf("edit for equal texts: %+v", edit)
					}
					return
				}
				got, err := applyChanges([]byte(tt.old), []TextDocumentContentChangeEvent{{Range: &edit.Range, Text: edit.NewText}}, enc)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tt.new {
					t.Errorf("edit %+v gives %q, want %q", edit, got, tt.new)
				}
			})
		}
	}
}

func TestURIRoundTrip(t *testing.T) {
	for _, p := range []string{"/tmp/a b/c#d.go", "/x/ü/y.txt", "/plain"} {
		uri := pathToURI(p)
		back, err := uriToPath(uri)
		if err != nil || back != p {
			t.Errorf("%s → %s → %s, %v", p, uri, back, err)
		}
	}
	for _, bad := range []DocumentURI{"untitled:Untitled-1", "file:relative", "::"} {
		if _, err := uriToPath(bad); err == nil {
			t.Errorf("uriToPath(%q) accepted a non-file URI", bad)
		}
	}
}

// FuzzMinimalEdit: for any two texts, the edit minimalEdit builds, applied
// through the didChange arithmetic, turns the first into the second, in
// every encoding.
func FuzzMinimalEdit(f *testing.F) {
	f.Add("a\r\nb", "a\nb")
	f.Add("x😀y", "x😁y")
	f.Add("", "\r")
	f.Add("\xff\xfe", "\xff")
	f.Fuzz(func(t *testing.T, old, new string) {
		for _, enc := range []PositionEncoding{EncodingUTF16, EncodingUTF8, EncodingUTF32} {
			edit := minimalEdit([]byte(old), []byte(new), enc)
			if edit == nil {
				if old != new {
					t.Fatalf("%s: no edit for %q → %q", enc, old, new)
				}
				continue
			}
			got, err := applyChanges([]byte(old), []TextDocumentContentChangeEvent{{Range: &edit.Range, Text: edit.NewText}}, enc)
			if err != nil {
				t.Fatalf("%s: %v", enc, err)
			}
			if string(got) != new {
				t.Fatalf("%s: %q with %+v gives %q, want %q", enc, old, edit, got, new)
			}
		}
	})
}

// BenchmarkIncrementalChange: one keystroke (an incremental didChange in
// the middle) on a 20 000-line, 1 MB buffer, UTF-16 positions.
func BenchmarkIncrementalChange(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 20000; i++ {
		sb.WriteString("\tvalue := compute(x, \"é😀\") + 42 // line of about fifty bytes\n")
	}
	text := []byte(sb.String())
	change := []TextDocumentContentChangeEvent{{Range: &Range{Start: Position{10000, 20}, End: Position{10000, 20}}, Text: "y"}}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := applyChanges(text, change, EncodingUTF16); err != nil {
			b.Fatal(err)
		}
	}
}
