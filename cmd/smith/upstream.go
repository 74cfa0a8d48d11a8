package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// defaultUpstreamAddr is AgentSmithy's default port; when it is taken,
// smith upstream falls back to a free port (and says so on stderr).
const defaultUpstreamAddr = "127.0.0.1:8765"

type upstreamFlags struct {
	addr       string
	workspace  string
	protocol   string
	dialect    string
	ping       time.Duration
	delay      time.Duration
	replay     string
	chunkSizes string
	headers    []string
	faults     []string
}

func newUpstreamCmd(s *IOStreams) *cobra.Command {
	f := &upstreamFlags{}
	cmd := &cobra.Command{
		Use:   "upstream",
		Short: "Run the embedded chat server (AgentSmithy-compatible) on loopback",
		Example: `  smith upstream --workspace .                 # AgentSmithy v2 on 127.0.0.1:8765
  smith upstream --addr 127.0.0.1:0 --protocol v0   # legacy server on a free port
  smith upstream --dialect lifecycle --delay 30ms
  smith upstream --replay turn.sse --chunk-sizes 1,7,64 --header 'X-Test: 1'
  smith upstream --fault stall=3 --fault no-done
  curl -N -H 'Content-Type: application/json' -H 'X-Smith-Fault: cut-mid-event' -d '{"messages":[{"role":"user","content":"hi"}]}' http://127.0.0.1:8765/api/chat`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("protocol") && f.dialect != string(protocol.DialectAgentSmithy) {
				return usageErrorf("--protocol applies to --dialect agentsmithy only")
			}
			return runUpstream(cmd.Context(), s, f, cmd.Flags().Changed("addr"))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", defaultUpstreamAddr, "listen address; port 0 picks a free port (the default falls back to a free port when 8765 is taken)")
	fl.StringVarP(&f.workspace, "workspace", "C", ".", "project directory the demo agent works on")
	fl.StringVar(&f.protocol, "protocol", "v2", "AgentSmithy protocol version: v2, v1 or v0")
	fl.StringVar(&f.dialect, "dialect", "agentsmithy", "payload dialect: agentsmithy, rag, textbook, lifecycle or oracle")
	fl.DurationVar(&f.ping, "ping", 0, "keep-alive ping interval (0 = the server's default: 15s, lifecycle 30s; negative disables)")
	fl.DurationVar(&f.delay, "delay", 20*time.Millisecond, "pause before each streamed text delta")
	fl.StringVar(&f.replay, "replay", "", "serve this recorded SSE body byte for byte for every chat request")
	fl.StringVar(&f.chunkSizes, "chunk-sizes", "", "write sizes of the replay, cycled, e.g. 1,7,64 (flushed after each)")
	fl.StringArrayVar(&f.headers, "header", nil, "response header of the replay, 'Key: Value' (repeatable)")
	fl.StringArrayVar(&f.faults, "fault", nil, "inject a fault into every chat request: NAME[=ARG] (repeatable; see above)")
	// The long help lists every demo phrase and fault; build it only when help
	// is shown, not on every start of every smith command.
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		c.Long = upstreamLong()
		c.Parent().HelpFunc()(c, args)
	})
	return cmd
}

func upstreamLong() string {
	var b strings.Builder
	b.WriteString(`Run smith's embedded upstream: an AgentSmithy-compatible chat server with a
deterministic demo agent that works on a real workspace. It binds 127.0.0.1 only
(unless --addr says otherwise), prints its base URL as the first line on stdout,
logs one line per request to stderr, writes .agentsmithy/status.json in the
workspace (so 'smith chat' finds it), and stops cleanly on SIGINT/SIGTERM.

With --protocol v2 (default) and v1 the server edits the workspace itself and
sends file_edit events; approve, reset and restore work on real checkpoints
(.agentsmithy/checkpoints). With --protocol v0 and every other --dialect the
server writes nothing: changes travel as diff events or tool results and the
client applies them. Only AgentSmithy (any --protocol) serves the REST API of
dialogs, history and sessions; with another --dialect those paths are 404, as
on the real servers of those contracts, and smith keeps its own dialogs.

The demo agent understands (anything else gets a helpful answer quoting what a
plain text search of the workspace found):
`)
	for _, p := range upstream.Phrases() {
		fmt.Fprintf(&b, "\n  %s\n      e.g. %s\n      %s\n", p.Pattern, p.Example, p.Effect)
	}
	b.WriteString("\nFaults (--fault NAME[=ARG] for every request, or per request with the header\n" + upstream.FaultHeader + ": NAME[=ARG],...):\n")
	for _, f := range upstream.FaultNames() {
		fmt.Fprintf(&b, "\n  %s\n      %s\n", f.Name, f.Help)
	}
	return b.String()
}

func runUpstream(ctx context.Context, s *IOStreams, f *upstreamFlags, addrSet bool) error {
	if _, _, err := net.SplitHostPort(f.addr); err != nil {
		return usageErrorf("--addr %s: give HOST:PORT, such as 127.0.0.1:8765 (127.0.0.1:0 picks a free port)", f.addr)
	}
	if f.delay < 0 {
		return usageErrorf("--delay %s: give a pause of 0 or more, such as 20ms", f.delay)
	}
	opts, err := f.options(s)
	if err != nil {
		return err
	}
	srv, err := upstream.New(opts)
	if err != nil {
		return usageErrorf("%v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	base, err := srv.Start(ctx, f.addr)
	if err != nil && !addrSet && errors.Is(err, syscall.EADDRINUSE) {
		fmt.Fprintf(s.Err, "smith upstream: %s is taken, using a free port\n", f.addr)
		base, err = srv.Start(ctx, "127.0.0.1:0")
	}
	if why, ok := listenCause(err); ok {
		err = fmt.Errorf("cannot listen on %s: %v; give --addr a free local address (127.0.0.1:0 picks a free port)", f.addr, why)
	}
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	fmt.Fprintln(s.Out, base)
	if host, _, _ := net.SplitHostPort(f.addr); host != "127.0.0.1" && host != "localhost" && host != "::1" {
		fmt.Fprintf(s.Err, "smith upstream: warning: listening on %s, beyond loopback; the API has no authentication\n", f.addr)
	}
	<-ctx.Done()
	if err := srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("stop: %w", err)}
	}
	return nil
}

func (f *upstreamFlags) options(s *IOStreams) (upstream.Options, error) {
	if st, err := os.Stat(f.workspace); err != nil && !errors.Is(err, os.ErrNotExist) {
		return upstream.Options{}, usageErrorf("--workspace %s: %v", f.workspace, err)
	} else if err != nil {
		return upstream.Options{}, usageErrorf("--workspace %s: no such directory (the demo agent works on an existing project folder)", f.workspace)
	} else if !st.IsDir() {
		return upstream.Options{}, usageErrorf("--workspace %s is a file, not a directory", f.workspace)
	}
	opts := upstream.Options{
		Workspace:    f.workspace,
		Protocol:     f.protocol,
		Dialect:      protocol.Dialect(f.dialect),
		PingInterval: f.ping,
		DeltaDelay:   f.delay,
		Logger:       slog.New(slog.NewTextHandler(s.Err, nil)),
	}
	for _, spec := range f.faults {
		fs, err := upstream.ParseFaults(spec)
		if err != nil {
			return opts, usageErrorf("--fault: %v", err)
		}
		opts.Faults = append(opts.Faults, fs...)
	}
	if f.replay != "" {
		body, err := os.ReadFile(f.replay)
		if err != nil {
			return opts, usageErrorf("cannot read --replay %s: %v (give a recorded SSE response body, as smith replay takes)", f.replay, pathErrText(err))
		}
		opts.Replay = body
	} else if f.chunkSizes != "" || len(f.headers) > 0 {
		return opts, usageErrorf("--chunk-sizes and --header need --replay FILE")
	}
	for _, part := range strings.Split(f.chunkSizes, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n <= 0 {
			return opts, usageErrorf("--chunk-sizes: %q is not a positive number", part)
		}
		opts.ChunkSizes = append(opts.ChunkSizes, n)
	}
	for _, h := range f.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return opts, usageErrorf("--header %q: use 'Key: Value'", h)
		}
		if opts.ReplayHeader == nil {
			opts.ReplayHeader = http.Header{}
		}
		opts.ReplayHeader.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return opts, nil
}
