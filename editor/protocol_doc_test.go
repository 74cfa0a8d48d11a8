package editor

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.lsp.dev/jsonrpc2"
)

// TestProtocolDocMatchesCode keeps docs/protocol.md, the authority for the
// editor protocol, and the server in step: every smith method and
// notification the server has is documented and every documented one
// exists, and the error code table lists exactly the codes in errors.go.
func TestProtocolDocMatchesCode(t *testing.T) {
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)(?:^### |`)(smith/[a-zA-Z/]+)").FindAllStringSubmatch(string(doc), -1) {
		if !slices.Contains(documented, m[1]) {
			documented = append(documented, m[1])
		}
	}
	implemented := append(smithMethods(), MethodEvent, MethodChangeUpdated, MethodFileChanged)
	slices.Sort(documented)
	slices.Sort(implemented)
	if diff := cmp.Diff(implemented, documented); diff != "" {
		t.Errorf("smith methods (-implemented +documented):\n%s", diff)
	}
	routes := (&client{}).routeTable()
	for _, m := range smithMethods() {
		if _, ok := routes[m]; !ok {
			t.Errorf("%s is announced but has no route", m)
		}
	}

	codes := map[string]jsonrpc2.Code{}
	for _, m := range regexp.MustCompile(`(?m)^\| (-3\d{4}) \| (\w+) \|`).FindAllStringSubmatch(string(doc), -1) {
		n, _ := strconv.Atoi(m[1])
		codes[m[2]] = jsonrpc2.Code(n)
	}
	want := map[string]jsonrpc2.Code{
		"ParseError": jsonrpc2.ParseError, "InvalidRequest": jsonrpc2.InvalidRequest,
		"MethodNotFound": jsonrpc2.MethodNotFound, "InvalidParams": jsonrpc2.InvalidParams,
		"InternalError": jsonrpc2.InternalError, "ServerNotInitialized": jsonrpc2.ServerNotInitialized,
		"RequestCancelled": CodeRequestCancelled,
		"DialogBusy":       CodeDialogBusy, "TooManyTurns": CodeTooManyTurns, "MessageTooLong": CodeMessageTooLong,
		"UnknownChange": CodeUnknownChange, "UnknownDialog": CodeUnknownDialog, "Conflict": CodeConflict,
		"Unsupported": CodeUnsupported, "UpstreamUnreachable": CodeUpstreamUnreachable, "UpstreamError": CodeUpstreamError,
		"InvalidState": CodeInvalidState, "StateUnusable": CodeStateUnusable,
	}
	if diff := cmp.Diff(want, codes); diff != "" {
		t.Errorf("error codes (-code +docs/protocol.md):\n%s", diff)
	}
}
