package protocol

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// The AgentSmithy REST API (docs: agentsmithy reference, section 8). The
// methods live on Client and share its base URL, headers and token. Every
// method returns the typed errors of errors.go: *HTTPError for a non-2xx
// answer (errors.Is(err, ErrNotFound) for 404), *UnreachableError /
// *TLSError when there is no answer at all. Response types keep the server's
// JSON names exactly; fields the server sends as null are pointers.

// maxRESTBody bounds a REST response body. History pages and session
// status (with base_content) can be large, but not unbounded.
const maxRESTBody = 64 << 20

// doJSON sends in (when not nil) as JSON and decodes a 2xx answer into out
// (when not nil).
func (c *Client) doJSON(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body []byte
	if in != nil {
		b, err := marshalBody(in)
		if err != nil {
			return err
		}
		body = b
	}
	req, err := c.newRequest(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.do(req)
	if err != nil {
		return err
	}
	if err := checkStatus(res); err != nil {
		return err
	}
	defer res.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "application/json" {
		b, trunc := readErrorBody(res.Body)
		return &ContentTypeError{Method: method, URL: req.URL.Redacted(), ContentType: res.Header.Get("Content-Type"),
			Want: "application/json", Body: b, Truncated: trunc}
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, maxRESTBody)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", method, req.URL.Redacted(), err)
	}
	return nil
}

// dialogPath is /api/dialogs/{id}{suffix}, refusing ids that would change
// the path's meaning.
func dialogPath(id, suffix string) (string, error) {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\\?#") {
		return "", fmt.Errorf("invalid dialog id %q", id)
	}
	return "/api/dialogs/" + url.PathEscape(id) + suffix, nil
}

// Health is the answer of GET /health.
type Health struct {
	Status       string   `json:"status"`        // "ok"
	Service      string   `json:"service"`       // "agentsmithy-server"
	ServerStatus *string  `json:"server_status"` // starting|ready|stopping|stopped|error|crashed|unknown
	Port         *int     `json:"port"`
	PID          int      `json:"pid"`
	ServerError  *string  `json:"server_error"`
	ConfigValid  *bool    `json:"config_valid"`
	ConfigErrors []string `json:"config_errors"`
	// Extensions of smith upstream (absent from a real AgentSmithy
	// server): the workspace it serves and the protocol (v2, v1, v0) or
	// dialect it speaks.
	Workspace string `json:"workspace,omitempty"`
	Protocol  string `json:"protocol,omitempty"`
}

// Health asks GET /health. The server always answers 200; whether it is
// ready is ServerStatus, whether its configuration works is ConfigValid.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	if err := c.doJSON(ctx, http.MethodGet, "/health", nil, nil, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// OK is the {"ok": true} answer of several dialog endpoints.
type OK struct {
	OK bool `json:"ok"`
}
