package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/smith-dev/smith/protocol"
)

// BenchmarkReplayJSON is `smith replay --json` in process on the stream of
// bench/replay.sh (its generator's 100k events), output discarded: the
// replay's own CPU without process start-up and without the kernel's
// writes. bench/replay.sh measures the whole process.
func BenchmarkReplayJSON(b *testing.B) {
	stream := filepath.Join(b.TempDir(), "v2.sse")
	gen := exec.Command("go", "run", "../../bench/replay/gen", "-n", "100000")
	f, err := os.Create(stream)
	if err != nil {
		b.Fatal(err)
	}
	gen.Stdout = f
	if err := gen.Run(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	in, err := os.ReadFile(stream)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	o := &replayOptions{json: true}
	s := &IOStreams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard, Getenv: func(string) string { return "" }}
	// As runReplay reads: one P, replay's own collections.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(200))
	for b.Loop() {
		if err := replayBody(context.Background(), s, o, protocol.DialectAuto, nil, nil, &collectingReader{r: bytes.NewReader(in)}); err != nil {
			b.Fatal(err)
		}
	}
}
