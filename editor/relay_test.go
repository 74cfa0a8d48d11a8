package editor

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/smith-dev/smith/daemon"
)

// openingOf runs ReadOpening on input sent through a real pipe, in one
// write (so that the framer can read ahead past the first frame).
func openingOf(t testing.TB, input []byte) (*Opening, io.ReadWriteCloser) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write(input)
		w.Close()
	}()
	rwc := readWriteCloser{Reader: r, Writer: io.Discard, Closer: r}
	return ReadOpening(context.Background(), rwc), rwc
}

// TestOpeningReplaysExactly: whatever the first bytes are, Replay gives
// every byte back in order, and only a well-formed initialize is offered
// for relaying.
func TestOpeningReplaysExactly(t *testing.T) {
	frame := func(headers, body string) string {
		return "Content-Length: " + itoa(len(body)) + "\r\n" + headers + "\r\n" + body
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"rootUri":"file:///w","capabilities":{}}}`
	for _, tc := range []struct {
		name    string
		input   string
		initial bool
	}{
		{"initialize then more", frame("Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n", init) + frame("", `{"jsonrpc":"2.0","method":"initialized","params":{}}`), true},
		{"initialize alone", frame("", init), true},
		{"another method first", frame("", `{"jsonrpc":"2.0","id":1,"method":"smith/status"}`), false},
		{"initialize as a notification", frame("", `{"jsonrpc":"2.0","method":"initialize","params":{}}`), false},
		{"body not JSON", frame("", `{"jsonrpc":`) + frame("", init), false},
		{"malformed header", "Content-Length: x\r\n\r\n" + frame("", init), false},
		{"truncated", "Content-Length: 500\r\n\r\n{", false},
		{"nothing", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, _ := openingOf(t, []byte(tc.input))
			if got := op.Initialize != nil; got != tc.initial {
				t.Errorf("Initialize set: %v, want %v", got, tc.initial)
			}
			got, err := io.ReadAll(op.Replay())
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.input {
				t.Errorf("replayed %q\nwant     %q", got, tc.input)
			}
		})
	}
}

// FuzzOpeningReplay: Replay never loses, adds or reorders a byte.
func FuzzOpeningReplay(f *testing.F) {
	f.Add([]byte("Content-Length: 2\r\n\r\n{}Content-Length: 2\r\n\r\n[]"))
	f.Add([]byte("Content-Length: 10\r\n\r\n{"))
	f.Add([]byte("\r\n\r\n"))
	f.Fuzz(func(t *testing.T, input []byte) {
		op, _ := openingOf(t, input)
		got, err := io.ReadAll(op.Replay())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(input) {
			t.Fatalf("replayed %q, want %q", got, input)
		}
	})
}

// TestRelayToServer: a relayed editor is served by the holder's Server; a
// malformed frame is answered on the relay's side without ending the
// session, and exit without shutdown is reported as such.
func TestRelayToServer(t *testing.T) {
	ws := t.TempDir()
	srv := NewServer(Options{Resolve: func(_ context.Context, w string, init InitOptions) (daemon.Config, error) {
		cfg, err := DefaultResolve(context.Background(), w, init)
		cfg.StateDir = t.TempDir()
		cfg.NoWatch = true
		return cfg, err
	}})
	defer srv.Close()
	holderSide, relaySide := net.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.ServeConn(context.Background(), holderSide) }()

	// The editor writes to inW and reads from outR; the relay has the
	// other ends, as a stdio serve has stdin and stdout.
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	editorEnd := readWriteCloser{Reader: inR, Writer: outW, Closer: closers{inR, outW}}
	frame := func(body string) []byte { return []byte("Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body) }
	go inW.Write(frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"rootUri":"` + "file://" + ws + `","capabilities":{}}}`))
	op := ReadOpening(context.Background(), editorEnd)
	if op.Initialize == nil {
		t.Fatal("the opening is not an initialize")
	}
	relayed := make(chan error, 1)
	go func() { relayed <- op.Relay(context.Background(), relaySide, RelayOptions{Vanished: "gone"}) }()

	ed := headerFrames(readWriteCloser{Reader: outR, Writer: inW, Closer: closers{outR, inW}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	read := func() string {
		t.Helper()
		b, _, err := ed.ReadFrame(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); !strings.Contains(got, `"id":1`) || !strings.Contains(got, `"serverInfo"`) {
		t.Fatalf("initialize through the relay: %s", got)
	}
	inW.Write([]byte("Content-Length: 3\r\n\r\n{x}"))
	if got := read(); !strings.Contains(got, "-32700") {
		t.Fatalf("a malformed frame through the relay: %s", got)
	}
	inW.Write(frame(`{"jsonrpc":"2.0","id":2,"method":"smith/status"}`))
	if got := read(); !strings.Contains(got, `"id":2`) || !strings.Contains(got, `"result"`) {
		t.Fatalf("smith/status after a malformed frame: %s", got)
	}
	inW.Write(frame(`{"jsonrpc":"2.0","method":"exit"}`))
	if err := <-relayed; !errors.Is(err, ErrExitWithoutShutdown) {
		t.Errorf("Relay after exit without shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, ErrExitWithoutShutdown) {
		t.Errorf("the holder after exit without shutdown: %v", err)
	}
	if b, _, err := ed.ReadFrame(ctx); err == nil {
		t.Errorf("the editor was sent %s after its exit", b)
	}
}

type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
