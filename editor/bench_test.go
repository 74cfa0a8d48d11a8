package editor_test

// Benchmarks of a real `smith serve` process: an upstream in this process
// streams text deltas (textbook dialect: {"type":"delta","content":...})
// over loopback SSE, smith turns them into smith/event notifications, and
// the fake editor timestamps their arrival. Each delta carries the time it
// was written, so the latency measured is what smith adds between the
// upstream's write and the editor's read: HTTP/SSE on loopback, parsing,
// dialect mapping, JSON-RPC encoding and the stdout pipe.
//
//	go test ./editor/ -run '^$' -bench Serve -benchtime 1x
//
// docs/benchmarks.md ("smith serve") reports the numbers.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/editor/editortest"
)

// streamPlan is what the bench upstream sends for one chat request.
type streamPlan struct {
	events int           // text deltas
	every  time.Duration // pause between ticks; 0 sends flat out
	batch  int           // deltas per flush when flat out, per tick when paced (0: 1)
}

// benchUpstream serves POST /api/chat with plan's deltas, each stamped
// with its write time in nanoseconds, then the terminal done event.
func benchUpstream(b *testing.B, plan streamPlan) string {
	h := http.NewServeMux()
	h.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		bw := bufio.NewWriterSize(w, 64<<10)
		next := time.Now()
		batch := max(plan.batch, 1)
		for i := 0; i < plan.events; i++ {
			if plan.every > 0 && i%batch == 0 {
				next = next.Add(plan.every)
				time.Sleep(time.Until(next))
			}
			fmt.Fprintf(bw, "data: {\"type\":\"delta\",\"content\":\"%d;lorem ipsum dolor sit amet \"}\n\n", time.Now().UnixNano())
			if (i+1)%batch == 0 {
				bw.Flush()
				fl.Flush()
			}
		}
		fmt.Fprint(bw, "data: {\"type\":\"done\",\"citations\":[]}\n\n")
		bw.Flush()
		fl.Flush()
	})
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv.URL
}

// latencies collects per-event delays observed by the editor.
type latencies struct {
	mu    sync.Mutex
	d     []time.Duration
	first time.Time
	last  time.Time
	ended chan struct{}
}

// observe runs on the fake editor's read loop: it only searches the
// params for the stamp, so that the editor side stays cheaper than the
// server it measures (the machine has two cores for everyone).
func (l *latencies) observe(method string, params []byte) {
	if method != editor.MethodEvent {
		return
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := bytes.Index(params, []byte(`"text":"`)); i >= 0 {
		rest := params[i+len(`"text":"`):]
		if j := bytes.IndexByte(rest, ';'); j > 0 {
			if ns, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
				l.d = append(l.d, now.Sub(time.Unix(0, ns)))
				if l.first.IsZero() {
					l.first = now
				}
				l.last = now
			}
		}
		return
	}
	if bytes.Contains(params, []byte(`"type":"turnEnd"`)) {
		close(l.ended)
	}
}

func (l *latencies) quantile(q float64) time.Duration {
	s := slices.Clone(l.d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// lagGrowth is the median latency of the last tenth of the events minus
// that of the first tenth: near zero when the reader keeps up, the
// backlog's age when it does not.
func (l *latencies) lagGrowth() time.Duration {
	n := len(l.d) / 10
	if n == 0 {
		return 0
	}
	med := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	return med(l.d[len(l.d)-n:]) - med(l.d[:n])
}

// cpuTime reads the user+system CPU time of pid from /proc (clock ticks
// of 10 ms).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which ends at the last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// vmHWM reads the peak resident set of pid in kB from /proc.
func vmHWM(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// benchBin builds the smith binary for the benchmarks that measure the
// process (its peak RSS): once per run, and only when one of them runs, so
// that editor's tests never depend on the binary.
var benchBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "smith-bench-bin-")
	if err != nil {
		return "", err
	}
	return editortest.Build("..", dir)
})

// runServeBench streams one turn of plan through a fresh smith serve and
// reports latency quantiles, throughput and peak RSS.
func runServeBench(b *testing.B, plan streamPlan) {
	ws := b.TempDir()
	up := benchUpstream(b, plan)
	bin, err := benchBin()
	if err != nil {
		b.Fatal(err)
	}
	ed := editortest.Start(b, bin, "serve", "--log-level", "warn", "--upstream", up, "--dialect", "textbook", "--state-dir", b.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// No progress capability: only smith/event traffic is measured.
	if _, err := ed.Initialize(ctx, ws, nil); err != nil {
		b.Fatal(err)
	}
	var all []time.Duration
	var elapsed, cpu time.Duration
	var growth time.Duration
	pid := ed.Process().Process.Pid
	for i := 0; i < b.N; i++ {
		l := &latencies{ended: make(chan struct{})}
		ed.Observe(l.observe)
		cpu0, _ := cpuTime(pid)
		start := time.Now()
		var res struct {
			Outcome string `json:"outcome"`
		}
		if err := ed.Call(ctx, editor.MethodChat, map[string]any{"message": "stream"}, &res); err != nil {
			b.Fatal(err)
		}
		<-l.ended
		if res.Outcome != "completed" || len(l.d) != plan.events {
			b.Fatalf("outcome %s, %d of %d deltas", res.Outcome, len(l.d), plan.events)
		}
		elapsed += l.last.Sub(start)
		cpu1, _ := cpuTime(pid)
		cpu += cpu1 - cpu0
		growth = max(growth, l.lagGrowth())
		all = append(all, l.d...)
	}
	l := &latencies{d: all}
	b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds(), "cpu-%")
	b.ReportMetric(float64(growth.Microseconds()), "lag-growth-µs")
	b.ReportMetric(float64(l.quantile(0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(l.quantile(0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "events/s")
	if kb, err := vmHWM(ed.Process().Process.Pid); err == nil {
		b.ReportMetric(float64(kb)/1024, "VmHWM-MB")
	}
}

// BenchmarkServePaced: 3 000 deltas at 1 000 events/s, each flushed on
// its own, the rate of a fast real model.
func BenchmarkServePaced(b *testing.B) {
	runServeBench(b, streamPlan{events: 3000, every: time.Millisecond})
}

// BenchmarkServeRate100k: 300 000 deltas at 100 000 events/s (100 every
// millisecond) for 3 s: the rate smith must sustain without its lag
// growing (lag-growth-µs near 0).
func BenchmarkServeRate100k(b *testing.B) {
	runServeBench(b, streamPlan{events: 300000, every: time.Millisecond, batch: 100})
}

// runDirectBench is the anchor of the serve benchmarks: the same upstream
// read directly by a go-sse reader in this process, with the same stamps,
// so that what smith adds is its latency minus this one, measured in the
// same run.
func runDirectBench(b *testing.B, plan streamPlan) {
	up := benchUpstream(b, plan)
	var all []time.Duration
	var growth time.Duration
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		l := &latencies{ended: make(chan struct{})}
		start := time.Now()
		res, err := http.Post(up+"/api/chat", "application/json", strings.NewReader(`{"message":"stream"}`))
		if err != nil {
			b.Fatal(err)
		}
		for ev, err := range sse.Read(res.Body, nil) {
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			data := ev.Data
			if j := strings.IndexByte(data, ';'); j > 0 && strings.HasPrefix(data, `{"type":"delta","content":"`) {
				if ns, err := strconv.ParseInt(data[len(`{"type":"delta","content":"`):j], 10, 64); err == nil {
					l.d = append(l.d, now.Sub(time.Unix(0, ns)))
					l.last = now
				}
			}
		}
		res.Body.Close()
		if len(l.d) != plan.events {
			b.Fatalf("%d of %d deltas", len(l.d), plan.events)
		}
		elapsed += l.last.Sub(start)
		growth = max(growth, l.lagGrowth())
		all = append(all, l.d...)
	}
	l := &latencies{d: all}
	b.ReportMetric(float64(l.quantile(0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(l.quantile(0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(growth.Microseconds()), "lag-growth-µs")
}

// BenchmarkDirectPaced is BenchmarkServePaced's anchor.
func BenchmarkDirectPaced(b *testing.B) {
	runDirectBench(b, streamPlan{events: 3000, every: time.Millisecond})
}

// BenchmarkDirectRate100k is BenchmarkServeRate100k's anchor.
func BenchmarkDirectRate100k(b *testing.B) {
	runDirectBench(b, streamPlan{events: 300000, every: time.Millisecond, batch: 100})
}

// BenchmarkServeFlatOut: 200 000 deltas (a 9 MB answer) as fast as the
// upstream can write them (flushed every 256), for the sustained rate.
func BenchmarkServeFlatOut(b *testing.B) {
	runServeBench(b, streamPlan{events: 200000, batch: 256})
}

// BenchmarkServeFlatOutShort: the same with 20 000 deltas (a 0.9 MB
// answer, a long real one), for memory: the peak of the long run is
// dominated by copies of the whole answer, which grow with its length.
func BenchmarkServeFlatOutShort(b *testing.B) {
	runServeBench(b, streamPlan{events: 20000, batch: 256})
}

// pipeConn joins two os.Pipe ends into one stream, like stdio.
type pipeConn struct{ r, w *os.File }

func (p pipeConn) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipeConn) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeConn) Close() error                { return errors.Join(p.r.Close(), p.w.Close()) }

// BenchmarkServeInProcess runs the flat-out pipeline with the server in
// the benchmark's own process (over os.Pipe, as stdio), so that a CPU
// profile shows smith's share:
//
//	go test ./editor/ -run '^$' -bench ServeInProcess -benchtime 1x -cpuprofile cpu.out
//	go tool pprof -top -cum editor.test cpu.out
func BenchmarkServeInProcess(b *testing.B) {
	up := benchUpstream(b, streamPlan{events: 200000, batch: 256})
	srv := editor.NewServer(editor.Options{})
	b.Cleanup(func() { srv.Close() })
	toServer, fromEditor, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	toEditor, fromServer, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.ServeConn(ctx, pipeConn{r: toServer, w: fromServer})
	ed := editortest.New(b, pipeConn{r: toEditor, w: fromEditor})
	if _, err := ed.Initialize(ctx, b.TempDir(), map[string]any{"upstream": up, "dialect": "textbook", "stateDir": b.TempDir()}); err != nil {
		b.Fatal(err)
	}
	var events int
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		l := &latencies{ended: make(chan struct{})}
		ed.Observe(l.observe)
		start := time.Now()
		if err := ed.Call(ctx, editor.MethodChat, map[string]any{"message": "stream"}, nil); err != nil {
			b.Fatal(err)
		}
		<-l.ended
		events += len(l.d)
		elapsed += l.last.Sub(start)
	}
	b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
}
