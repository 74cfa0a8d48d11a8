package editor_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.lsp.dev/jsonrpc2"

	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/editor/editortest"
)

// startInProcess serves one connection of a fresh Server over a pipe and
// returns the fake editor and a channel with ServeConn's result.
func startInProcess(t *testing.T) (*editortest.Editor, <-chan error) {
	t.Helper()
	srv := editor.NewServer(editor.Options{Version: "test"})
	t.Cleanup(func() { srv.Close() })
	serverEnd, clientEnd := net.Pipe()
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { done <- srv.ServeConn(ctx, serverEnd) }()
	return editortest.New(t, clientEnd), done
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// initOpts point the engine at a state dir of the test and an upstream
// that refuses connections (these tests never chat).
func initOpts(t *testing.T) map[string]any {
	return map[string]any{"upstream": "http://127.0.0.1:1", "stateDir": t.TempDir()}
}

func rpcCode(t *testing.T, err error) jsonrpc2.Code {
	t.Helper()
	var e *jsonrpc2.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	return e.Code
}

// rpcMessage is the message of a JSON-RPC error: what the editor shows.
func rpcMessage(t *testing.T, err error) string {
	t.Helper()
	var e *jsonrpc2.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	return e.Message
}

func TestRequestsBeforeInitialize(t *testing.T) {
	ed, _ := startInProcess(t)
	ctx := testCtx(t)
	err := ed.Call(ctx, editor.MethodStatus, nil, nil)
	if got := rpcCode(t, err); got != jsonrpc2.ServerNotInitialized {
		t.Fatalf("code = %d, want ServerNotInitialized (%d): %v", got, jsonrpc2.ServerNotInitialized, err)
	}
	// The connection is still usable.
	if _, err := ed.Initialize(ctx, t.TempDir(), initOpts(t)); err != nil {
		t.Fatalf("initialize after an early request: %v", err)
	}
	_, err = ed.Initialize(ctx, t.TempDir(), initOpts(t))
	if got := rpcCode(t, err); got != jsonrpc2.InvalidRequest {
		t.Errorf("second initialize: code %d, want InvalidRequest", got)
	}
}

func TestInitializeResult(t *testing.T) {
	ctx := testCtx(t)
	for _, tt := range []struct {
		offer []string
		want  string
	}{{nil, "utf-16"}, {[]string{"utf-32", "utf-8", "utf-16"}, "utf-8"}} {
		ed, _ := startInProcess(t)
		raw, err := ed.Initialize(ctx, t.TempDir(), initOpts(t), tt.offer...)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Capabilities struct {
				PositionEncoding       string `json:"positionEncoding"`
				ExecuteCommandProvider struct {
					Commands []string `json:"commands"`
				} `json:"executeCommandProvider"`
				TextDocumentSync struct {
					Change int `json:"change"`
				} `json:"textDocumentSync"`
			} `json:"capabilities"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		if res.Capabilities.PositionEncoding != tt.want {
			t.Errorf("offered %v: positionEncoding %q, want %q", tt.offer, res.Capabilities.PositionEncoding, tt.want)
		}
		if diff := cmp.Diff(editor.Commands(), res.Capabilities.ExecuteCommandProvider.Commands); diff != "" {
			t.Errorf("commands (-want +got):\n%s", diff)
		}
		if res.Capabilities.TextDocumentSync.Change != editor.SyncIncremental {
			t.Errorf("textDocumentSync.change = %d, want incremental", res.Capabilities.TextDocumentSync.Change)
		}
	}
}

func TestMalformedInputKeepsTheConnection(t *testing.T) {
	ed, _ := startInProcess(t)
	ctx := testCtx(t)
	if _, err := ed.Initialize(ctx, t.TempDir(), initOpts(t)); err != nil {
		t.Fatal(err)
	}
	frame := func(body string) []byte {
		return []byte("Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body)
	}
	tests := []struct {
		name  string
		input []byte
		code  jsonrpc2.Code
		id    string // the id of the error response, as JSON
	}{
		{"body is not JSON", frame(`{"jsonrpc":"2.0","id":1,"method":`), jsonrpc2.ParseError, "null"},
		{"not JSON-RPC 2.0", frame(`{"jsonrpc":"1.0","id":7,"method":"smith/status"}`), jsonrpc2.InvalidRequest, "7"},
		{"batch that is not JSON", frame(`[{"jsonrpc":"2.0"`), jsonrpc2.ParseError, "null"},
		{"bad Content-Length", []byte("Content-Length: many\r\n\r\n"), jsonrpc2.ParseError, "null"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ed.WriteRaw(tt.input); err != nil {
				t.Fatal(err)
			}
			raw, err := ed.WaitRawError(ctx, i+1)
			if err != nil {
				t.Fatal(err)
			}
			var resp struct {
				ID    json.RawMessage `json:"id"`
				Error jsonrpc2.Error  `json:"error"`
			}
			if err := json.Unmarshal(raw, &resp); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			if resp.Error.Code != tt.code || string(resp.ID) != tt.id {
				t.Errorf("response %s: want code %d and id %s", raw, tt.code, tt.id)
			}
			// Still alive: a real request is answered.
			var st map[string]any
			if err := ed.Call(ctx, editor.MethodStatus, nil, &st); err != nil {
				t.Fatalf("after %s: smith/status: %v", tt.name, err)
			}
		})
	}
}

func TestUnknownMethods(t *testing.T) {
	ed, _ := startInProcess(t)
	ctx := testCtx(t)
	if _, err := ed.Initialize(ctx, t.TempDir(), initOpts(t)); err != nil {
		t.Fatal(err)
	}
	err := ed.Call(ctx, "smith/nope", map[string]any{}, nil)
	if got := rpcCode(t, err); got != jsonrpc2.MethodNotFound {
		t.Errorf("unknown request: code %d, want MethodNotFound", got)
	}
	if err := ed.Notify(ctx, "smith/whatever", map[string]any{"x": 1}); err != nil {
		t.Fatal(err)
	}
	// A notification whose handler fails (didChange of a document never
	// opened) must not end the connection either.
	if err := ed.Notify(ctx, editor.MethodDidChange, map[string]any{
		"textDocument": map[string]any{"uri": "file:///nowhere.go", "version": 2}, "contentChanges": []any{map[string]any{"text": "x"}},
	}); err != nil {
		t.Fatal(err)
	}
	err = ed.Call(ctx, editor.MethodExecuteCommand, map[string]any{"command": "smith.nope"}, nil)
	if got := rpcCode(t, err); got != jsonrpc2.InvalidParams {
		t.Errorf("unknown command: code %d, want InvalidParams", got)
	}
	err = ed.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": 5}, nil)
	if got := rpcCode(t, err); got != jsonrpc2.InvalidParams {
		t.Errorf("mistyped params: code %d, want InvalidParams", got)
	}
	err = ed.Call(ctx, editor.MethodChangeApply, map[string]any{"changeId": "c-none"}, nil)
	if got := rpcCode(t, err); got != editor.CodeUnknownChange {
		t.Errorf("unknown change: code %d, want %d (%v)", got, editor.CodeUnknownChange, err)
	}
	var st map[string]any
	if err := ed.Call(ctx, editor.MethodStatus, nil, &st); err != nil {
		t.Fatalf("connection died: %v", err)
	}
}

func TestExecuteCommandRunsTheMethod(t *testing.T) {
	ed, _ := startInProcess(t)
	ctx := testCtx(t)
	ws := t.TempDir()
	if _, err := ed.Initialize(ctx, ws, initOpts(t)); err != nil {
		t.Fatal(err)
	}
	var direct, viaCommand []map[string]any
	if err := ed.Call(ctx, editor.MethodChanges, map[string]any{}, &direct); err != nil {
		t.Fatal(err)
	}
	if err := ed.Call(ctx, editor.MethodExecuteCommand, map[string]any{"command": "smith.changes", "arguments": []any{map[string]any{}}}, &viaCommand); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(direct, viaCommand); diff != "" {
		t.Errorf("smith.changes differs from smith/changes (-direct +command):\n%s", diff)
	}
	var st struct {
		Workspace string `json:"workspace"`
		Reachable bool   `json:"reachable"`
	}
	if err := ed.Call(ctx, editor.MethodExecuteCommand, map[string]any{"command": "smith.status"}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Workspace != ws || st.Reachable {
		t.Errorf("smith.status returned %+v, want workspace %s, unreachable", st, ws)
	}
}

func TestShutdownAndExit(t *testing.T) {
	ctx := testCtx(t)
	t.Run("shutdown then exit", func(t *testing.T) {
		ed, done := startInProcess(t)
		if _, err := ed.Initialize(ctx, t.TempDir(), initOpts(t)); err != nil {
			t.Fatal(err)
		}
		if err := ed.Call(ctx, editor.MethodShutdown, nil, nil); err != nil {
			t.Fatal(err)
		}
		err := ed.Call(ctx, editor.MethodStatus, nil, nil)
		if got := rpcCode(t, err); got != jsonrpc2.InvalidRequest {
			t.Errorf("request after shutdown: code %d, want InvalidRequest", got)
		}
		if err := ed.Notify(ctx, editor.MethodExit, nil); err != nil {
			t.Fatal(err)
		}
		if err := waitDone(t, done); err != nil {
			t.Errorf("ServeConn after shutdown+exit = %v, want nil", err)
		}
	})
	t.Run("exit without shutdown", func(t *testing.T) {
		ed, done := startInProcess(t)
		if _, err := ed.Initialize(ctx, t.TempDir(), initOpts(t)); err != nil {
			t.Fatal(err)
		}
		if err := ed.Notify(ctx, editor.MethodExit, nil); err != nil {
			t.Fatal(err)
		}
		if err := waitDone(t, done); !errors.Is(err, editor.ErrExitWithoutShutdown) {
			t.Errorf("ServeConn = %v, want ErrExitWithoutShutdown", err)
		}
	})
	t.Run("editor closes the stream", func(t *testing.T) {
		ed, done := startInProcess(t)
		if _, err := ed.Initialize(ctx, t.TempDir(), initOpts(t)); err != nil {
			t.Fatal(err)
		}
		ed.CloseStdin()
		if err := waitDone(t, done); err != nil {
			t.Errorf("ServeConn after EOF = %v, want nil", err)
		}
	})
}

func waitDone(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("ServeConn did not return")
		return nil
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func asRPC(t *testing.T, err error) *jsonrpc2.Error {
	t.Helper()
	var e *jsonrpc2.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	return e
}

func TestInitializeWithoutWorkspace(t *testing.T) {
	ed, _ := startInProcess(t)
	ctx := testCtx(t)
	err := ed.Call(ctx, editor.MethodInitialize, map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, nil)
	if got := rpcCode(t, err); got != jsonrpc2.InvalidParams || !strings.Contains(err.Error(), "workspace") {
		t.Errorf("initialize without a workspace: %v", err)
	}
	// The editor may try again with one.
	if _, err := ed.Initialize(ctx, t.TempDir(), initOpts(t)); err != nil {
		t.Errorf("second initialize: %v", err)
	}
}
