package editor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/smith-dev/smith/daemon"
)

// Options configure a Server.
type Options struct {
	// Resolve builds a connection's engine configuration at initialize,
	// from the workspace the editor named (rootUri, workspaceFolders) and
	// its initializationOptions. The caller applies its own layers there:
	// serve's flags win over init, which wins over config files and
	// defaults. nil means DefaultResolve.
	Resolve func(ctx context.Context, workspace string, init InitOptions) (daemon.Config, error)
	// Logger receives the server's log; it must not write to the protocol
	// stream. nil discards logs.
	Logger *slog.Logger
	// Version is reported in the initialize result's serverInfo.
	Version string
	// OnEngine, when set, is called when the Server starts the engine of a
	// workspace, and the function it returns when that engine closes (its
	// last connection left, or Close). smith serve opens the engine's
	// terminal attach socket there (docs/protocol.md). It must not block
	// and must not call the Server.
	OnEngine func(eng *daemon.Engine) (stop func())
	// Locked, when set, is called when initialize cannot start the engine
	// of cfg's workspace because another process holds its state folder
	// (err wraps daemon.ErrStateLocked); initialize fails with the error it
	// returns. smith serve says there who the holder can be and what to
	// do. nil: err as it is.
	Locked func(cfg daemon.Config, err error) error
	// Engine, when set, is a running engine the Server shares with its
	// connections instead of starting engines itself: connections on its
	// workspace use it, whatever their settings; any other workspace is
	// refused at initialize. The Server never closes it (OnEngine is not
	// called for it); its owner does, after the Server's last connection
	// has ended. An interactive smith chat that holds a workspace's engine
	// serves its attach socket this way, so that editors and other
	// terminals join it.
	Engine *daemon.Engine
	// QueueLimit bounds the bytes queued toward one editor; 0 means 256 KiB.
	// When it is reached, notifications wait and no further request is
	// read until the editor has read some (docs/protocol.md,
	// "Backpressure").
	QueueLimit int
	// WriteStall is how long a full queue may wait for an editor that
	// reads nothing before its connection is closed; 0 means a minute.
	WriteStall time.Duration
}

// ErrExitWithoutShutdown is returned by ServeConn when the editor sent exit
// without shutdown first; LSP asks the server to exit with status 1 then.
var ErrExitWithoutShutdown = errors.New("editor sent exit without shutdown")

// Server serves editor connections. One Server holds one engine per
// workspace, shared by all its connections. It is safe for concurrent use;
// Close it after the last ServeConn or Serve has returned.
type Server struct {
	opts    Options
	log     *slog.Logger
	engines *engines
}

// NewServer returns a Server.
func NewServer(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Resolve == nil {
		opts.Resolve = DefaultResolve
	}
	engs := newEngines(log)
	engs.onStart = opts.OnEngine
	if opts.Engine != nil {
		engs.lend(opts.Engine)
	}
	return &Server{opts: opts, log: log, engines: engs}
}

// Close stops every engine still running.
func (s *Server) Close() error {
	s.engines.closeAll()
	return nil
}

// ServeConn speaks the protocol on rwc (LSP framing) until the editor
// sends exit, closes its end, or ctx is cancelled, and closes rwc. It
// returns nil for a clean end, ErrExitWithoutShutdown for an exit that was
// not preceded by shutdown, and the connection's error otherwise.
func (s *Server) ServeConn(ctx context.Context, rwc io.ReadWriteCloser) error {
	c := newClient(s, rwc)
	defer c.detach()
	select {
	case <-c.conn.Done():
	case <-c.exited:
	case <-ctx.Done():
	}
	if err := c.teardown(); err != nil {
		s.log.Debug("closing the editor connection", "err", err)
	}
	if c.exitedWithoutShutdown() {
		return ErrExitWithoutShutdown
	}
	if err := c.conn.Err(); err != nil {
		return fmt.Errorf("editor connection: %w", err)
	}
	return nil
}

// teardown refuses new requests, cancels the running ones (turns end
// "cancelled" and give their dialog back), waits for their handlers, and
// closes the connection: jsonrpc2's Close would wait for them anyway, but
// without the cancellation a running turn would hold it up to the end.
func (c *client) teardown() error {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.cancel()
	c.out.hurry() // handlers blocked on a full queue give up sooner
	c.inflight.Wait()
	err := c.conn.Close()
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

// Serve accepts connections on ln and serves each with ServeConn until ctx
// is cancelled or ln fails. It closes ln and waits for the connections it
// started. jsonrpc2.Serve is not used because it builds each Conn without
// options, and smith needs its preempter ($/cancelRequest) and its
// malformed-frame guard on every connection.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.log.Info("editor connected", "remote", nc.RemoteAddr().String())
			if err := s.ServeConn(ctx, nc); err != nil {
				s.log.Warn("editor connection ended", "err", err)
			}
		}()
	}
}

// newClient starts a connection. The preempter handles $/cancelRequest
// inline, ahead of queued work; everything else goes to the dispatcher.
func newClient(s *Server, rwc io.ReadWriteCloser) *client {
	connCtx, cancel := context.WithCancel(context.Background())
	c := &client{
		srv:      s,
		log:      s.log,
		docs:     newDocuments(),
		enc:      EncodingUTF16,
		exited:   make(chan struct{}),
		cancel:   cancel,
		progress: map[string]context.CancelFunc{},
		calls:    map[jsonrpc2.ID]context.CancelFunc{},
		review:   newReview(),
	}
	c.reval = newRevalidator(c.revalidate)
	// Frames go out through a bounded queue written by a goroutine of its
	// own (outbox: batching, backpressure, disconnect of a stalled editor).
	c.out = newOutbox(rwc, rwc.Close, s.opts.QueueLimit, s.opts.WriteStall, s.log)
	stream := newTolerantStream(readWriteCloser{Reader: rwc, Writer: c.out, Closer: c.out}, s.log)
	stream.room = c.out.waitRoom
	c.conn = jsonrpc2.NewConn(stream, jsonrpc2.WithCodec(codec{}),
		jsonrpc2.WithPreempter(preempter{cancelRequest: c.cancelCall, cancelProgress: c.cancelProgress}))
	c.routes = c.routeTable()
	c.conn.Go(connCtx, c.dispatch)
	return c
}

// client is one editor connection. It implements daemon.Editor for the
// engine: Document reads its buffer mirror, ApplyEdit sends
// workspace/applyEdit, Notify sends smith/* notifications.
type client struct {
	srv    *Server
	log    *slog.Logger
	conn   jsonrpc2.Conn
	routes map[string]route
	docs   *documents
	reval  *revalidator       // re-validates changes of edited buffers
	out    *outbox            // the queue of frames toward the editor
	cancel context.CancelFunc // cancels every handler of the connection

	// inflight counts running handlers, so that teardown can wait for
	// their responses before Close drops them.
	inflight sync.WaitGroup

	mu           sync.Mutex
	state        lifecycle
	enc          PositionEncoding
	caps         clientCaps
	workspace    string
	engine       *daemon.Engine
	peer         *daemon.Peer
	release      func()
	progress     map[string]context.CancelFunc      // workDone token → cancel of its request
	calls        map[jsonrpc2.ID]context.CancelFunc // running calls, for $/cancelRequest
	nextToken    atomic.Int64
	exited       chan struct{}
	exitNoShutdn bool
	closing      bool // teardown started: no new handlers

	// smithAware: the editor called a smith/* method itself (behindwrite.go).
	smithAware atomic.Bool
	review     *review // diagnostics and code actions (diagnostics.go)
}

// lifecycle is the LSP state of a connection.
type lifecycle int

const (
	stateNew lifecycle = iota
	stateInitializing
	stateRunning
	stateShutDown
)

func (l lifecycle) String() string {
	return [...]string{"new", "initializing", "running", "shut down"}[l]
}

// clientCaps are the client capabilities smith acts on.
type clientCaps struct {
	applyEdit        bool
	documentChanges  bool
	resourceOps      map[string]bool
	workDoneProgress bool
	showDocument     bool
	diagnostics      bool // textDocument.publishDiagnostics
}

// session returns the engine and peer, or an error before initialize.
func (c *client) session() (*daemon.Engine, *daemon.Peer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.engine == nil {
		return nil, nil, errNotInitialized
	}
	return c.engine, c.peer, nil
}

func (c *client) encoding() PositionEncoding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enc
}

// detach gives the engine back; the peer's turns are cancelled.
func (c *client) detach() {
	c.mu.Lock()
	eng, peer, release := c.engine, c.peer, c.release
	c.engine, c.peer, c.release = nil, nil, nil
	c.mu.Unlock()
	c.reval.stop()
	if eng != nil {
		eng.Detach(peer)
		release()
	}
}

func (c *client) exitedWithoutShutdown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitNoShutdn
}
