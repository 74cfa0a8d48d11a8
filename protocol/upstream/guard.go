package upstream

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// localOnly refuses requests that a web page could have made the user's
// browser send: the API has no authentication (like AgentSmithy's), and in
// its default v2 mode the server writes files in the workspace, so a page
// that reaches it could edit the user's project.
//
//   - Host must name this server: a loopback name or address (or the
//     address it listens on) with its port. A DNS-rebinding page reaches
//     127.0.0.1 under its own name, and its requests carry that name.
//   - Origin, when present, must be such a host too (any port): a
//     cross-origin request from a page carries the page's origin.
//   - A POST with a body must be application/json: a page can send
//     text/plain, form or multipart bodies cross-origin without asking
//     first (a CORS "simple" request), but application/json makes the
//     browser send a preflight, which this server answers without
//     Access-Control-Allow-Origin, so the POST never happens. A POST with
//     no body and no Content-Type (approve, reset from the VS Code client)
//     is accepted; the Origin rule covers it.
//
// Refused requests get 403 or 415 with a FastAPI-style {"detail": ...} and
// never reach a handler.
func localOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if msg := checkHost(r.Host, local); msg != "" {
			writeJSON(w, http.StatusForbidden, detail(msg))
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if msg := checkOrigin(o, local); msg != "" {
				writeJSON(w, http.StatusForbidden, detail(msg))
				return
			}
		}
		if r.Method == http.MethodPost {
			ct := r.Header.Get("Content-Type")
			mt, _, err := mime.ParseMediaType(ct)
			hasBody := r.ContentLength != 0
			if (ct != "" || hasBody) && (err != nil || mt != "application/json") {
				writeJSON(w, http.StatusUnsupportedMediaType, detail(fmt.Sprintf("Content-Type %q refused: POST bodies must be application/json", ct)))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkHost says what is wrong with a Host header, or "".
func checkHost(host string, local net.Addr) string {
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = host, "80"
	}
	if !localName(name, local) {
		return fmt.Sprintf("Host %q refused: this server answers only to a loopback name or address (DNS rebinding protection)", host)
	}
	if tcp, ok := local.(*net.TCPAddr); ok && port != fmt.Sprint(tcp.Port) {
		return fmt.Sprintf("Host %q refused: this server listens on port %d", host, tcp.Port)
	}
	return ""
}

// checkOrigin says what is wrong with an Origin header, or "".
func checkOrigin(origin string, local net.Addr) string {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !localName(u.Hostname(), local) {
		return fmt.Sprintf("Origin %q refused: only pages served from this machine's loopback address may call this server", origin)
	}
	return ""
}

// localName reports whether name is "localhost", a loopback address, or
// the address the connection came in on (an --addr other than loopback).
func localName(name string, local net.Addr) bool {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(name, "[]"))
	if err != nil {
		return false
	}
	if ip.Unmap().IsLoopback() {
		return true
	}
	if tcp, ok := local.(*net.TCPAddr); ok {
		if lip, ok := netip.AddrFromSlice(tcp.IP); ok && lip.Unmap() == ip.Unmap() && !lip.IsUnspecified() {
			return true
		}
	}
	return false
}
