package protocol

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzReadErrorBody checks the quoting of error bodies: a prefix of the
// body, at most MaxErrorBody bytes, never a cut UTF-8 sequence when the body
// was valid UTF-8, and Truncated exactly when something was left out.
func FuzzReadErrorBody(f *testing.F) {
	f.Add([]byte(`{"detail": "Dialog not found"}`))
	f.Add([]byte(strings.Repeat("é", MaxErrorBody)))
	f.Add([]byte(strings.Repeat("a", MaxErrorBody-1) + "🚀"))
	f.Add(bytes.Repeat([]byte{0xff}, MaxErrorBody+10))
	f.Fuzz(func(t *testing.T, body []byte) {
		text, truncated := readErrorBody(bytes.NewReader(body))
		if len(text) > MaxErrorBody || !bytes.HasPrefix(body, []byte(text)) {
			t.Fatalf("quoted %d bytes, not a prefix of at most %d", len(text), MaxErrorBody)
		}
		if truncated != (len(body) > MaxErrorBody) {
			t.Fatalf("truncated = %v for a %d-byte body", truncated, len(body))
		}
		if !truncated && text != string(body) {
			t.Fatal("a short body was not quoted whole")
		}
		if utf8.Valid(body) && !utf8.ValidString(text) {
			t.Fatalf("valid UTF-8 cut inside a sequence: %q", text[max(0, len(text)-4):])
		}
		if truncated && len(text) < MaxErrorBody-utf8.UTFMax {
			t.Fatalf("quoted only %d bytes of a long body", len(text))
		}
		e := &HTTPError{Method: "GET", URL: "http://x/", Status: 500, StatusMsg: "500 Internal Server Error", Body: text, Truncated: truncated}
		if msg := e.Error(); !strings.HasPrefix(msg, "GET http://x/: 500 Internal Server Error") {
			t.Fatalf("message %q", msg)
		}
	})
}
