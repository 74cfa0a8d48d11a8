package editor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.lsp.dev/jsonrpc2"
)

// Opening is the first message of an editor connection, read before the
// connection is served, so that the caller can choose who serves it: a
// Server in this process (Replay), or another smith serve that already
// holds the workspace's engine (Relay).
//
// Why the choice is made before the Server sees the connection rather than
// inside its initialize handler: by then jsonrpc2 owns the stream, has read
// ahead into its buffer and decoded the request, and there is no clean way
// to take the raw connection back from it. Reading one frame here, with the
// same framer, and keeping every byte it read is exact and small.
type Opening struct {
	// Initialize holds the params of the first message when it is an
	// initialize request (nil otherwise: Relay is then not possible).
	Initialize *InitializeParams
	initID     jsonrpc2.ID // the initialize request's id

	rwc    io.ReadWriteCloser
	seen   []byte      // every byte read from rwc to find the first frame
	stream frameStream // the framer that read them, positioned after the first frame
	first  []byte      // the first frame's body; nil when none could be read
	// ended is the error that ended rwc's input while the first frame was
	// read (io.EOF: the editor closed it), nil when it did not end.
	ended error
}

// ReadOpening reads the first framed message of rwc. It never fails: a
// connection that ends or sends something malformed first is left for the
// Server to answer, by Replay. Cancelling ctx while it waits closes rwc.
func ReadOpening(ctx context.Context, rwc io.ReadWriteCloser) *Opening {
	t := &tap{r: rwc, seen: &bytes.Buffer{}}
	fs := headerFrames(readWriteCloser{Reader: t, Writer: rwc, Closer: rwc})
	stop := context.AfterFunc(ctx, func() { rwc.Close() })
	frame, _, err := fs.ReadFrame(ctx)
	stop()
	o := &Opening{rwc: rwc, seen: t.seen.Bytes(), stream: fs, ended: t.err}
	t.seen = nil // from here on the framer's reads are not kept
	if err != nil {
		return o
	}
	o.first = bytes.Clone(frame) // the framer reuses its buffer
	if msg, err := jsonrpc2.DecodeMessage(o.first); err == nil {
		if call, ok := msg.(*jsonrpc2.Call); ok && call.Method() == "initialize" {
			var p InitializeParams
			if (codec{}).Unmarshal(call.Params(), &p) == nil {
				o.Initialize, o.initID = &p, call.ID()
			}
		}
	}
	return o
}

// Replay returns the connection as it was before ReadOpening: its reads
// give the bytes ReadOpening consumed, exactly, then the rest. Serve it
// with Server.ServeConn. Use either Replay or Relay, once.
func (o *Opening) Replay() io.ReadWriteCloser {
	rest := io.Reader(o.rwc)
	if o.ended != nil {
		// The input ended already; do not read on. A terminal's Ctrl-D
		// is such an end, and a read after it would block for more.
		rest = endedReader{o.ended}
	}
	return readWriteCloser{Reader: io.MultiReader(bytes.NewReader(o.seen), rest), Writer: o.rwc, Closer: o.rwc}
}

// Refuse answers the editor's initialize with an error whose message is
// err's, preceded by a window/showMessage (type Error) saying the same, as
// Server's initialize does when the engine cannot start: VS Code shows the
// failed initialize and smith.nvim ends its wait on the showMessage, while
// what a server writes on stderr only reaches the editor's log. smith
// serve uses it when it cannot serve at all (a state folder it cannot
// use), instead of starting a Server. A first message that is not
// initialize gets no answer.
//
// Then it waits, until ctx ends, for the editor to let go: its exit
// notification, or the end of its input (what Neovim and VS Code do after
// a failed initialize). A shutdown is answered, other requests get err
// again. Exiting at once would race the editor: one that sees the process
// end before it has read the answer reports the exit code, not the
// reason. It closes the connection before it returns.
func (o *Opening) Refuse(ctx context.Context, err error) error {
	defer o.rwc.Close()
	if o.Initialize == nil {
		return nil
	}
	if werr := notifyShowMessage(ctx, o.stream, "smith could not start: "+err.Error()); werr != nil {
		return werr
	}
	refusal := jsonrpc2.NewError(jsonrpc2.InternalError, err.Error())
	if _, werr := o.stream.Write(ctx, jsonrpc2.NewResponse(o.initID, nil, refusal)); werr != nil {
		return werr
	}
	if o.ended != nil {
		return nil // the editor's input ended with its initialize
	}
	stop := context.AfterFunc(ctx, func() { o.rwc.Close() })
	defer stop()
	for {
		frame, _, rerr := o.stream.ReadFrame(ctx)
		if rerr != nil {
			return nil // the editor closed its end (or ctx ended)
		}
		msg, derr := jsonrpc2.DecodeMessage(frame)
		if derr != nil {
			continue
		}
		switch m := msg.(type) {
		case *jsonrpc2.Call:
			var res *jsonrpc2.Response
			if m.Method() == "shutdown" {
				res = jsonrpc2.NewResponse(m.ID(), jsonrpc2.RawMessage("null"), nil)
			} else {
				res = jsonrpc2.NewResponse(m.ID(), nil, refusal)
			}
			if _, werr := o.stream.Write(ctx, res); werr != nil {
				return nil
			}
		case *jsonrpc2.Notification:
			if m.Method() == "exit" {
				return nil
			}
		}
	}
}

// RelayOptions configure Opening.Relay.
type RelayOptions struct {
	// Logger receives the relay's log (never the protocol stream). nil
	// discards it.
	Logger *slog.Logger
	// Vanished is shown to the editor (window/showMessage, type Error)
	// when the holder ends the connection before the editor sent exit.
	Vanished string
}

// Relay serves the editor through holder, a connection to another smith
// serve (its serve.sock) that holds the workspace's engine: the first
// message (initialize) and every later one are passed on unchanged, in
// both directions, so the holder sees one more editor and the editor sees
// the holder's answers, notifications and workspace/applyEdit requests.
//
// Messages are moved frame by frame with jsonrpc2's framer: the bodies are
// not touched, the header is rewritten in canonical form. Reading whole
// frames is what lets the relay notice shutdown and exit on their way (to
// tell the holder ending the session from the holder going away), and lets
// a malformed frame from the editor be answered here, as the Server would,
// instead of desynchronising the holder.
//
// Relay returns when the session is over: the editor sent exit (the holder
// then closes), the editor closed its end (the holder is told by a closed
// write side, and its goodbye is awaited), the holder went away (the editor
// is told with Vanished), or ctx was cancelled. It closes both connections
// and returns ErrExitWithoutShutdown after an exit that shutdown did not
// precede, nil otherwise.
func (o *Opening) Relay(ctx context.Context, holder io.ReadWriteCloser, opts RelayOptions) error {
	if o.Initialize == nil {
		return errors.New("editor: relay of a connection that did not open with initialize")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ed := &tolerantStream{frameStream: o.stream, log: log}
	up := headerFrames(holder)
	closeEditor := sync.OnceFunc(func() { o.rwc.Close() })
	closeHolder := sync.OnceFunc(func() { holder.Close() })
	defer closeEditor()
	defer closeHolder()
	stop := context.AfterFunc(ctx, func() { closeEditor(); closeHolder() })
	defer stop()

	var shutdown, exit, editorLeft atomic.Bool
	down := make(chan struct{})
	go func() {
		defer close(down)
		err := copyFrames(ctx, up, ed, nil)
		if !exit.Load() && !editorLeft.Load() && ctx.Err() == nil {
			log.Warn("the smith serve holding the engine went away", "err", err)
			if werr := notifyShowMessage(ctx, ed, opts.Vanished); werr != nil {
				log.Debug("cannot tell the editor", "err", werr)
			}
		}
		// Ends the read of the editor's side below.
		closeEditor()
	}()

	watch := func(frame []byte) {
		msg, err := jsonrpc2.DecodeMessage(frame)
		if err != nil {
			return
		}
		switch m := msg.(type) {
		case *jsonrpc2.Call:
			if m.Method() == "shutdown" {
				shutdown.Store(true)
			}
		case *jsonrpc2.Notification:
			if m.Method() == "exit" {
				exit.Store(true)
			}
		}
	}
	_, err := up.WriteFrame(ctx, o.first)
	if err == nil {
		err = copyFrames(ctx, ed, up, watch)
	}
	editorLeft.Store(!exit.Load())
	log.Debug("editor side of the relay ended", "err", err)
	// Let the holder finish with this editor (it closes when it reads
	// EOF) rather than cutting its last answers off.
	if cw, ok := holder.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() != nil {
			closeHolder()
		}
	} else {
		closeHolder()
	}
	<-down
	if exit.Load() && !shutdown.Load() {
		return ErrExitWithoutShutdown
	}
	return nil
}

// copyFrames moves frames from one stream to the other until either fails;
// see, when set, looks at each frame before it goes.
func copyFrames(ctx context.Context, from, to frameStream, see func([]byte)) error {
	for {
		frame, _, err := from.ReadFrame(ctx)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if see != nil {
			see(frame)
		}
		if _, err := to.WriteFrame(ctx, frame); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
}

// showMessageParams is LSP's ShowMessageParams.
type showMessageParams struct {
	Type    int    `json:"type"` // 1 Error, 2 Warning, 3 Info, 4 Log
	Message string `json:"message"`
}

func notifyShowMessage(ctx context.Context, s frameStream, text string) error {
	if text == "" {
		return nil
	}
	params, err := (codec{}).Marshal(showMessageParams{Type: 1, Message: text})
	if err != nil {
		return err
	}
	_, err = s.Write(ctx, jsonrpc2.NewNotification("window/showMessage", params))
	return err
}

// headerFrames frames rwc with LSP Content-Length headers, with raw-frame
// access (lspFrames: jsonrpc2's writer, smith's resynchronizing reader).
func headerFrames(rwc io.ReadWriteCloser) frameStream { return newLSPFrames(rwc) }

// tap keeps a copy of what its reader returns while seen is set, so that
// what a buffering framer read ahead can be given back.
type tap struct {
	r    io.Reader
	seen *bytes.Buffer
	err  error // the first read error while seen is kept
}

func (t *tap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if t.seen != nil {
		t.seen.Write(p[:n])
		if err != nil && t.err == nil {
			t.err = err
		}
	}
	return n, err
}

// endedReader is an input that has ended with err.
type endedReader struct{ err error }

func (r endedReader) Read([]byte) (int, error) { return 0, r.err }

type readWriteCloser struct {
	io.Reader
	io.Writer
	io.Closer
}

// SetWorkspace makes the initialize that Relay passes on name dir as
// initializationOptions.workspace, which the holder's initialize takes
// before rootUri. smith serve --workspace uses it: the flag overrides what
// the editor named, and the holder must open the workspace whose engine
// was joined, not the editor's root. The rest of the message is kept
// (members may be reordered).
func (o *Opening) SetWorkspace(dir string) error {
	if o.Initialize == nil {
		return errors.New("editor: SetWorkspace on a connection that did not open with initialize")
	}
	// Bytes that are not UTF-8 travel as they came, as on the holder's
	// connection (codec).
	raw := jsontext.AllowInvalidUTF8(true)
	var msg, params, init map[string]jsontext.Value
	if err := json.Unmarshal(o.first, &msg, raw); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if err := json.Unmarshal(orNull(msg["params"]), &params, raw); err != nil {
		return fmt.Errorf("initialize params: %w", err)
	}
	if params == nil {
		params = map[string]jsontext.Value{}
	}
	if err := json.Unmarshal(orNull(params["initializationOptions"]), &init, raw); err != nil {
		return fmt.Errorf("initializationOptions: %w", err)
	}
	if init == nil {
		init = map[string]jsontext.Value{}
	}
	var err error
	if init["workspace"], err = json.Marshal(dir); err != nil {
		return err
	}
	if params["initializationOptions"], err = json.Marshal(init, raw); err != nil {
		return err
	}
	if msg["params"], err = json.Marshal(params, raw); err != nil {
		return err
	}
	first, err := json.Marshal(msg, raw)
	if err != nil {
		return err
	}
	o.first = first
	if o.Initialize.InitializationOptions == nil {
		o.Initialize.InitializationOptions = &InitOptions{}
	}
	o.Initialize.InitializationOptions.Workspace = dir
	return nil
}

// orNull is v, or JSON null when v is absent.
func orNull(v jsontext.Value) jsontext.Value {
	if len(v) == 0 {
		return jsontext.Value("null")
	}
	return v
}
