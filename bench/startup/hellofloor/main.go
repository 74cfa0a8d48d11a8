// Command hellofloor is bench/startup.sh's third floor: the hello world of
// bench/startup/hello linked with real uses of the libraries smith is
// required to build on (cobra, go-sse over net/http with TLS, jsonrpc2,
// go-diff, fsnotify, a TOML decoder, log/slog), called only behind a
// condition that never holds. It pays their package initialization and the
// start-up of a binary that contains what they need, and runs none of it:
// no program that does smith's job with these libraries starts faster.
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"

	"github.com/BurntSushi/toml"
	"github.com/fsnotify/fsnotify"
	"github.com/sourcegraph/go-diff/diff"
	"github.com/spf13/cobra"
	"github.com/tmaxmax/go-sse"
	"go.lsp.dev/jsonrpc2"
)

func main() {
	if len(os.Args) > 1<<20 {
		useAll()
	}
	os.Stdout.WriteString("hi\n")
}

// useAll calls each library the way smith does, so that the linker keeps
// what those calls reach.
func useAll() {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cmd := &cobra.Command{Use: "floor", RunE: func(*cobra.Command, []string) error { return nil }}
	cmd.AddCommand(&cobra.Command{Use: "sub", Short: "a subcommand"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		log.Error("cobra", "err", err)
	}
	var conf map[string]any
	if _, err := toml.DecodeFile(os.Args[1], &conf); err != nil {
		log.Error("toml", "err", err)
	}
	if fds, err := diff.ParseMultiFileDiff([]byte(os.Args[2])); err == nil {
		log.Info("diff", "files", len(fds))
	}
	if w, err := fsnotify.NewWatcher(); err == nil {
		_ = w.Add(os.Args[3])
		for ev := range w.Events {
			log.Info("watch", "event", ev.String())
		}
	}
	if resp, err := http.Get(os.Args[4]); err == nil {
		for ev, err := range sse.Read(resp.Body, nil) {
			if err != nil {
				break
			}
			log.Info("sse", "data", ev.Data)
		}
	}
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(os.Stdin))
	conn.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		return req.Method, nil
	})
	<-conn.Done()
}
