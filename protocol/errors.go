package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/smith-dev/smith/internal/kinderr"
)

// Sentinels for errors.Is. The typed errors below answer to them, so a caller
// can branch on the class of failure without knowing the concrete type.
var (
	// ErrUnreachable: no HTTP answer came back at all (refused connection,
	// unknown host, TLS handshake failure). The CLI exits 3 for it.
	ErrUnreachable = errors.New("upstream unreachable")
	// ErrDialogBusy: the upstream is still working on an earlier message of
	// the same dialog (lifecycle 409). Nothing was sent; try again later.
	ErrDialogBusy = errors.New("dialog busy")
	// ErrNotFound: the upstream answered 404.
	ErrNotFound = errors.New("not found")
	// ErrNoServer: discovery found no usable AgentSmithy server.
	ErrNoServer = errors.New("no AgentSmithy server")
	// ErrSessionClosed: a lifecycle dialog whose session stream is no longer
	// open. Lifecycle sessions live only as long as their stream.
	ErrSessionClosed = errors.New("session stream closed")
)

// errorf returns an error of kind (one of the sentinels above) whose text
// is format's alone: errors.Is finds the kind, and people do not read its
// name in the middle of the sentence (internal/kinderr).
func errorf(kind error, format string, args ...any) error {
	return kinderr.Errorf(kind, format, args...)
}

// busyAdvice is what to do about a lifecycle dialog that is still
// answering: its server takes one message at a time, and an earlier one
// (perhaps abandoned by smith) runs until its end.
const busyAdvice = "wait for that answer to end, or start a new dialog"

// MaxErrorBody is how much of an unexpected response body an error quotes.
const MaxErrorBody = 2 << 10

// HTTPError is a non-2xx answer. Body holds at most MaxErrorBody bytes of the
// response body; Truncated says whether there was more.
type HTTPError struct {
	Method    string
	URL       string
	Status    int    // e.g. 500
	StatusMsg string // e.g. "500 Internal Server Error"
	Body      string
	Truncated bool
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s %s: %s", e.Method, e.URL, e.StatusMsg)
	if d := e.Detail(); d != "" {
		return msg + ": " + d
	}
	return msg
}

// Is makes errors.Is(err, ErrNotFound) true for a 404.
func (e *HTTPError) Is(target error) bool {
	return target == ErrNotFound && e.Status == 404
}

// Detail is the server's own explanation: FastAPI's {"detail": "..."} (or a
// structured detail, compacted), a lifecycle server's {"error": "..."},
// else the quoted body.
func (e *HTTPError) Detail() string {
	var v struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal([]byte(e.Body), &v) == nil && len(v.Detail) > 0 {
		var s string
		if json.Unmarshal(v.Detail, &s) == nil {
			return s
		}
		return string(v.Detail)
	}
	// The lifecycle servers' {"error": "..."}.
	var l struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(e.Body), &l) == nil && l.Error != "" {
		return l.Error
	}
	return quoteBody(e.Body, e.Truncated)
}

// ContentTypeError is a 2xx answer that is not an event stream (for example a
// proxy's HTML page, or JSON because the server ignored "stream").
type ContentTypeError struct {
	Method      string
	URL         string
	ContentType string // as received; "" when absent
	Want        string
	Body        string // at most MaxErrorBody bytes
	Truncated   bool
}

func (e *ContentTypeError) Error() string {
	ct := e.ContentType
	if ct == "" {
		ct = "no content type"
	}
	msg := fmt.Sprintf("%s %s: got %s, want %s", e.Method, e.URL, ct, e.Want)
	if b := quoteBody(e.Body, e.Truncated); b != "" {
		msg += ": " + b
	}
	return msg
}

// UnreachableError is a request that got no HTTP answer.
type UnreachableError struct {
	Method string
	URL    string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%s %s: cannot reach the upstream: %v (is the server running at that address?)", e.Method, e.URL, e.Err)
}
func (e *UnreachableError) Unwrap() error        { return e.Err }
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// TLSError is a failed TLS handshake: an untrusted or mismatched certificate,
// or a server that does not speak TLS. It is also ErrUnreachable.
type TLSError struct {
	Method string
	URL    string
	Err    error
}

func (e *TLSError) Error() string {
	return fmt.Sprintf("%s %s: TLS handshake failed: %v (check the certificate, or use http:// for a plain server)", e.Method, e.URL, e.Err)
}
func (e *TLSError) Unwrap() error        { return e.Err }
func (e *TLSError) Is(target error) bool { return target == ErrUnreachable }

// IdleTimeoutError ends a stream on which no byte arrived for too long.
type IdleTimeoutError struct {
	URL     string
	Timeout string // the configured idle limit, e.g. "60s"
}

func (e *IdleTimeoutError) Error() string {
	return fmt.Sprintf("%s: no data for %s; the upstream stalled", e.URL, e.Timeout)
}

// Is makes errors.Is(err, ErrIdleTimeout) true: the turn ends interrupted.
func (e *IdleTimeoutError) Is(target error) bool { return target == ErrIdleTimeout }

// readErrorBody reads at most MaxErrorBody bytes of body for an error message.
func readErrorBody(body io.Reader) (text string, truncated bool) {
	b, _ := io.ReadAll(io.LimitReader(body, MaxErrorBody+1))
	if len(b) > MaxErrorBody {
		b, truncated = b[:MaxErrorBody], true
		// Do not end inside a UTF-8 sequence (a cut one is at most 3 bytes).
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
			if r, n := utf8.DecodeLastRune(b); r != utf8.RuneError || n != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	return string(b), truncated
}

// quoteBody renders a body for one line of an error message.
func quoteBody(body string, truncated bool) string {
	body = strings.TrimSpace(body)
	if body == "" {
		return ""
	}
	q := fmt.Sprintf("%q", body)
	if truncated {
		q += " (truncated)"
	}
	return q
}
